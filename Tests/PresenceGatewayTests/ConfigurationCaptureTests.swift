import PresenceGateway
import Testing

/// `capture: { hep: "udp:HOST:PORT", id: N, queue: N }`: HEP v3 capture, off unless configured;
/// every mistake is reported at its line and column.
@Suite struct ConfigurationCaptureTests {
    @Test func withoutTheSectionNothingIsCaptured() throws {
        #expect(try GatewayConfiguration(yaml: ConfigurationTests.valid).capture == nil)
        #expect(try GatewayConfiguration(yaml: GatewayConfiguration.defaultYAML).capture == nil)
    }

    @Test func theSectionIsRead() throws {
        let config = try GatewayConfiguration(yaml: ConfigurationTests.valid + """
            capture:
              hep: "udp:127.0.0.1:9060"
              id: 2001
            """)
        #expect(config.capture == GatewayConfiguration.Capture(host: "127.0.0.1", port: 9060, captureID: 2001))
        #expect(config.capture?.queueCapacity == 10_000)
        let v6 = try GatewayConfiguration(yaml: ConfigurationTests.valid + #"capture: { hep: "udp:[::1]:9061", id: 0, queue: 50 }"#)
        #expect(v6.capture == GatewayConfiguration.Capture(host: "::1", port: 9061, captureID: 0, queueCapacity: 50))
        #expect(v6.capture?.hepConfiguration.queueCapacity == 50)
    }

    /// The column is the offending value's (or key's) first character, 1-based.
    @Test(arguments: [
        (#"capture: { hep: "tcp:127.0.0.1:9060", id: 1 }"#, 6, 17, "UDP only"),
        (#"capture: { hep: "udp:homer.example:9060", id: 1 }"#, 6, 17, "IP address"),
        (#"capture: { hep: "udp:::1:9060", id: 1 }"#, 6, 17, "IPv6 in brackets"),
        (#"capture: { hep: "udp:127.0.0.1:0", id: 1 }"#, 6, 17, "not a port"),
        (#"capture: { hep: "udp:127.0.0.1", id: 1 }"#, 6, 17, "udp:HOST:PORT"),
        (#"capture: { hep: "udp:127.0.0.1:9060", id: -1 }"#, 6, 43, "whole number from 0 to 4294967295"),
        (#"capture: { hep: "udp:127.0.0.1:9060", id: 1, queue: 0 }"#, 6, 53, "whole number from 1 to 1000000"),
        (#"capture: { hep: "udp:127.0.0.1:9060" }"#, 6, 10, "needs hep"),
        (#"capture: { hep: "udp:127.0.0.1:9060", id: 1, password: x }"#, 6, 46, "unknown key 'password'"),
        ("capture: udp:127.0.0.1:9060", 6, 10, "expected a mapping"),
    ])
    func aMalformedSectionNamesLineAndColumn(_ line: String, _ row: Int, _ column: Int, _ words: String) {
        let error = #expect(throws: ConfigurationError.self) { try GatewayConfiguration(yaml: ConfigurationTests.valid + line + "\n") }
        #expect(error?.line == row, "\(error?.description ?? "")")
        #expect(error?.column == column, "\(error?.description ?? "")")
        #expect(error?.message.contains(words) == true, "\(error?.description ?? "")")
        #expect(error?.message.contains("capture") == true, "\(error?.description ?? "")")
    }
}
