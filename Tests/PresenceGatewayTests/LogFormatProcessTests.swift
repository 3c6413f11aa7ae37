import Foundation
import Testing

/// `presence-gateway --log-format` and `log-format:` in the running binary: what reaches
/// standard error while it starts and stops.
@Suite(.serialized) struct LogFormatProcessTests {
    /// Loopback on ports the system picks, so the test runs beside anything else.
    static func configuration(logFormat: String?) -> String {
        """
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }
          - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 0 }
        enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:5062;transport=tcp" }
        oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:5070;transport=udp" }

        """ + (logFormat.map { "log-format: \($0)\n" } ?? "") + "state: { store: memory }\n"
    }

    static func withConfiguration<T>(_ text: String, _ body: (String) async throws -> T) async throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pg-\(UUID().uuidString).yaml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await body(path)
    }

    /// The gateway's standard error, from start until it stopped on SIGTERM.
    static func runGateway(logFormat: String?, flag: String?) async throws -> GatewayProcess.Result {
        try await withConfiguration(configuration(logFormat: logFormat)) { path in
            try await GatewayProcess.runUntil("listening (oma)", ["--config", path] + (flag.map { ["--log-format", $0] } ?? []))
        }
    }

    /// Every line must be one JSON object with the fixed fields.
    static func jsonLines(_ stderr: String) throws -> [[String: Any]] {
        try stderr.split(separator: "\n").map { line in
            let value = try JSONSerialization.jsonObject(with: Data(line.utf8))
            let object = try #require(value as? [String: Any], "not a JSON object: \(line)")
            for key in ["level", "time", "label", "message"] {
                #expect(object[key] is String, "\(key) missing in \(line)")
            }
            let time = object["time"] as? String ?? ""
            #expect(time.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "time \(time)")
            return object
        }
    }

    @Test(arguments: [("json", nil), ("text", "json"), (nil, "json")] as [(String?, String?)])
    func jsonLinesWhenTheFileOrTheFlagAsksForThem(_ configured: String?, _ flag: String?) async throws {
        let run = try await Self.runGateway(logFormat: configured, flag: flag)
        #expect(run.status == 0, "\(run.stderr)")
        let lines = try Self.jsonLines(run.stderr)
        // The gateway's own lines and the transport's, which carry metadata.
        #expect(lines.contains { $0["label"] as? String == "presence-gateway" && ($0["message"] as? String)?.hasPrefix("listening (oma)") == true })
        let bound = lines.filter { $0["message"] as? String == "SIP listener bound" }
        #expect(bound.count == 2, "\(run.stderr)")
        #expect(bound.contains { $0["label"] as? String == "sip.transport.oma" && $0["transport"] as? String == "UDP"
            && ($0["address"] as? String)?.hasPrefix("127.0.0.1:") == true })
        #expect(lines.last?["message"] as? String == "stopped", "\(run.stderr)")
    }

    @Test(arguments: [("json", "text"), (nil, nil), ("text", nil)] as [(String?, String?)])
    func textLinesWhenTheFlagOrTheFileAsksForThemOrNothingDoes(_ configured: String?, _ flag: String?) async throws {
        let run = try await Self.runGateway(logFormat: configured, flag: flag)
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.contains { $0.contains("info presence-gateway:") && $0.contains("listening (oma)") }, "\(run.stderr)")
        #expect(!lines.contains { $0.hasPrefix("{") }, "\(run.stderr)")
    }

    @Test func anUnknownFlagValueIsAUsageError() async throws {
        let run = try await GatewayProcess.run(["--log-format", "xml", "--check"])
        // ArgumentParser's EX_USAGE, as for every other bad option of presence-gateway (its help
        // text says 2; presence-map maps usage errors to 2, presence-gateway does not yet).
        #expect(run.status == 64)
        #expect(run.stderr.contains("xml"), "\(run.stderr)")
    }

    @Test func anUnknownFileValueStopsTheStartWithItsLine() async throws {
        try await Self.withConfiguration(Self.configuration(logFormat: "yaml")) { path in
            let run = try await GatewayProcess.run(["--config", path, "--log-format", "json"])
            #expect(run.status == 1)
            #expect(run.stderr.hasPrefix("\(path):6:13: error: log-format: 'yaml' is not one of: json, text"), "\(run.stderr)")
        }
    }
}
