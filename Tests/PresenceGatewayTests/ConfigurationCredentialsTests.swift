import Foundation
import PresenceGateway
import SIPStack
import Testing

/// A peer's Digest credentials (`credentials:`) and a side's `accept:` (docs/security.md,
/// "Credentials" and "Who may send").
@Suite struct ConfigurationCredentialsTests {
    static func yaml(peer: String, oma: String = "") -> String {
        """
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1 }
          - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 5061 }
        enterprise: { domains: [contoso.com], next-hop: dns-federation }
        oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:5070"\(oma) }
        peers:
          - \(peer)

        """
    }

    @Test func aPeersPasswordComesFromItsFileAndNeverShows() throws {
        let directory = NSTemporaryDirectory() + "credentials-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "s3cret-pass\n".write(toFile: directory + "/ps", atomically: true, encoding: .utf8)
        let configuration = try GatewayConfiguration(
            yaml: Self.yaml(
                peer: "{ name: ps, address: 127.0.0.1, port: 5070, side: oma, credentials: { realm: oma.example, username: gw, password-file: \(directory)/ps } }"
            ))
        let credentials = try #require(configuration.peers.first?.credentials)
        #expect(credentials == SIPDigestCredentials(realm: "oma.example", username: "gw", password: "s3cret-pass"))
        #expect(!"\(configuration.peers)".contains("s3cret"))
        let inline = try GatewayConfiguration(
            yaml: Self.yaml(
                peer: "{ name: ps, address: 127.0.0.1, side: oma, credentials: { realm: r, username: u, password: p } }"))
        #expect(inline.peers.first?.credentials == SIPDigestCredentials(realm: "r", username: "u", password: "p"))
        #expect(try GatewayConfiguration(yaml: Self.yaml(peer: "{ name: ps, address: 127.0.0.1, side: oma }"))
            .peers.first?.credentials == nil)
    }

    /// Each mistake is reported at its line and column, without the password.
    @Test(arguments: [
        ("{ realm: oma.example, username: gw }", "password or password-file"),
        ("{ username: gw, password: hunter2 }", "realm, username"),
        ("{ realm: oma.example, username: gw, password: hunter2, password-file: /x }", "not both"),
        ("{ realm: oma.example, username: gw, password-file: /nonexistent/gw.pass }", "cannot read"),
        ("{ realm: \"\", username: gw, password: hunter2 }", "non-empty"),
        ("{ realm: oma.example, username: gw, password: hunter2, nonce: x }", "nonce"),
    ])
    func aBadCredentialsEntryIsAnErrorAtItsLine(entry: String, message: String) {
        let yaml = Self.yaml(peer: "{ name: ps, address: 127.0.0.1, side: oma, credentials: \(entry) }")
        do {
            _ = try GatewayConfiguration(yaml: yaml)
            Issue.record("accepted: \(entry)")
        } catch {
            #expect(error.description.contains(message), "\(error.description)")
            #expect(error.description.hasPrefix("7:"), "\(error.description)")
            #expect(!error.description.contains("hunter2"))
        }
    }

    @Test func aSideMayAcceptOnlyItsConfiguredPeers() throws {
        let peer = "{ name: ps, address: 127.0.0.1, side: oma }"
        #expect(try GatewayConfiguration(yaml: Self.yaml(peer: peer)).oma.accept == .any)
        let only = try GatewayConfiguration(yaml: Self.yaml(peer: peer, oma: ", accept: configured-peers"))
        #expect(only.oma.accept == .configuredPeers)
        #expect(only.enterprise.accept == .any)
        do {
            _ = try GatewayConfiguration(yaml: Self.yaml(peer: peer, oma: ", accept: peers"))
            Issue.record("accepted: accept: peers")
        } catch {
            #expect(error.description.hasPrefix("5:"), "\(error.description)")
            #expect(error.description.contains("configured-peers"), "\(error.description)")
        }
    }
}
