import Foundation
import GatewayState
@testable import PresenceGateway
import SIPMessages
import Testing

@Suite struct ConfigurationTests {
    @Test func embeddedDefaultConfigurationIsValidAndLoopbackOnly() throws {
        let config = try GatewayConfiguration(yaml: GatewayConfiguration.defaultYAML)
        #expect(config.listeners.count == 3)
        #expect(config.listeners.allSatisfy { $0.host == "127.0.0.1" })
        #expect(config.enterprise.domains == ["contoso.com"])
        #expect(config.oma.domains == ["oma.example"])
        #expect(config.oma.nextHop == .uri(try SIPURI("sip:127.0.0.1:5070;transport=udp")))
        #expect(config.blockedPartners == ["spam.example"])
        #expect(config.peers.map(\.name) == ["enterprise-edge", "kamailio"])
        #expect(config.peers[1].rateLimit == 5000)
        #expect(config.peers[1].port == 5070)
        #expect(config.linkedIdentities.first?.oma == "sip:alice@oma.example")
        #expect(config.defaultPolicy.defaults[.publicCloud] == .politeBlock)
        #expect(config.defaultPolicy.containers.members[100] == [.federated])
        #expect(config.admin?.port == 9460)
    }

    /// (YAML, expected line, words the message must contain)
    static let broken: [(String, Int, String)] = [
        ("listen:\n  - { side: oma, transport: udp, address: 127.0.0.1 }\n  - { side: enterprise, transport: sctp, address: 127.0.0.1 }\n", 3, "sctp"),
        ("listen: []\n", 1, "at least one listener"),
        ("listen:\n  - { side: oma, transport: udp, address: 127.0.0.1, port: 70000 }\n", 2, "whole number"),
        ("listen:\n  - { side: oma, transport: udp, address: gw.example }\n", 2, "not an IPv4 or IPv6"),
        ("listen:\n  - { side: oma, transport: udp, address: 127.0.0.1 }\n  - { side: enterprise, transport: tls, address: 127.0.0.1 }\nenterprise: { domains: [contoso.com], next-hop: dns }\noma: { domains: [oma.example], next-hop: dns }\n", 2, "tls"),
        (valid + "colour: blue\n", 6, "unknown key 'colour'"),
        (valid.replacingOccurrences(of: "next-hop: \"sip:127.0.0.1:5070\" }",
                                    with: "next-hop: \"sip:127.0.0.1:5070\", rate-control: { min-interval: soon } }"), 5, "whole number"),
        (valid.replacingOccurrences(of: "next-hop: \"sip:127.0.0.1:5070\" }",
                                    with: "next-hop: \"sip:127.0.0.1:5070\", rate-control: { throttle: 5 } }"), 5, "unknown key 'throttle'"),
        (valid + "peers:\n  - { name: x, address: 127.0.0.1, side: oma, trusted: maybe }\n", 7, "true or false"),
        (valid + "presentities:\n  default:\n    containers:\n      40000: [everyone]\n", 9, "0 to 32767"),
        (valid + "presentities:\n  default:\n    containers:\n      100: [friends]\n", 9, "'friends' is not a member"),
        (valid + "presentities:\n  default:\n    defaults: { federated: perhaps }\n", 8, "perhaps"),
        ("listen:\n  - { side: oma, transport: udp, address: 127.0.0.1 }\n  - { side: enterprise, transport: tcp, address: 127.0.0.1 }\nenterprise: { domains: [contoso.com], next-hop: dns }\noma: { domains: [contoso.com], next-hop: dns }\n", 5, "both sides"),
        ("listen:\n  - { side: oma, transport: udp, address: 127.0.0.1 }\n  - { side: enterprise, transport: tcp, address: 127.0.0.1 }\nenterprise: { domains: [contoso.com], next-hop: \"sip:bad host\" }\noma: { domains: [oma.example], next-hop: dns }\n", 4, "not a SIP URI"),
        ("listen:\n  - { side: oma, transport: udp, address: 127.0.0.1\n", 3, "YAML"),
        // rpid-extensions belongs to the OMA side only (its PIDF watchers and publications).
        ("listen:\n  - { side: oma, transport: udp, address: 127.0.0.1 }\n  - { side: enterprise, transport: tcp, address: 127.0.0.1 }\nenterprise: { domains: [contoso.com], next-hop: dns, rpid-extensions: true }\noma: { domains: [oma.example], next-hop: dns }\n", 4, "unknown key 'rpid-extensions'"),
        (valid.replacingOccurrences(of: "next-hop: \"sip:127.0.0.1:5070\" }", with: "next-hop: \"sip:127.0.0.1:5070\", rpid-extensions: often }"), 5, "true or false"),
        // subscriber-list is the enterprise side's ([MS-PRES] §3.6).
        (valid.replacingOccurrences(of: "next-hop: dns-federation }", with: "next-hop: dns-federation, subscriber-list: 1 }"), 4, "true or false"),
        (valid.replacingOccurrences(of: "next-hop: \"sip:127.0.0.1:5070\" }", with: "next-hop: \"sip:127.0.0.1:5070\", subscriber-list: false }"), 5, "unknown key 'subscriber-list'"),
    ]

    static let valid = """
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1 }
          - { side: enterprise, transport: tcp, address: "::1", port: 5061 }
        enterprise: { domains: [contoso.com], next-hop: dns-federation }
        oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:5070" }

        """

    /// libpq's `sslmode` and `sslrootcert` in a PostgreSQL URL; anything else in its query is
    /// refused where it stands.
    @Test func aPostgresURLSaysHowTheConnectionIsSecured() throws {
        func postgres(_ url: String) throws -> GatewayConfiguration.State.Postgres? {
            let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(
                of: "state: { store: sqlite, path: state/presence-gateway.db }",
                with: "state: { store: postgres, url: \"\(url)\", node: gw1 }")
            guard case .postgres(let postgres) = try GatewayConfiguration(yaml: yaml).state.store else { return nil }
            return postgres
        }
        #expect(try postgres("postgres://gw:pw@db.example:5433/gateway")?.tls == PostgresTLS(mode: .prefer))
        let verified = try postgres("postgres://gw:pw@db.example/gateway?sslmode=verify-full&sslrootcert=/etc/ssl/pg%20ca.pem")
        #expect(verified?.tls == PostgresTLS(mode: .verifyFull, rootCertificates: "/etc/ssl/pg ca.pem"))
        #expect(verified?.database == "gateway" && verified?.port == 5432)
        #expect(try postgres("postgres://gw@db.example/gateway?sslmode=disable")?.tls.mode == .disable)
        for bad in ["?sslmode=always", "?sslcert=/x.pem", "?sslmode"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try postgres("postgres://gw@db.example/gateway\(bad)") }
        }
    }

    /// Secrets kept out of the configuration (docs/security.md, "Secrets"): `admin.token-file`
    /// and `state.password-file` read a file of their own, relative paths in
    /// `$CREDENTIALS_DIRECTORY` (systemd's `LoadCredential=`); a missing or empty file, a short
    /// token, or a secret given twice is an error at its line, which never shows the secret.
    @Test func secretsComeFromFilesOfTheirOwn() throws {
        let directory = NSTemporaryDirectory() + "secrets-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "0123456789abcdef-token\n".write(toFile: directory + "/admin-token", atomically: true, encoding: .utf8)
        try "p@ss word\n".write(toFile: directory + "/pg-password", atomically: true, encoding: .utf8)
        try "short\n".write(toFile: directory + "/short", atomically: true, encoding: .utf8)
        try "\n".write(toFile: directory + "/empty", atomically: true, encoding: .utf8)
        func configuration(admin: String, state: String = "{ store: memory }") throws -> GatewayConfiguration {
            try GatewayConfiguration(yaml: Self.valid + "admin: \(admin)\nstate: \(state)\n")
        }
        let admin = try configuration(admin: "{ address: 127.0.0.1, port: 9460, token-file: \(directory)/admin-token }")
        #expect(admin.admin?.token == "0123456789abcdef-token")
        let state = try configuration(
            admin: "{ address: 127.0.0.1, port: 9460 }",
            state: "{ store: postgres, url: \"postgres://gw@db.example/gateway\", password-file: \(directory)/pg-password, node: gw1 }")
        guard case .postgres(let postgres) = state.state.store else {
            Issue.record("not postgres")
            return
        }
        #expect(postgres.password == "p@ss word")
        // Relative: in the credentials directory systemd gives the service.
        let node = try ConfigurationNode.parse("admin-token")
        #expect(try node.secretFile(environment: ["CREDENTIALS_DIRECTORY": directory]) == "0123456789abcdef-token")
        for (yaml, line, message) in [
            ("{ address: 127.0.0.1, port: 9460, token-file: \(directory)/missing }", 6, "cannot read"),
            ("{ address: 127.0.0.1, port: 9460, token-file: \(directory)/empty }", 6, "is empty"),
            ("{ address: 127.0.0.1, port: 9460, token-file: \(directory)/short }", 6, "at least 16"),
            ("{ address: 127.0.0.1, port: 9460, token: 0123456789abcdef, token-file: \(directory)/admin-token }", 6, "not both"),
        ] {
            do {
                _ = try configuration(admin: yaml)
                Issue.record("accepted: \(yaml)")
            } catch let error as ConfigurationError {
                #expect(error.description.contains(message), "\(error.description)")
                #expect(error.description.hasPrefix("\(line):"), "\(error.description)")
                #expect(!error.description.contains("0123456789abcdef-token"))
            }
        }
        #expect(throws: ConfigurationError.self) {
            try configuration(
                admin: "{ address: 127.0.0.1, port: 9460 }",
                state: "{ store: postgres, url: \"postgres://gw:pw@db.example/gateway\", password-file: \(directory)/pg-password, node: gw1 }")
        }
    }

    @Test func validSmallConfiguration() throws {
        let config = try GatewayConfiguration(yaml: Self.valid)
        #expect(config.listeners[1].host == "::1")
        #expect(config.listeners[0].port == 5060)
        #expect(config.enterprise.nextHop == .dns(federation: true))
        #expect(config.admin == nil)
        // PIDF for OMA watchers is the [MS-PRES] §3.7.5.4 table unless the OMA side opts in.
        #expect(config.oma.rpidExtensions == false)
    }

    /// OMA watchers join the subscriber lists of the enterprise users they watch unless turned off.
    @Test func enterpriseSideMayLeaveOMAWatchersOutOfSubscriberLists() throws {
        #expect(try GatewayConfiguration(yaml: Self.valid).enterprise.subscriberList)
        let yaml = Self.valid.replacingOccurrences(
            of: "next-hop: dns-federation }", with: "next-hop: dns-federation, subscriber-list: false }")
        #expect(try GatewayConfiguration(yaml: yaml).enterprise.subscriberList == false)
        // Toward a UDP next hop the context's bytes would send the SUBSCRIBE over TCP (RFC 3261
        // §18.1.1): off unless asked for.
        for hop in ["sip:127.0.0.1:5062", "sip:127.0.0.1:5062;transport=UDP"] {
            let udp = Self.valid.replacingOccurrences(of: "next-hop: dns-federation }", with: "next-hop: \"\(hop)\" }")
            #expect(try GatewayConfiguration(yaml: udp).enterprise.subscriberList == false)
            let asked = udp.replacingOccurrences(of: "\(hop)\" }", with: "\(hop)\", subscriber-list: true }")
            #expect(try GatewayConfiguration(yaml: asked).enterprise.subscriberList)
        }
        let tls = Self.valid.replacingOccurrences(
            of: "next-hop: dns-federation }", with: "next-hop: \"sip:127.0.0.1:5061;transport=tls\" }")
        #expect(try GatewayConfiguration(yaml: tls).enterprise.subscriberList)
    }

    @Test func omaSideOptsIntoRPIDExtensions() throws {
        let yaml = Self.valid.replacingOccurrences(
            of: "next-hop: \"sip:127.0.0.1:5070\" }", with: "next-hop: \"sip:127.0.0.1:5070\", rpid-extensions: true }")
        let config = try GatewayConfiguration(yaml: yaml)
        #expect(config.oma.rpidExtensions)
        #expect(config.enterprise.rpidExtensions == false)
    }

    /// RFC 6446: what the gateway asks of the OMA presence servers, in seconds.
    @Test func omaSideAsksForRateControl() throws {
        let yaml = Self.valid.replacingOccurrences(
            of: "next-hop: \"sip:127.0.0.1:5070\" }",
            with: "next-hop: \"sip:127.0.0.1:5070\", rate-control: { min-interval: 5, max-interval: 600 } }")
        let config = try GatewayConfiguration(yaml: yaml)
        #expect(config.oma.minInterval == 5)
        #expect(config.oma.maxInterval == 600)
        #expect(try GatewayConfiguration(yaml: Self.valid).oma.minInterval == nil)
    }

    /// The transaction layers' tables (RFC 3261 §17.2.2: an answered request is held 32 s over
    /// UDP): 500,000 of each role by default, as many as configured, and the layers are sized so.
    @Test func transactionTablesAreSizedByTheLimit() throws {
        #expect(try GatewayConfiguration(yaml: Self.valid).limits.transactions == 500_000)
        let config = try GatewayConfiguration(yaml: Self.valid + "limits: { transactions: 800000 }\n")
        #expect(config.limits.transactions == 800_000)
        let layer = GatewayRuntime.transactionConfiguration(limit: config.limits.transactions).limits
        #expect(layer.maxServerTransactions == 800_000 && layer.maxClientTransactions == 800_000)
        let error = #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration(yaml: Self.valid + "limits: { transactions: 10 }\n")
        }
        #expect(error?.line == 6, "\(error?.description ?? "")")
    }

    @Test(arguments: broken)
    func brokenConfigurationsNameTheLine(_ yaml: String, _ line: Int, _ words: String) {
        let error = #expect(throws: ConfigurationError.self) { try GatewayConfiguration(yaml: yaml) }
        #expect(error?.line == line, "\(error?.description ?? "")")
        #expect(error?.message.contains(words) == true, "\(error?.description ?? "")")
    }
}
