import NIOCore
import PresenceDocuments
import MSPresenceEvents
import PresenceGateway
import SIPMessages
import SIPTransport
import Testing

/// Hostile peers against the whole gateway on the loopback network (docs/security.md): every
/// address the gateway acts on is checked wherever it came from, requests inside a dialog are
/// held to the dialog's peer, the gateway's own requests go only where that peer may be reached,
/// and the enterprise can tell OMA watchers from its own. Each test asserts what the gateway
/// answered and what it sent (usually: nothing).
@Suite struct EdgeSecurityTests {
    typealias Setup = GatewayRuntimeTests.Setup
    typealias Peer = GatewayRuntimeTests.Peer

    static let pidf = Array("""
        <?xml version="1.0" encoding="UTF-8"?>
        <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="sip:carol@oma.example">\
        <tuple id="t1"><status><basic>open</basic></status></tuple></presence>
        """.utf8)

    /// Every request that reached any endpoint but the gateway's own, to `address`.
    static func sent(_ s: Setup, to address: SIPTarget) -> [SIPLoopbackNetwork.Record] {
        s.network.log.filter { $0.to == address }
    }

    /// An enterprise PIDF watcher ([MS-PRES] §4.10) of carol@oma.example, bridged: the OMA leg's
    /// SUBSCRIBE answered 200 by Kamailio and its first NOTIFY relayed. Returns the leg's
    /// SUBSCRIBE.
    static func bridgeEnterpriseWatcher(_ s: Setup) throws -> SIPRequest {
        s.edge.send(try bobSubscribesToCarol(id: "pw1"), to: Setup.enterpriseSide)
        s.run()
        let subscribe = try #require(s.kamailio.requests.first { $0.method == .subscribe && $0.uri.description == "sip:carol@oma.example" })
        s.kamailio.send(.response(SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "k1", headers: [
            (.contact, "<sip:127.0.0.1:5070>"), (.expires, "600"),
        ])), to: Setup.omaSide)
        s.kamailio.send(try notify(for: subscribe, cseq: 1), to: Setup.omaSide)
        s.run(1)
        #expect(s.kamailio.responses.contains { $0.statusCode == 200 && (try? $0.headers.cseq)?.method == .notify })
        #expect(s.edge.requests.contains { $0.method == .notify })
        return subscribe
    }

    /// bob@contoso.com's PIDF SUBSCRIBE to carol@oma.example from the enterprise edge; `id`
    /// names its branch, From tag and Call-ID.
    static func bobSubscribesToCarol(id: String) throws -> SIPMessage {
        try GatewayRuntimeTests.parse([
            "SUBSCRIBE sip:carol@oma.example SIP/2.0",
            "Via: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bK\(id)",
            "Max-Forwards: 70",
            "From: <sip:bob@contoso.com>;tag=\(id)",
            "To: <sip:carol@oma.example>",
            "Call-ID: \(id)@contoso",
            "CSeq: 1 SUBSCRIBE",
            "Contact: <sip:bob@127.0.0.1:5062;transport=tcp>",
            "Event: presence",
            "Accept: application/pidf+xml",
            "Expires: 600",
        ])
    }

    /// A NOTIFY in the dialog of the gateway's OMA-leg `subscribe`.
    static func notify(for subscribe: SIPRequest, cseq: Int, via: String = "UDP 127.0.0.1:5070") throws -> SIPMessage {
        let from = try #require(try subscribe.headers.from)
        return try GatewayRuntimeTests.parse([
            "NOTIFY sip:gw@127.0.0.1:5060 SIP/2.0",
            "Via: SIP/2.0/\(via);branch=z9hG4bKkn\(cseq)x\(UInt32.random(in: 0...UInt32.max))",
            "Max-Forwards: 70",
            "From: <sip:carol@oma.example>;tag=k1",
            "To: <\(from.uri)>;tag=\(from.tag ?? "")",
            "Call-ID: \(subscribe.headers.callID ?? "")",
            "CSeq: \(cseq) NOTIFY",
            "Contact: <sip:127.0.0.1:5070>",
            "Event: presence",
            "Subscription-State: active;expires=600",
            "Content-Type: application/pidf+xml",
        ], body: pidf)
    }

    /// An OMA-side SUBSCRIBE for bob@contoso.com (RFC 3856), sent from `source` (`host:port`).
    /// `cseq` and `toTag` make it a refresh inside the dialog.
    static func omaSubscribe(id: String, from: String = "sip:dave@oma.example", to: String = "<sip:bob@contoso.com>",
                             source: String = "127.0.0.1:5070", contact: String? = nil, cseq: Int = 1, toTag: String? = nil,
                             extra: [String] = []) throws -> SIPMessage {
        try GatewayRuntimeTests.parse([
            "SUBSCRIBE sip:bob@contoso.com SIP/2.0",
            "Via: SIP/2.0/UDP \(source);branch=z9hG4bK\(id)c\(cseq)",
            "Max-Forwards: 70",
            "From: <\(from)>;tag=\(id)",
            "To: \(to)\(toTag.map { ";tag=\($0)" } ?? "")",
            "Call-ID: \(id)@oma",
            "CSeq: \(cseq) SUBSCRIBE",
            "Contact: <\(contact ?? "sip:w@" + source)>",
            "Event: presence",
            "Accept: application/pidf+xml",
        ] + extra)
    }

    @Test func batchResourcesOutsideTheOMADomainsAreRejectedInRLMIAndNothingIsSentForThem() throws {
        let s = try Setup()
        let silentUDP = Peer(s.network.endpoint(SIPTarget(.udp, host: "127.0.0.1", port: 5099)))
        let silentTCP = Peer(s.network.endpoint(SIPTarget(.tcp, host: "127.0.0.1", port: 5099)))
        let resources = ["sip:carol@oma.example", "sip:x@evil.example", "sip:y@contoso.com", "sip:z@127.0.0.1:5099",
                         "sip:t@127.0.0.1:5099;transport=tcp"]
        s.edge.send(.request(try GatewayCoreTests.enterpriseSubscribe(resources: resources, from: "sip:bob@contoso.com")),
                    to: Setup.enterpriseSide)
        s.run()
        // One SUBSCRIBE, for the one OMA resource; nothing to the literal address.
        let subscribes = s.kamailio.requests.filter { $0.method == .subscribe }
        #expect(subscribes.map(\.uri.description) == ["sip:carol@oma.example"])
        #expect(silentUDP.received.isEmpty && silentTCP.received.isEmpty)
        #expect(Self.sent(s, to: SIPTarget(.udp, host: "127.0.0.1", port: 5099)).isEmpty)
        // Kamailio answers carol's subscription; the watcher is answered once it has.
        let carol = try #require(subscribes.first)
        s.kamailio.send(.response(SIPResponse(replyingTo: carol, statusCode: 200, toTag: "k1", headers: [(.contact, "<sip:127.0.0.1:5070>"), (.expires, "600")])),
                        to: Setup.omaSide)
        s.kamailio.send(try Self.notify(for: carol, cseq: 1), to: Setup.omaSide)
        s.run()
        // The answer lists each refused resource terminated with reason rejected (RFC 4662 §5.2).
        let ok = try #require(s.edge.responses.first { $0.statusCode == 200 })
        let list = try GatewayCoreTests.firstCategories(ok).list
        for refused in resources.dropFirst() {
            let instance = try #require(list.resources.first { $0.uri == refused }?.instances.first, "\(refused) not listed")
            #expect(instance.state == .terminated && instance.reason == "rejected")
        }
    }

    @Test func aBatchOverTheResourceLimitIsRefusedWith413AndTheWatcherQuotaHolds() throws {
        let s = try Setup(yaml: GatewayConfiguration.defaultYAML + "\nlimits: { resources-per-batch: 3, subscriptions-per-watcher: 2 }\n")
        let many = (1...4).map { "sip:u\($0)@oma.example" }
        s.edge.send(.request(try GatewayCoreTests.enterpriseSubscribe(resources: many, from: "sip:bob@contoso.com")), to: Setup.enterpriseSide)
        s.run(1)
        #expect(s.edge.responses.last?.statusCode == 413)
        #expect(s.kamailio.requests.filter { $0.method == .subscribe }.isEmpty)
        // Three resources pass the batch limit; the watcher's quota of two leaves the third unsent.
        s.edge.send(.request(try GatewayCoreTests.enterpriseSubscribe(resources: Array(many.prefix(3)), from: "sip:bob@contoso.com")),
                    to: Setup.enterpriseSide)
        s.run()
        #expect(s.kamailio.requests.filter { $0.method == .subscribe }.count == 2)
    }

    @Test func theToHeaderDoesNotChooseWhatTheGatewaySubscribesTo() throws {
        let s = try Setup()
        let silent = Peer(s.network.endpoint(SIPTarget(.tcp, host: "127.0.0.1", port: 5099)))
        for (n, to) in ["<sip:x@127.0.0.1:5099;transport=tcp>", "<sip:carol@oma.example>"].enumerated() {
            s.kamailio.send(try Self.omaSubscribe(id: "to\(n)", to: to), to: Setup.omaSide)
            s.run()
        }
        #expect(silent.received.isEmpty)
        // Both watchers are bridged to the Request-URI's presentity, in the enterprise, only.
        let subscribes = s.edge.requests.filter { $0.method == .subscribe && (try? $0.headers.from)?.uri.description == "sip:dave@oma.example" }
        #expect(!subscribes.isEmpty)
        #expect(subscribes.allSatisfy { GatewayRuntimeTests.names($0, "sip:bob@contoso.com") })
        #expect(!s.kamailio.requests.contains { $0.method == .subscribe && $0.uri.description.contains("carol") })
    }

    /// [MS-PRES] §3.4.5.3: a single category SUBSCRIBE naming more than one resource is answered
    /// 400, and none of them is subscribed to.
    @Test func aSingleCategorySubscribeCannotNameOtherResourcesInItsBody() throws {
        let s = try Setup()
        let batch = BatchSubscribe(uri: "sip:bob@contoso.com", actions: [
            BatchSubscribe.Action(kind: .subscribe, resources: [.init(uri: "sip:carol@oma.example"), .init(uri: "sip:x@evil.example"),
                                                                .init(uri: "sip:erin@oma.example")], categories: [.state]),
        ])
        s.edge.send(try GatewayRuntimeTests.parse([
            "SUBSCRIBE sip:carol@oma.example SIP/2.0",
            "Via: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKsc1",
            "Max-Forwards: 70",
            "From: <sip:bob@contoso.com>;tag=sc1",
            "To: <sip:carol@oma.example>",
            "Call-ID: sc1@contoso",
            "CSeq: 1 SUBSCRIBE",
            "Contact: <sip:bob@127.0.0.1:5062;transport=tcp>",
            "Event: presence",
            "Accept: application/msrtc-event-categories+xml",
            "Require: categoryList",
            "Content-Type: application/msrtc-adrl-categorylist+xml",
        ], body: batch.serialized()), to: Setup.enterpriseSide)
        s.run()
        #expect(s.edge.responses.map(\.statusCode) == [400])
        #expect(!s.kamailio.requests.contains { $0.method == .subscribe })
    }

    @Test func inDialogRequestsFromAnotherPeerSideOrTransportAreRefusedAndNotRelayed() throws {
        let s = try Setup()
        let subscribe = try Self.bridgeEnterpriseWatcher(s)
        let relayed = s.edge.requests.count
        let attackers: [(SIPTarget, SIPTarget, String)] = [
            (SIPTarget(.udp, host: "127.0.0.1", port: 5071), Setup.omaSide, "UDP 127.0.0.1:5071"),   // another port
            (SIPTarget(.udp, host: "127.0.0.2", port: 5070), Setup.omaSide, "UDP 127.0.0.2:5070"),   // another host
            (SIPTarget(.tcp, host: "127.0.0.1", port: 5070), Setup.enterpriseSide, "TCP 127.0.0.1:5070"), // the other side, over TCP
        ]
        for (n, (source, listener, via)) in attackers.enumerated() {
            let attacker = Peer(s.network.endpoint(source))
            attacker.send(try Self.notify(for: subscribe, cseq: 10 + n, via: via), to: listener)
            s.run()
            #expect(attacker.responses.map(\.statusCode) == [403], "from \(source) to \(listener)")
        }
        #expect(s.edge.requests.count == relayed)
        // The dialog's own peer still gets through.
        s.kamailio.send(try Self.notify(for: subscribe, cseq: 20), to: Setup.omaSide)
        s.run()
        #expect(s.kamailio.responses.last?.statusCode == 200)
    }

    @Test func aBENOTIFYForTheEnterpriseLegFromAnotherSideOrHostIsDroppedAndNotRelayed() throws {
        let s = try Setup()
        s.kamailio.send(try Self.omaSubscribe(id: "bn1"), to: Setup.omaSide)
        s.run()
        let subscribe = try #require(s.edge.requests.first { GatewayRuntimeTests.names($0, "sip:bob@contoso.com") })
        s.edge.send(.response(GatewayRuntimeTests.categoriesOK(subscribe, "sip:bob@contoso.com", availability: 3500, tag: "ent1")),
                    to: Setup.enterpriseSide)
        s.run(1)
        let relayed = s.kamailio.requests.count { $0.method == .notify }
        #expect(relayed >= 1)
        let away = CategoriesDocument(uri: "sip:bob@contoso.com", categories: [
            Category(name: .state, instance: 1, publishTime: "2026-11-25T10:00:00.000",
                     payload: .state(MSState(type: .aggregateState, availability: 15500))),
        ])
        let attackers: [(SIPTarget, SIPTarget)] = [
            (SIPTarget(.udp, host: "127.0.0.1", port: 5090), Setup.omaSide),        // over UDP, to the OMA listener
            (SIPTarget(.tcp, host: "127.0.0.2", port: 5062), Setup.enterpriseSide), // from another host than the edge
        ]
        for (n, (source, listener)) in attackers.enumerated() {
            let attacker = Peer(s.network.endpoint(source))
            attacker.send(.request(try GatewayCoreTests.enterpriseBENOTIFY(subscribe, cseq: 10 + n, away)), to: listener)
            s.run()
            // A BENOTIFY is never answered ([MS-PRES] §3.4.5.2), so nothing comes back either.
            #expect(attacker.received.isEmpty, "\(source) to \(listener)")
        }
        #expect(s.kamailio.requests.count { $0.method == .notify } == relayed)
        // The edge's own BENOTIFY is relayed.
        s.edge.send(.request(try GatewayCoreTests.enterpriseBENOTIFY(subscribe, cseq: 20, away)), to: Setup.enterpriseSide)
        s.run()
        #expect(s.kamailio.requests.count { $0.method == .notify } == relayed + 1)
    }

    @Test func aBurstOfRefreshesIsRateLimitedAndBoundsWhatTheGatewaySends() throws {
        // 2 requests a second from the unconfigured watcher's address.
        let s = try Setup(yaml: GatewayConfiguration.defaultYAML + "\nlimits: { unconfigured-peer-rate: 2 }\n")
        let watcher = Peer(s.network.endpoint(SIPTarget(.udp, host: "127.0.0.4", port: 6000)))
        watcher.send(try Self.omaSubscribe(id: "rb1", from: "sip:mallory@oma.example", source: "127.0.0.4:6000"), to: Setup.omaSide)
        s.run()
        let subscribe = try #require(s.edge.requests.first { GatewayRuntimeTests.names($0, "sip:bob@contoso.com") })
        s.edge.send(.response(GatewayRuntimeTests.categoriesOK(subscribe, "sip:bob@contoso.com", availability: 3500, tag: "rb")),
                    to: Setup.enterpriseSide)
        s.run(1)
        let toTag = try #require(try watcher.responses.first { $0.statusCode == 200 }?.headers.to?.tag)
        let answered = watcher.responses.count
        let sentBefore = s.network.log.count { $0.from == Setup.omaSide }
        let edgeBefore = s.edge.requests.count
        for n in 0..<100 {
            watcher.send(try Self.omaSubscribe(id: "rb1", from: "sip:mallory@oma.example", source: "127.0.0.4:6000",
                                               cseq: 2 + n, toTag: toTag, extra: ["Expires: 600"]), to: Setup.omaSide)
        }
        s.run()
        let answers = watcher.responses.dropFirst(answered).map(\.statusCode)
        #expect(answers.count == 100)
        #expect(answers.count { $0 == 503 } >= 95, "a watcher limited to 2/s got \(answers.count { $0 == 200 }) of 100 refreshes through")
        // Each accepted refresh costs at most one NOTIFY (RFC 6665 §4.2.1.2), and the enterprise
        // leg is not refreshed once per watcher refresh.
        let sent = s.network.log.count { $0.from == Setup.omaSide } - sentBefore
        #expect(sent <= 100 + 2 * answers.count { $0 == 200 }, "the gateway sent \(sent) messages for 100 refreshes")
        #expect(s.edge.requests.count - edgeBefore <= 1)
    }

    @Test func inDialogRequestsCountAgainstThePeersRateLimit() throws {
        // 2 requests a second: the burst of 300 takes a second or two of real time here.
        let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(of: "rate-limit: 5000", with: "rate-limit: 2")
        let s = try Setup(yaml: yaml)
        let subscribe = try Self.bridgeEnterpriseWatcher(s)
        let before = s.kamailio.responses.count
        for n in 0..<300 { s.kamailio.send(try Self.notify(for: subscribe, cseq: 100 + n), to: Setup.omaSide) }
        s.run()
        let answers = s.kamailio.responses.dropFirst(before).map(\.statusCode)
        #expect(answers.count == 300)
        #expect(answers.count { $0 == 503 } >= 280, "a peer limited to 2/s got \(answers.count { $0 == 200 }) of 300 through")
    }

    @Test func unconfiguredPeersHaveARateLimitToo() throws {
        let s = try Setup(yaml: GatewayConfiguration.defaultYAML + "\nlimits: { unconfigured-peer-rate: 2 }\n")
        let stranger = Peer(s.network.endpoint(SIPTarget(.udp, host: "127.0.0.3", port: 5080)))
        for n in 0..<300 {
            stranger.send(try Self.omaSubscribe(id: "st\(n)", from: "sip:s@stranger.example", source: "127.0.0.3:5080"), to: Setup.omaSide)
        }
        s.run()
        #expect(stranger.responses.count { $0.statusCode == 503 } >= 280)
    }

    @Test func aWatchersContactCannotAimTheGatewaysNotifiesAtAnotherHost() throws {
        let s = try Setup()
        let watcher = Peer(s.network.endpoint(SIPTarget(.udp, host: "127.0.0.4", port: 6000)))
        let victim = Peer(s.network.endpoint(SIPTarget(.udp, host: "127.0.0.9", port: 7000)))
        watcher.send(try Self.omaSubscribe(id: "rf1", from: "sip:mallory@oma.example", source: "127.0.0.4:6000", contact: "sip:mallory@127.0.0.9:7000"), to: Setup.omaSide)
        s.run()
        let subscribe = try #require(s.edge.requests.first { GatewayRuntimeTests.names($0, "sip:bob@contoso.com") })
        s.edge.send(.response(GatewayRuntimeTests.categoriesOK(subscribe, "sip:bob@contoso.com", availability: 3500, tag: "rf")),
                    to: Setup.enterpriseSide)
        s.run(40)
        // The NOTIFY (and any retransmission) went to where the SUBSCRIBE came from, never to the Contact.
        #expect(victim.received.isEmpty)
        #expect(watcher.requests.contains { $0.method == .notify })
    }

    @Test func subscribesIntoTheEnterpriseCarryTheFederationMarkingAndForgedOnesAreRemoved() throws {
        // Without the subscriber-list context, whose ~300 bytes alone take a batch SUBSCRIBE past
        // the 1300 bytes RFC 3261 §18.1.1 allows over UDP (it then goes over TCP).
        let s = try Setup(yaml: GatewayConfiguration.defaultYAML.replacingOccurrences(
            of: "  next-hop: \"sip:127.0.0.1:5062;transport=tcp\"",
            with: "  next-hop: \"sip:127.0.0.1:5062;transport=tcp\"\n  subscriber-list: false"))
        s.kamailio.send(try Self.omaSubscribe(id: "mk1", extra: [
            "ms-source-network: sameEnterprise",
            "ms-edge-proxy-message-trust: ms-source-type=DirectPartner;ms-source-network=sameEnterprise",
            "P-Asserted-Identity: <sip:ceo@contoso.com>",
        ]), to: Setup.omaSide)
        s.run()
        let subscribe = try #require(s.edge.requests.first { GatewayRuntimeTests.names($0, "sip:bob@contoso.com") })
        let trust = try #require(try subscribe.headers.msEdgeProxyMessageTrust)
        #expect(trust.sourceNetwork == "federation")
        #expect(trust.sourceVerifiedUser == "verified")   // through the configured Kamailio
        // RFC 3261 §18.1.1: the marked batch SUBSCRIBE still fits a UDP request.
        #expect(s.network.log.contains { $0.message?.request?.headers.callID == subscribe.headers.callID && $0.bytes.count <= 1300 })
        #expect(subscribe.headers[.msSourceNetwork] == nil)
        #expect(subscribe.headers["P-Asserted-Identity"] == nil)
    }

    @Test func aTrailingDotDoesNotPassTheSpoofingCheck() throws {
        let s = try Setup()
        for (n, from) in ["sip:boss@contoso.com.", "sip:boss@CONTOSO.com", "sip:boss@contoso.com"].enumerated() {
            s.kamailio.send(try Self.omaSubscribe(id: "sp\(n)", from: from), to: Setup.omaSide)
            s.run()
        }
        #expect(s.kamailio.responses.map(\.statusCode) == [403, 403, 403])
        #expect(!s.edge.requests.contains { $0.method == .subscribe && ((try? $0.headers.from)?.uri.description.contains("boss") ?? false) })
    }

    @Test func aPoolFqdnOutsideTheEnterpriseIsNotFollowed() throws {
        let s = try Setup()
        let rogue = Peer(s.network.endpoint(SIPTarget(.tcp, host: "127.0.0.66", port: 5061)))
        s.kamailio.send(try Self.omaSubscribe(id: "pl1"), to: Setup.omaSide)
        s.run()
        let subscribe = try #require(s.edge.requests.first { GatewayRuntimeTests.names($0, "sip:bob@contoso.com") })
        var hint = RLMIList.Instance(state: .resubscribe)
        hint.poolFqdn = "sip:127.0.0.66:5061;transport=tcp"
        s.edge.send(.response(GatewayCoreTests.batchOK(subscribe, rejected: [("sip:bob@contoso.com", hint)])), to: Setup.enterpriseSide)
        s.run(1)
        #expect(rogue.received.isEmpty)
        // Followed as a hint without a pool: a single SUBSCRIBE to the resource, through the edge.
        #expect(s.edge.requests.filter { $0.method == .subscribe && $0.uri.description == "sip:bob@contoso.com" }.count == 2, "\(s.edge.requests.map { "\($0.method) \($0.uri) \(String(decoding: $0.body, as: UTF8.self))" })")
    }
}
