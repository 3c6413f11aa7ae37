import Foundation
import PeerTestSupport
import PresenceGateway
import Testing

/// What runs is identifiable, as `kamailio -v` and a build-info series make it for Kamailio's
/// operators: `presence-gateway --version` names the version, the Swift it was built with and the
/// version of every package built in, and a running gateway exports
/// `gateway_build_info{version,swift} 1` and `gateway_dependency_info{name,version} 1`.
@Suite struct BuildInfoProcessTests {
    /// The checkout's Package.resolved (SwiftPM wrote it before building the binary under test):
    /// each pin's identity and version.
    static func resolvedPins() throws -> [String: String] {
        let path = PeerAssets.root.deletingLastPathComponent().appendingPathComponent("Package.resolved").path
        let data = try #require(FileManager.default.contents(atPath: path), "no \(path)")
        let root = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let pins = try #require(root["pins"] as? [[String: Any]])
        var versions: [String: String] = [:]
        for pin in pins {
            let name = try #require(pin["identity"] as? String)
            let state = try #require(pin["state"] as? [String: Any])
            versions[name] = try #require(state["version"] as? String, "\(name) is not pinned to a version")
        }
        return versions
    }

    /// Without /proc (a bare chroot) the command line cannot be read: the binary says so and
    /// exits 1 rather than start the embedded demo in place of what was asked.
    @Test(.enabled(if: getuid() == 0, "unshare -m needs root")) func withoutProcItStopsWithAClearError() async throws {
        let binary = try #require(GatewayBinary.path)
        let (status, output) = try await runProgram(
            "/usr/bin/unshare", ["-m", "/bin/sh", "-c", #"umount -l /proc && exec "$0" --version"#, binary], timeout: 10)
        #expect(status == 1, "\(output)")
        #expect(output.contains("/proc is not mounted"), "\(output)")
        #expect(!output.contains("listening"), "\(output)")
    }

    @Test func versionNamesTheBuildAndEveryResolvedPackage() async throws {
        let binary = try #require(GatewayBinary.path)
        let (status, output) = try await runProgram(binary, ["--version"], timeout: 10)
        #expect(status == 0)
        let lines = output.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(lines.first == "presence-gateway \(GatewayVersion.version) (Swift \(GatewayVersion.swift))")
        #expect(GatewayVersion.version.split(separator: ".").count == 3)
        let pins = try Self.resolvedPins()
        // Package.swift pins swift-nio exactly; Package.resolved must agree, and so must the binary.
        #expect(pins["swift-nio"] == "2.101.3")
        let printed = lines.dropFirst().map { "\($0)" }
        #expect(printed == pins.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }, "\(output)")
        #expect(GatewayVersion.dependencies.count == pins.count)
    }

    @Test func buildAndDependencyVersionsAreExported() async throws {
        let binary = try #require(GatewayBinary.path)
        let directory = NSTemporaryDirectory() + "build-info-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ports = (oma: try LoopbackPorts.free(), enterprise: try LoopbackPorts.free(), admin: try LoopbackPorts.free())
        let configuration = directory + "/gateway.yaml"
        try DurableStateProcessTests.Gateway.yaml(
            listen: ports, enterprise: ("edge", try LoopbackPorts.free()), oma: ("oma", try LoopbackPorts.free()),
            state: "{ store: memory }"
        ).write(toFile: configuration, atomically: true, encoding: .utf8)
        let gateway = DurableStateProcessTests.Gateway(
            binary: binary, configuration: configuration, directory: directory, admin: ports.admin)
        let process = try await gateway.start()
        defer { process.kill() }
        let metrics = try await gateway.get("/metrics").split(separator: "\n")
        let line = metrics.first { $0.hasPrefix("gateway_build_info{") }
        #expect(line?.contains("version=\"\(GatewayVersion.version)\"") == true, "\(line ?? "no gateway_build_info")")
        #expect(line?.contains("swift=\"\(GatewayVersion.swift)\"") == true)
        #expect(line?.split(separator: " ").last.flatMap { Double($0) } == 1, "\(line ?? "")")
        let dependencies = metrics.filter { $0.hasPrefix("gateway_dependency_info{") }
        let pins = try Self.resolvedPins()
        #expect(dependencies.count == pins.count, "\(dependencies)")
        for (name, version) in pins {
            let series = dependencies.first { $0.contains("name=\"\(name)\"") }
            #expect(series?.contains("version=\"\(version)\"") == true, "\(name): \(series ?? "no series")")
            #expect(series?.split(separator: " ").last.flatMap { Double($0) } == 1)
        }
    }
}
