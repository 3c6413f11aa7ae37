import PresenceGateway
import Testing

/// `log-format: json|text` at the top of the configuration; `--log-format` wins over it.
@Suite struct ConfigurationLogFormatTests {
    @Test func withoutTheKeyTheFileSetsNoFormat() throws {
        #expect(try GatewayConfiguration(yaml: ConfigurationTests.valid).logFormat == nil)
        #expect(try GatewayConfiguration(yaml: GatewayConfiguration.defaultYAML).logFormat == nil)
    }

    @Test(arguments: [("json", GatewayConfiguration.LogFormat.json), ("text", .text)])
    func theKeyIsRead(_ value: String, _ expected: GatewayConfiguration.LogFormat) throws {
        let config = try GatewayConfiguration(yaml: ConfigurationTests.valid + "log-format: \(value)\n")
        #expect(config.logFormat == expected)
    }

    @Test(arguments: [("log-format: xml\n", "'xml' is not one of: json, text"), ("log-format: [json]\n", "expected a text value"),
                      ("log-format: JSON\n", "'JSON' is not one of")])
    func anUnknownFormatNamesItsLine(_ line: String, _ words: String) {
        let error = #expect(throws: ConfigurationError.self) { try GatewayConfiguration(yaml: ConfigurationTests.valid + line) }
        #expect(error?.line == 6, "\(error?.description ?? "")")
        #expect(error?.message.contains(words) == true, "\(error?.description ?? "")")
        #expect(error?.message.contains("log-format") == true, "\(error?.description ?? "")")
    }

    @Test func theCommandLineWinsThenTheFileThenText() {
        typealias Format = GatewayConfiguration.LogFormat
        #expect(Format.effective(flag: nil, configured: nil) == .text)
        #expect(Format.effective(flag: nil, configured: .json) == .json)
        #expect(Format.effective(flag: .text, configured: .json) == .text)
        #expect(Format.effective(flag: .json, configured: .text) == .json)
        #expect(Format.effective(flag: .json, configured: nil) == .json)
    }
}
