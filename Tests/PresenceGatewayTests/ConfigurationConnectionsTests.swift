import NIOCore
import PresenceGateway
import Testing

/// The `connections:` section: connection limits and timeouts for the SIP and admin sockets.
@Suite struct ConfigurationConnectionsTests {
    static let base = """
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1 }
          - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 5061 }
        enterprise: { domains: [contoso.com], next-hop: dns-federation }
        oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:5070" }

        """

    @Test func withoutTheSectionTheDocumentedDefaultsApply() throws {
        let c = try GatewayConfiguration(yaml: Self.base).connections
        #expect(c.maxInbound == 4096)
        #expect(c.maxInboundPerAddress == 64)
        #expect(c.maxOutbound == 1024)
        #expect(c.idleTimeout == .seconds(300))
        #expect(c.tlsHandshakeTimeout == .seconds(10))
        #expect(c.headerTimeout == .seconds(10))
        #expect(c.connectTimeout == .seconds(10))
        #expect(c.admin == AdminServer.Limits(maxConnections: 64, maxConnectionsPerAddress: 16, idleTimeout: .seconds(60),
                                               headerTimeout: .seconds(10)))
    }

    @Test func everyKeyIsRead() throws {
        let yaml = Self.base + """
            connections:
              max-inbound: 500
              max-inbound-per-address: 8
              max-outbound: 32
              idle-timeout: 120
              tls-handshake-timeout: 1.5
              header-timeout: 2
              connect-timeout: 3
              admin: { max-connections: 4, max-connections-per-address: 2, idle-timeout: 5, header-timeout: 0.5 }
            """
        let c = try GatewayConfiguration(yaml: yaml).connections
        #expect(c.maxInbound == 500)
        #expect(c.maxInboundPerAddress == 8)
        #expect(c.maxOutbound == 32)
        #expect(c.idleTimeout == .seconds(120))
        #expect(c.tlsHandshakeTimeout == .milliseconds(1500))
        #expect(c.headerTimeout == .seconds(2))
        #expect(c.connectTimeout == .seconds(3))
        #expect(c.admin == AdminServer.Limits(maxConnections: 4, maxConnectionsPerAddress: 2, idleTimeout: .seconds(5),
                                               headerTimeout: .milliseconds(500)))
    }

    /// (section, words the message must contain)
    static let broken: [(String, String)] = [
        ("connections: { max-inbound: 0 }\n", "whole number"),
        ("connections: { idle-timeout: forever }\n", "number"),
        ("connections: { header-timeout: 0 }\n", "number from 0.05"),
        ("connections: { max-connections: 5 }\n", "unknown key 'max-connections'"),
        ("connections: { admin: { max-inbound: 5 } }\n", "unknown key 'max-inbound'"),
    ]

    @Test(arguments: broken)
    func brokenValuesNameTheLine(_ section: String, _ words: String) {
        let error = #expect(throws: ConfigurationError.self) { try GatewayConfiguration(yaml: Self.base + section) }
        #expect(error?.line == 6, "\(error?.description ?? "")")
        #expect(error?.message.contains(words) == true, "\(error?.message ?? "")")
    }
}
