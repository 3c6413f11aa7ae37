import Foundation
import PresenceGateway
import Prometheus
import Testing

/// deploy/presence-gateway.service and deploy/gateway.yaml: the unit passes
/// `systemd-analyze verify`, keeps its hardening, and the sample configuration is one the
/// gateway accepts, with its TLS files where the unit puts them.
@Suite struct DeploymentTests {
    static let deploy = GatewayProcess.packageRoot.appendingPathComponent("deploy")
    static let installedBinary = "/usr/local/bin/presence-gateway"
    static let credentials = "/run/credentials/presence-gateway.service/"

    static func unitText() throws -> String {
        try String(contentsOf: deploy.appendingPathComponent("presence-gateway.service"), encoding: .utf8)
    }

    static func sampleText() throws -> String {
        try String(contentsOf: deploy.appendingPathComponent("gateway.yaml"), encoding: .utf8)
    }

    /// The unit's `Key=value` lines (comments and section headers left out).
    static func settings(_ unit: String) -> [(key: String, value: String)] {
        unit.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#"), !line.hasPrefix("["), let equals = line.firstIndex(of: "=") else { return nil }
            return (String(line[..<equals]), String(line[line.index(after: equals)...]))
        }
    }

    // MARK: systemd-analyze verify

    /// Lines `systemd-analyze verify` may print about a unit that is fine. Empty: systemd 252
    /// (Debian 12) prints nothing for it. Add a line only with the reason it is harmless.
    static let harmlessVerifyOutput: [String] = []

    struct Verification {
        var status: Int32
        /// What it printed, apart from ``harmlessVerifyOutput``.
        var complaints: [String]
    }

    /// Runs `systemd-analyze verify` on `unit`, written to a temporary directory as
    /// presence-gateway.service with ExecStart pointing at the built binary (verify refuses a
    /// unit whose program does not exist). `--recursive-errors=no`: only this unit is judged, not
    /// the machine's units it is ordered after.
    static func verify(_ unit: String) async throws -> Verification {
        let analyze = try #require(["/usr/bin/systemd-analyze", "/bin/systemd-analyze"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }, "systemd-analyze is missing: scripts/setup.sh installs the systemd package")
        let binary = try #require(GatewayProcess.binary, "presence-gateway was not built next to the tests")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("presence-gateway.service").path
        try unit.replacingOccurrences(of: "ExecStart=\(installedBinary) ", with: "ExecStart=\(binary.path) ")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let run = try await GatewayProcess.run(["verify", "--recursive-errors=no", "--man=no", path],
                                                executable: URL(fileURLWithPath: analyze))
        let printed = (run.stdout + run.stderr).split(separator: "\n").map(String.init)
        return Verification(status: run.status, complaints: printed.filter { !harmlessVerifyOutput.contains($0) })
    }

    @Test func systemdAnalyzeVerifiesTheUnitWithoutComplaint() async throws {
        let unit = try Self.unitText()
        try #require(unit.contains("ExecStart=\(Self.installedBinary) "), "the built binary could not be put in the unit")
        let result = try await Self.verify(unit)
        #expect(result.status == 0)
        #expect(result.complaints == [])
    }

    /// The check above would catch these: each is a mistake verify reports only as a warning
    /// (exit status 0) or only as an error.
    @Test(arguments: [
        ("ProtectSystem=strict", "ProtectSystem=strikt"),
        ("NoNewPrivileges=yes", "NoNewPrivilege=yes"),
        ("SystemCallFilter=@system-service", "SystemCallFilter=@system-servise"),
        ("RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIXX"),
        ("StateDirectory=presence-gateway", "StateDirectory=/var/lib/presence-gateway"),
        ("ExecStart=\(installedBinary) ", "ExecStart=\(installedBinary)-missing "),
    ])
    func aBrokenUnitFailsTheVerification(_ good: String, _ bad: String) async throws {
        let unit = try Self.unitText()
        try #require(unit.contains(good))
        let result = try await Self.verify(unit.replacingOccurrences(of: good, with: bad))
        #expect(result.status != 0 || !result.complaints.isEmpty)
    }

    @Test func theUnitRunsTheConfiguredGatewayHardenedAsTheREADMESays() throws {
        let settings = Self.settings(try Self.unitText())
        func values(_ key: String) -> [String] { settings.filter { $0.key == key }.map(\.value) }
        #expect(values("ExecStart") == ["\(Self.installedBinary) --config /etc/presence-gateway/gateway.yaml --log-format json"])
        // `systemctl reload` is SIGHUP, which reloads the configuration (LogFormatProcessTests
        // and AdminAPIProcessTests run the binary and send it).
        #expect(values("ExecReload") == ["/bin/kill -HUP $MAINPID"])
        let required: [(String, String)] = [
            ("DynamicUser", "yes"), ("StateDirectory", "presence-gateway"), ("WorkingDirectory", "/var/lib/presence-gateway"),
            ("Restart", "on-failure"), ("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("ProtectHome", "yes"),
            ("PrivateTmp", "yes"), ("PrivateDevices", "yes"), ("ProtectKernelTunables", "yes"), ("ProtectKernelModules", "yes"),
            ("ProtectControlGroups", "yes"), ("RestrictAddressFamilies", "AF_INET AF_INET6 AF_UNIX"),
            ("CapabilityBoundingSet", "CAP_NET_BIND_SERVICE"), ("AmbientCapabilities", "CAP_NET_BIND_SERVICE"),
            ("LockPersonality", "yes"), ("MemoryDenyWriteExecute", "yes"), ("SystemCallFilter", "@system-service"),
        ]
        for (key, value) in required {
            #expect(values(key).contains(value), "\(key)=\(value) missing")
        }
    }

    // MARK: deploy/gateway.yaml

    @Test func theSampleConfigurationIsAnEdgeWithTLSTowardTheEnterprise() throws {
        let config = try GatewayConfiguration(yaml: try Self.sampleText())
        let enterprise = config.listeners.filter { $0.side == .enterprise }
        let oma = config.listeners.filter { $0.side == .oma }
        #expect(enterprise.map(\.transport) == [.tls])
        #expect(enterprise.map(\.port) == [5061])
        #expect(Set(oma.map(\.transport)) == [.udp, .tcp])
        #expect(oma.allSatisfy { $0.port == 5060 })
        let tls = try #require(config.tls)
        #expect(tls.requireClientCertificate)
        // The enterprise next hop is an IP address over TLS: a peer there must say which
        // certificate names to expect (RFC 5922 §4).
        guard case .uri(let hop) = config.enterprise.nextHop else {
            Issue.record("the enterprise next hop is not a fixed URI")
            return
        }
        let edge = try #require(config.peers.first { $0.host == hop.host })
        #expect(edge.side == .enterprise && !edge.certificateNames.isEmpty)
        #expect(config.admin?.host == "127.0.0.1")
        #expect(config.logFormat == .json)
    }

    /// The TLS files the sample names, each with the unit's LoadCredential= name.
    static func credentialFiles(_ config: GatewayConfiguration) throws -> [String] {
        let tls = try #require(config.tls)
        let paths = [tls.certificateChain, tls.privateKey] + (tls.trustRoots.map { [$0] } ?? [])
        #expect(paths.count == 3)
        return paths
    }

    @Test func everyTLSFileOfTheSampleIsACredentialOfTheUnit() throws {
        let config = try GatewayConfiguration(yaml: try Self.sampleText())
        let loaded = Self.settings(try Self.unitText()).filter { $0.key == "LoadCredential" }.map { $0.value.split(separator: ":").first.map(String.init) ?? "" }
        for path in try Self.credentialFiles(config) {
            #expect(path.hasPrefix(Self.credentials), "\(path)")
            #expect(loaded.contains(String(path.dropFirst(Self.credentials.count))), "\(path) is not a LoadCredential= of the unit")
        }
    }

    /// The sample with its credentials directory replaced by `directory`.
    static func sample(credentialsIn directory: URL) throws -> GatewayConfiguration {
        let text = try sampleText().replacingOccurrences(of: credentials, with: directory.path + "/")
        return try GatewayConfiguration(yaml: text)
    }

    @Test func theGatewayLoadsTheSampleWithItsTLSFilesAndNamesAMissingOne() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-credentials-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = try Self.sample(credentialsIn: directory)
        let missing = #expect(throws: ConfigurationError.self) {
            try GatewayServer(configuration: config, registry: PrometheusCollectorRegistry())
        }
        #expect(missing?.message.contains(directory.path) == true, "\(missing?.description ?? "")")
        let files = try Self.credentialFiles(config)
        try Self.certificate.write(toFile: files[0], atomically: true, encoding: .utf8)
        try Self.privateKey.write(toFile: files[1], atomically: true, encoding: .utf8)
        try Self.certificate.write(toFile: files[2], atomically: true, encoding: .utf8)
        // Reads the PEM files and sets up both sides' transports; binds nothing.
        _ = try GatewayServer(configuration: config, registry: PrometheusCollectorRegistry())
    }

    @Test func theBinaryChecksTheSampleAsIs() async throws {
        let run = try await GatewayProcess.run(["--check", "--config", "deploy/gateway.yaml"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix("deploy/gateway.yaml: OK — 3 listeners"), "\(run.stdout)")
    }

    /// A self-signed P-256 certificate for presence-gw.contoso.com and its key, valid for 100
    /// years, made once with:
    /// `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout gw.key
    /// -out gw.pem -days 36500 -subj "/CN=presence-gw.contoso.com"
    /// -addext "subjectAltName=DNS:presence-gw.contoso.com"`
    static let certificate = """
        -----BEGIN CERTIFICATE-----
        MIIBwDCCAWWgAwIBAgIUd0IScf3C84pUFnXLqfZrtz3FMjowCgYIKoZIzj0EAwIw
        IjEgMB4GA1UEAwwXcHJlc2VuY2UtZ3cuY29udG9zby5jb20wIBcNMjYxMTI1MDAx
        MjA0WhgPMjEyNjExMDEwMDEyMDRaMCIxIDAeBgNVBAMMF3ByZXNlbmNlLWd3LmNv
        bnRvc28uY29tMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEO2y/R7tUh+HWmQ6s
        anbt3sgtOBR8+YicNFQozvSdQlXvTW1kleQe1iEB82I0F71kKIf6Nzc3c3fJOgDg
        IOZ2GqN3MHUwHQYDVR0OBBYEFNaeKO6/YNq5eanyC2MeK8A1TB0OMB8GA1UdIwQY
        MBaAFNaeKO6/YNq5eanyC2MeK8A1TB0OMA8GA1UdEwEB/wQFMAMBAf8wIgYDVR0R
        BBswGYIXcHJlc2VuY2UtZ3cuY29udG9zby5jb20wCgYIKoZIzj0EAwIDSQAwRgIh
        AJ/NO/1ta3Vnd57yMhkXt6vr7KwjI96lj7l6Yb2ySOl3AiEA/3vfqpda2l2L9DS/
        0nhnkd/496C9/5ASS/FTT9/DGzQ=
        -----END CERTIFICATE-----

        """

    static let privateKey = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgKhciStc1j9Pb2UyS
        ojTB68+Di7t30bpVN14serZT6mehRANCAAQ7bL9Hu1SH4daZDqxqdu3eyC04FHz5
        iJw0VCjO9J1CVe9NbWSV5B7WIQHzYjQXvWQoh/o3Nzdzd8k6AOAg5nYa
        -----END PRIVATE KEY-----

        """
}
