import Foundation
@testable import PresenceGateway
import Testing

/// `xcap-auth:` (GatewayConfiguration+XCAPAuth.swift): how the XCAP client makes itself known at
/// each XCAP root, an Aggregation Proxy (PacketCable Presence §6.2.18, §6.7), and every mistake
/// at its line and column without the password in the message.
@Suite struct ConfigurationXCAPAuthTests {
    static let roots = ConfigurationTests.valid.replacingOccurrences(
        of: #"oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:5070" }"#,
        with: #"oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:5070", rls: { oma.example: "https://ap.oma.example/rls-root" } }"#)
        + #"xcap: { root: "https://ap.oma.example/xcap-root" }"# + "\n"

    static func withSecrets(_ body: (String) throws -> Void) throws {
        let directory = NSTemporaryDirectory() + "xcap-secrets-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "Circle of Life\n".write(toFile: directory + "/ap-password", atomically: true, encoding: .utf8)
        try "\n".write(toFile: directory + "/empty", atomically: true, encoding: .utf8)
        try body(directory)
    }

    @Test func digestAndAssertedIdentityPerRoot() throws {
        try Self.withSecrets { directory in
            let config = try GatewayConfiguration(yaml: Self.roots + """
                xcap-auth:
                  "https://ap.oma.example/xcap-root/": { username: "gw@contoso.com", password-file: \(directory)/ap-password }
                  "https://ap.oma.example/rls-root": { asserted-identity: "sip:gw@contoso.com", header: X-3GPP-Asserted-Identity }
                """)
            #expect(config.xcapRoots == ["https://ap.oma.example/xcap-root", "https://ap.oma.example/rls-root"])
            #expect(config.xcapAuth["https://ap.oma.example/xcap-root"]
                == .digest(.init(username: "gw@contoso.com", password: "Circle of Life")))
            #expect(config.xcapAuth["https://ap.oma.example/rls-root"]
                == .assertedIdentity(header: "X-3GPP-Asserted-Identity", identity: "sip:gw@contoso.com"))
            let credentials = GatewayConfiguration.XCAPCredentials(username: "gw", password: "Circle of Life")
            #expect(!"\(credentials)".contains("Circle") && !String(reflecting: credentials).contains("Circle"))
        }
    }

    /// A relative password-file is read in systemd's credentials directory (LoadCredential=).
    @Test func aRelativePasswordFileIsInTheCredentialsDirectory() throws {
        try Self.withSecrets { directory in
            let node = try ConfigurationNode.parse(#"{ "https://ap.oma.example/xcap-root": { username: gw, password-file: ap-password } }"#)
            let auth = try GatewayConfiguration.xcapAuth(
                node, roots: ["https://ap.oma.example/xcap-root"], environment: ["CREDENTIALS_DIRECTORY": directory])
            #expect(auth["https://ap.oma.example/xcap-root"] == .digest(.init(username: "gw", password: "Circle of Life")))
        }
    }

    @Test func mistakesAreNamedWhereTheyStand() throws {
        try Self.withSecrets { directory in
            for (entry, message) in [
                (#""https://other.example/xcap-root": { username: gw, password-file: \#(directory)/ap-password }"#, "no XCAP root"),
                (#""https://ap.oma.example/xcap-root": { username: gw, password-file: \#(directory)/missing }"#, "cannot read"),
                (#""https://ap.oma.example/xcap-root": { username: gw, password-file: \#(directory)/empty }"#, "is empty"),
                (#""https://ap.oma.example/xcap-root": { username: gw }"#, "needs username and password-file"),
                (#""https://ap.oma.example/xcap-root": { username: "g\"w", password-file: \#(directory)/ap-password, asserted-identity: "sip:a@b" }"#, "not both"),
                (#""https://ap.oma.example/xcap-root": { asserted-identity: "not a uri" }"#, "not a sip:user@host"),
                (#""https://ap.oma.example/xcap-root": { asserted-identity: "sip:a@b", header: "X Bad" }"#, "not an HTTP field name"),
                (#""https://ap.oma.example/xcap-root": { username: "gw\u00e9", password-file: \#(directory)/ap-password }"#, "printable ASCII"),
                (#""ftp://ap.oma.example/xcap-root": { username: gw, password-file: \#(directory)/ap-password }"#, "not an http"),
            ] {
                do {
                    _ = try GatewayConfiguration(yaml: Self.roots + "xcap-auth:\n  " + entry + "\n")
                    Issue.record("accepted: \(entry)")
                } catch let error as ConfigurationError {
                    #expect(error.description.contains(message), "\(error.description)")
                    #expect(error.description.hasPrefix("8:"), "line of the entry: \(error.description)")
                    #expect(!error.description.contains("Circle of Life"))
                }
            }
        }
    }
}
