import Foundation
import PeerTestSupport
import PresenceGateway
import SIPMessages
import Testing

/// The Debian package `scripts/release.sh` builds (README, "Installing the Debian package"),
/// installed with `dpkg -i` on this machine and purged at the end: its files are where the unit
/// and the documentation say, the binary needs no Swift toolchain, and started as the unit's
/// ExecStart starts it (its Environment= drop-in, its configuration, a private working
/// directory) it answers a SIP OPTIONS over UDP with 200. systemd is not running here: the
/// maintainer scripts must then leave the service alone.
///
/// A release build takes about 15 minutes, so this runs only on a built package: `GATEWAY_DEB`
/// names one, else the newest `.build/deb/presence-gateway_*.deb` of the checkout is taken.
@Suite(.serialized) struct DebianPackageTests {
    static let root = PeerAssets.root.deletingLastPathComponent()

    /// The package under test, or nil when there is none.
    static let package: String? = {
        if let named = ProcessInfo.processInfo.environment["GATEWAY_DEB"], !named.isEmpty { return named }
        let directory = root.appendingPathComponent(".build/deb")
        let built = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        let debs = built.filter { $0.hasPrefix("presence-gateway_") && $0.hasSuffix(".deb") }.map {
            directory.appendingPathComponent($0).path
        }
        func modified(_ path: String) -> Date {
            (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? .distantPast
        }
        return debs.max { modified($0) < modified($1) }
    }()

    static let installedConfiguration = "/etc/presence-gateway/gateway.yaml"
    static let unit = "/usr/lib/systemd/system/presence-gateway.service"
    static let dropIn = "/usr/lib/systemd/system/presence-gateway.service.d/jemalloc.conf"

    static func dpkg(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await runProgram("/usr/bin/dpkg", arguments, timeout: 120)
    }

    @Test(
        .enabled(
            if: package != nil,
            "no Debian package: `bash scripts/release.sh` builds one into .build/deb (a release build, ~15 min), or set GATEWAY_DEB=path"
        ))
    func theInstalledPackageStartsAsItsUnitSaysAndAnswersOptions() async throws {
        let deb = try #require(Self.package)
        try #require(getuid() == 0, "dpkg -i needs root")
        try #require(FileManager.default.fileExists(atPath: deb), "\(deb) does not exist")
        if try await Self.dpkg(["-s", "presence-gateway"]).output.contains("Status: install ok installed") {
            // Left by an interrupted run of this test: the machine is a test machine.
            _ = try await Self.dpkg(["--purge", "presence-gateway"])
        }
        let install = try await Self.dpkg(["-i", deb])
        try await withCleanup {
            try #require(install.status == 0, "\(install.output)")
            try await Self.checkInstalledFiles()
            try await Self.checkRuns()
        } cleanup: {
            let purge = try? await Self.dpkg(["--purge", "presence-gateway"])
            #expect(purge?.status == 0, "\(purge?.output ?? "")")
            #expect(!FileManager.default.fileExists(atPath: "/usr/bin/presence-gateway"))
            #expect(!FileManager.default.fileExists(atPath: Self.installedConfiguration))
        }
    }

    /// The package's files, its conffile, its dependencies and the binary's libraries.
    static func checkInstalledFiles() async throws {
        let files = FileManager.default
        #expect(files.isExecutableFile(atPath: "/usr/bin/presence-gateway"))
        for doc in ["README.md", "NOTICE", "copyright", "docs/performance.md", "docs/security.md", "examples/gateway-edge.yaml"] {
            #expect(files.fileExists(atPath: "/usr/share/doc/presence-gateway/" + doc), "\(doc) is not installed")
        }
        let conffiles = try await runProgram("/usr/bin/dpkg-query", ["-W", "-f=${Conffiles}", "presence-gateway"])
        #expect(conffiles.output.contains(installedConfiguration), "\(conffiles.output)")
        let depends = try await runProgram("/usr/bin/dpkg-query", ["-W", "-f=${Depends}", "presence-gateway"])
        for library in ["libc6", "libxml2", "libjemalloc2"] {
            #expect(depends.output.contains(library), "Depends: \(depends.output)")
        }
        let ldd = try await runProgram("/usr/bin/ldd", ["/usr/bin/presence-gateway"])
        #expect(ldd.status == 0 && !ldd.output.contains("/opt/swift") && !ldd.output.contains("not found"), "\(ldd.output)")
        // Installed, the unit passes systemd-analyze verify (drop-in and binary in place).
        if let analyze = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first(where: { files.isExecutableFile(atPath: $0) }) {
            let verify = try await runProgram(analyze, ["verify", "--recursive-errors=no", "--man=no", unit])
            #expect(verify.status == 0 && verify.output.isEmpty, "\(verify.output)")
        }
    }

    /// `--version`, then the binary started as ExecStart says, with the drop-in's environment.
    static func checkRuns() async throws {
        let version = try await runProgram("/usr/bin/presence-gateway", ["--version"], timeout: 10)
        let lines = version.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "presence-gateway \(GatewayVersion.version) (Swift \(GatewayVersion.swift))", "\(version.output)")
        let pins = try BuildInfoProcessTests.resolvedPins()
        #expect(Array(lines.dropFirst()) == pins.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" })

        let unitText = try String(contentsOfFile: unit, encoding: .utf8)
        let execStart = try #require(unitText.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        let command = execStart.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
        #expect(command == ["/usr/bin/presence-gateway", "--config", installedConfiguration, "--log-format", "json"])
        var environment: [String: String] = [:]
        for line in try String(contentsOfFile: dropIn, encoding: .utf8).split(separator: "\n") where line.hasPrefix("Environment=") {
            let assignment = line.dropFirst("Environment=".count).split(separator: "=", maxSplits: 1).map(String.init)
            environment[assignment[0]] = assignment.count > 1 ? assignment[1] : ""
        }
        let preload = try #require(environment["LD_PRELOAD"])
        #expect(FileManager.default.fileExists(atPath: preload), "the drop-in preloads \(preload), which libjemalloc2 did not install")

        // The unit's StateDirectory= as working directory; the installed configuration as it is,
        // or, when something on this machine holds its ports, a copy with free ones.
        let directory = NSTemporaryDirectory() + "deb-state-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var arguments = Array(command.dropFirst())
        var (sip, admin): (UInt16, UInt16) = (5060, 9460)
        if [5060, 5061, 9460].contains(where: { LoopbackPorts.isBound($0, udp: false) }) || LoopbackPorts.isBound(5060, udp: true) {
            (sip, admin) = (try LoopbackPorts.free(), try LoopbackPorts.free())
            let enterprise = try LoopbackPorts.free()
            let text = try String(contentsOfFile: installedConfiguration, encoding: .utf8)
                .replacingOccurrences(of: "port: 5060 }", with: "port: \(sip) }")
                .replacingOccurrences(of: "port: 5061 }", with: "port: \(enterprise) }")
                .replacingOccurrences(of: "port: 9460 }", with: "port: \(admin) }")
            try text.write(toFile: directory + "/gateway.yaml", atomically: true, encoding: .utf8)
            arguments[1] = directory + "/gateway.yaml"
        }
        let gateway = try ChildProcess(command[0], arguments, environment: environment, workingDirectory: directory)
        defer { gateway.kill() }
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, gateway.poll() == nil, !gateway.output.contains("admin endpoint on") {
            try await Task.sleep(for: .milliseconds(100))
        }
        try #require(gateway.output.contains("admin endpoint on"), "\(gateway.output.suffix(3000))")
        // /proc files report size 0: read to the end rather than by the size.
        let mapsData = FileHandle(forReadingAtPath: "/proc/\(gateway.pid)/maps")?.readDataToEndOfFile() ?? Data()
        let maps = String(decoding: mapsData, as: UTF8.self)
        #expect(maps.contains("libjemalloc.so.2"), "the drop-in's LD_PRELOAD did not take")
        let socket = try RawSIPSocket.udp()
        defer { socket.close() }
        let options = "OPTIONS sip:127.0.0.1:\(sip) SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:\(socket.port);branch=z9hG4bKdeb1\r\n"
            + "Max-Forwards: 70\r\nFrom: <sip:probe@oma.example>;tag=deb1\r\nTo: <sip:127.0.0.1:\(sip)>\r\n"
            + "Call-ID: deb-options-1\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
        #expect(socket.send(Array(options.utf8), to: sip) > 0)
        let answer = await socket.receive(within: 5) { $0.response != nil }
        #expect(answer?.response?.statusCode == 200, "\(answer.map { "\($0)" } ?? "no answer")\n\(gateway.output.suffix(2000))")
        gateway.send(SIGTERM)
        #expect(await gateway.wait(timeout: 20) == 0, "\(gateway.output.suffix(2000))")
        #expect(FileManager.default.fileExists(atPath: directory + "/presence-gateway.db"), "the store is not in the state directory")
    }
}
