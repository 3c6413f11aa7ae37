import Foundation
import PeerTestSupport
import PresenceGateway
import Prometheus
import SIPMessages
import Testing

/// The gateway as a Digest client of an OMA presence server that authenticates it (RFC 3261
/// §22; PacketCable Presence: the presence server authenticates SIP requests), and its trust
/// domain (RFC 3325): Kamailio with `auth` and `auth_db` (``AuthKamailio``) challenges the
/// gateway's SUBSCRIBEs with 401 and its PUBLISHes with 407. Flow 1 (an enterprise watcher on a
/// UDP socket of the test subscribes to john@oma.example, whom sipp published busy) and flow 4
/// (the linked identity alice, her enterprise state from a sipp edge, PUBLISHed to Kamailio)
/// both cross it; the OMA side takes requests from its configured peers only.
@Suite(.serialized) struct DigestAuthPeerTests {
    static let carol = "sip:carol@contoso.com"
    static let john = "sip:john@oma.example"

    /// The gateway's configuration: its OMA listener on `omaPort`, Kamailio on `kamailio` as a
    /// trusted peer with credentials from `passwordFile`, the OMA side open to configured peers
    /// only, and (with `edge`) alice linked.
    static func yaml(omaPort: UInt16, kamailio: UInt16, edge: UInt16, passwordFile: String, linked: Bool) -> String {
        """
        state: { store: memory }
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1, port: \(omaPort) }
          - { side: enterprise, transport: udp, address: 127.0.0.1, port: 0 }
        enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(edge);transport=udp" }
        oma:
          domains: [oma.example]
          next-hop: "sip:127.0.0.1:\(kamailio);transport=udp"
          accept: configured-peers
        peers:
          - { name: edge, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }
          - name: kamailio
            address: 127.0.0.1
            port: \(kamailio)
            side: oma
            trusted: true
            credentials: { realm: oma.example, username: gateway, password-file: \(passwordFile) }
        \(linked ? "linked-identities:\n  - { oma: \"sip:alice@oma.example\", enterprise: \"sip:alice@contoso.com\", publish-to-oma: true }" : "")
        presentities:
          default:
            defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
        subscriptions: { piggyback-wait-ms: 2000, default-expires: 12, minimum-expires: 1 }
        """
    }

    /// Kamailio (password `kamailioPassword`, `algorithm`), optionally the sipp edge, and the
    /// gateway whose password file holds `gatewayPassword`; all stopped afterwards.
    static func with(
        algorithm: String, kamailioPassword: String, gatewayPassword: String, linked: Bool,
        _ body: (AuthKamailio, GatewayServer, PrometheusCollectorRegistry) async throws -> Void
    ) async throws {
        let omaPort = try LoopbackPorts.free()
        let kamailio = try await AuthKamailio.start(gatewayPort: omaPort, password: kamailioPassword, algorithm: algorithm)
        try await withCleanup {
            let file = kamailio.directory + "/gateway.password"
            try (gatewayPassword + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            var edge: Sipp.Running?
            if linked {
                edge = try await Sipp.start(
                    scenario: PeerAssets.scenario("enterprise-edge.xml"), remote: nil,
                    keys: ["avail1": "3500", "avail2": "3500", "expires": "600"], calls: 1, timeLimit: 120,
                    extra: ["-d", "1500"])
            }
            let edgePort = try edge?.port ?? LoopbackPorts.free()
            let registry = PrometheusCollectorRegistry()
            let configuration = try GatewayConfiguration(
                yaml: Self.yaml(
                    omaPort: omaPort, kamailio: kamailio.sipPort, edge: edgePort, passwordFile: file, linked: linked))
            let server = try GatewayServer(configuration: configuration, registry: registry)
            try await withCleanup {
                try await server.start()
                try await body(kamailio, server, registry)
            } cleanup: {
                await server.stop(grace: .milliseconds(500))
                if let edge, edge.isRunning { _ = edge.stop() }
            }
        } cleanup: {
            kamailio.stop()
        }
    }

    /// What Kamailio logged for the gateway's requests of one Call-ID: the requests, challenges
    /// and accepted credentials.
    struct Exchange {
        var requests: [String]
        var challenges: [String]
        var accepted: [String]

        init(_ kamailio: AuthKamailio, callID: String) {
            func of(_ kind: String) -> [String] { kamailio.lines(kind).filter { AuthKamailio.callID($0) == callID } }
            requests = of("REQ-LOG")
            challenges = of("CHALLENGE-LOG")
            accepted = of("AUTH-OK-LOG")
        }
    }

    /// The Call-ID of the first `method` for `uri` Kamailio received from the gateway.
    static func callID(_ kamailio: AuthKamailio, _ method: String, _ uri: String, within seconds: Double) async throws
        -> String?
    {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if let line = kamailio.lines("REQ-LOG \(method) ruri=\(uri) ").first { return AuthKamailio.callID(line) }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        return nil
    }

    /// Polls until `done` holds (at most `seconds`).
    static func waitFor(_ seconds: Double, _ done: () async throws -> Bool) async throws -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if try await done() { return true }
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        return try await done()
    }

    /// Each challenged request is sent once more with credentials and CSeq one higher (RFC 3261
    /// §22.2, §8.1.3.5) and accepted; the refresh (granted 12 s, due after about 7) carries
    /// credentials from the start with a higher nc, which Kamailio's `nonce_count` checks, so it
    /// is accepted without a second challenge, its CSeq above the last. Toward the trusted peer
    /// both carry P-Asserted-Identity with the watcher's or the publisher's identity (RFC 3325
    /// §9.1). A stranger's SUBSCRIBE on the OMA side is refused with 403 and counted.
    @Test(arguments: ["SHA-256", "MD5"])
    func challengedSubscribeAndPublishSucceedAndRefreshWithoutAnotherChallenge(algorithm: String) async throws {
        try await Self.with(
            algorithm: algorithm, kamailioPassword: "Circle of Life", gatewayPassword: "Circle of Life", linked: true
        ) { kamailio, server, registry in
            let published = try await Sipp.run(
                scenario: PeerAssets.scenario("oma-publish.xml"), remote: "127.0.0.1:\(kamailio.sipPort)",
                keys: ["user": "john", "activity": "busy", "note": "authenticated"], timeLimit: 20)
            #expect(published.succeeded, "PUBLISH to Kamailio: \(published)")
            let enterprise = try #require(server.bound[.enterprise]?.first?.port)
            let watcher = try await EnterpriseWatcher(
                watcher: Self.carol, resources: [Self.john], gatewayPort: UInt16(enterprise))
            #expect(watcher.subscribeStatus == 200)
            #expect(await watcher.sees(6500, for: Self.john, within: 10), "\(kamailio.log)")

            // SUBSCRIBE: 401, the same again with Authorization and CSeq + 1, then a refresh.
            let subscribe = try #require(try await Self.callID(kamailio, "SUBSCRIBE", Self.john, within: 5), "\(kamailio.log)")
            #expect(try await Self.waitFor(15) { Exchange(kamailio, callID: subscribe).accepted.count >= 2 }, "\(kamailio.log)")
            let s = Exchange(kamailio, callID: subscribe)
            #expect(s.challenges.count == 1 && s.challenges.first?.contains("CHALLENGE-LOG 401") == true, "\(s)")
            let challenged = try #require(s.challenges.first.flatMap(AuthKamailio.cseq))
            let cseqs = s.accepted.compactMap(AuthKamailio.cseq)
            #expect(cseqs.first == challenged + 1, "\(s)")
            #expect(cseqs == cseqs.sorted() && Set(cseqs).count == cseqs.count, "CSeq in order: \(cseqs)")
            #expect(s.accepted.allSatisfy { $0.contains("user=gateway") })
            #expect(s.requests.first?.contains("www=[<null>]") == true, "\(s.requests)")
            #expect(s.requests.dropFirst().allSatisfy { $0.contains("www=[Digest ") && $0.contains("algorithm=\(algorithm)") }, "\(s.requests)")
            #expect(s.requests.allSatisfy { $0.contains("pai=[<\(Self.carol)>]") }, "\(s.requests)")

            // PUBLISH: 407, the same again with Proxy-Authorization, then its refresh.
            let publish = try #require(try await Self.callID(kamailio, "PUBLISH", "sip:alice@oma.example", within: 10), "\(kamailio.log)")
            #expect(try await Self.waitFor(15) { Exchange(kamailio, callID: publish).accepted.count >= 2 }, "\(kamailio.log)")
            let p = Exchange(kamailio, callID: publish)
            #expect(p.challenges.count == 1 && p.challenges.first?.contains("CHALLENGE-LOG 407") == true, "\(p)")
            let publishChallenged = try #require(p.challenges.first.flatMap(AuthKamailio.cseq))
            #expect(p.accepted.first.flatMap(AuthKamailio.cseq) == publishChallenged + 1, "\(p)")
            #expect(p.requests.dropFirst().allSatisfy { $0.contains("proxy=[Digest ") }, "\(p.requests)")
            #expect(p.requests.allSatisfy { $0.contains("pai=[<sip:alice@oma.example>]") }, "\(p.requests)")
            #expect(try await kamailio.publications(of: "alice") == 1)
            #expect(metricValue(registry, #"gateway_authentication_failures_total{peer="kamailio"}"#) == 0)

            // The watcher still sees John's changes through the refreshed subscription.
            let mark = watcher.availabilities.count
            try await Sipp.run(
                scenario: PeerAssets.scenario("oma-publish.xml"), remote: "127.0.0.1:\(kamailio.sipPort)",
                keys: ["user": "john", "activity": "away", "note": "later"], timeLimit: 20
            ).expectSucceeded()
            #expect(await watcher.sees(15500, after: mark, within: 10), "\(watcher.availabilities)")

            // A stranger on the OMA side (accept: configured-peers): 403, counted, nothing sent.
            let stranger = try LoopbackDatagramPeer(host: "127.0.0.2")
            let before = kamailio.lines("REQ-LOG").count
            stranger.send(
                """
                SUBSCRIBE sip:bob@contoso.com SIP/2.0
                Via: SIP/2.0/UDP \(stranger.hostPort);branch=z9hG4bKstranger1
                Max-Forwards: 70
                From: <sip:eve@oma.example>;tag=s1
                To: <sip:bob@contoso.com>
                Call-ID: stranger-1@127.0.0.2
                CSeq: 1 SUBSCRIBE
                Contact: <sip:eve@\(stranger.hostPort)>
                Event: presence
                Expires: 600

                """, to: UInt16(try #require(server.bound[.oma]?.first?.port)))
            #expect(await stranger.response(within: 5)?.statusCode == 403)
            #expect(metricValue(registry, #"gateway_security_refusals_total{reason="not_configured_peer"}"#) == 1)
            #expect(kamailio.lines("REQ-LOG").count == before)

            // Stopped, the gateway un-SUBSCRIBEs (RFC 6665 §4.1.2.3) and removes alice's
            // publication (RFC 3903 §4.5), both with credentials at once: accepted, next CSeq.
            await server.stop(grace: .milliseconds(800))
            for (callID, kind) in [(subscribe, "SUBSCRIBE"), (publish, "PUBLISH")] {
                let ended = Exchange(kamailio, callID: callID)
                let last = try #require(ended.requests.last { $0.contains("expires=[0]") }, "\(kind): \(ended)")
                let cseq = try #require(AuthKamailio.cseq(last))
                #expect(ended.accepted.contains { AuthKamailio.cseq($0) == cseq }, "\(kind): \(ended)")
                #expect(cseq == ended.requests.compactMap(AuthKamailio.cseq).max(), "\(kind): \(ended)")
                #expect(ended.challenges.count == 1, "\(kind): \(ended)")
            }
        }
    }

    /// Wrong credentials: the SUBSCRIBE is sent twice (without, then with credentials), both
    /// challenged, and no more (RFC 3261 §22.2 asks for one retry); the leg fails as any refused
    /// SUBSCRIBE does, the watcher never sees John's state, and the failure is counted per peer.
    @Test func wrongCredentialsFailOnceAndAreCounted() async throws {
        try await Self.with(
            algorithm: "MD5", kamailioPassword: "right-password", gatewayPassword: "wrong-password", linked: false
        ) { kamailio, server, registry in
            try await Sipp.run(
                scenario: PeerAssets.scenario("oma-publish.xml"), remote: "127.0.0.1:\(kamailio.sipPort)",
                keys: ["user": "john", "activity": "busy", "note": "x"], timeLimit: 20
            ).expectSucceeded()
            let enterprise = try #require(server.bound[.enterprise]?.first?.port)
            let watcher = try await EnterpriseWatcher(
                watcher: Self.carol, resources: [Self.john], gatewayPort: UInt16(enterprise))
            let subscribe = try #require(try await Self.callID(kamailio, "SUBSCRIBE", Self.john, within: 5), "\(kamailio.log)")
            #expect(try await Self.waitFor(10) {
                metricValue(registry, #"gateway_authentication_failures_total{peer="kamailio"}"#) == 1
            })
            // Nothing more is tried: a few seconds on, still two requests and two challenges.
            try await Task.sleep(nanoseconds: 3_000_000_000)
            let s = Exchange(kamailio, callID: subscribe)
            #expect(s.requests.count == 2 && s.challenges.count == 2 && s.accepted.isEmpty, "\(s)")
            #expect(!watcher.availabilities.contains(6500))
            #expect(try await Self.waitFor(5) { server.status?.omaLegs == 0 })
        }
    }
}

extension Sipp.Run {
    func expectSucceeded(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(succeeded, "\(self)", sourceLocation: sourceLocation)
    }
}
