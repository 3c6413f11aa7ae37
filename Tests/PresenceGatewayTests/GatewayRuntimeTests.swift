import NIOCore
import NIOEmbedded
import PresenceDocuments
import MSPresenceEvents
import PresenceGateway
import PresenceMapping
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// The whole gateway on the loopback network with an injected clock: transaction layers, router,
/// core and runtime, with a fake OMA presence server and a fake enterprise edge as peers.
@Suite struct GatewayRuntimeTests {
    final class Peer: @unchecked Sendable {
        let endpoint: SIPLoopbackNetwork.Endpoint
        var received: [SIPMessage] = []
        init(_ endpoint: SIPLoopbackNetwork.Endpoint) {
            self.endpoint = endpoint
            endpoint.setMessageHandler { [unowned self] in self.received.append($0.message) }
        }
        var requests: [SIPRequest] { received.compactMap(\.request) }
        var responses: [SIPResponse] { received.compactMap(\.response) }
        func send(_ message: SIPMessage, to target: SIPTarget) { _ = endpoint.send(message, to: target, connection: nil) }
    }

    struct Setup {
        let loop = EmbeddedEventLoop()
        let network: SIPLoopbackNetwork
        let runtime: GatewayRuntime
        let kamailio: Peer
        let edge: Peer
        static let omaSide = SIPTarget(.udp, host: "127.0.0.1", port: 5060)
        static let enterpriseSide = SIPTarget(.tcp, host: "127.0.0.1", port: 5061)

        init(yaml: String = GatewayConfiguration.defaultYAML) throws {
            network = SIPLoopbackNetwork(eventLoop: loop)
            let configuration = try GatewayConfiguration(yaml: yaml)
            let omaLayer = SIPTransactionLayer(transport: network.endpoint(Self.omaSide), configuration: GatewayRuntime.transactionConfiguration())
            let enterpriseLayer = SIPTransactionLayer(transport: network.endpoint(Self.enterpriseSide),
                                                      configuration: GatewayRuntime.transactionConfiguration())
            let core = GatewayCore(
                configuration: configuration, mapper: PresenceMapper(tables: try MappingTables.builtIn()),
                contacts: [.oma: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5060")),
                           .enterprise: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5061;transport=tcp"))],
                ids: .random())
            runtime = GatewayRuntime(core: core, router: FederationRouter(configuration: configuration, localAddresses: ["127.0.0.1:5060", "127.0.0.1:5061"]),
                                     layers: [.oma: omaLayer, .enterprise: enterpriseLayer], eventLoop: loop)
            kamailio = Peer(network.endpoint(SIPTarget(.udp, host: "127.0.0.1", port: 5070)))
            edge = Peer(network.endpoint(SIPTarget(.tcp, host: "127.0.0.1", port: 5062)))
            runtime.start()
        }

        func run(_ seconds: Int64 = 0) { loop.advanceTime(by: .seconds(seconds)) }
    }

    static func parse(_ lines: [String], body: [UInt8] = []) throws -> SIPMessage {
        try SIPMessage(parsing: Array((lines + ["Content-Length: \(body.count)", "", ""]).joined(separator: "\r\n").utf8) + body)
    }

    @Test func omaWatcherSubscriptionCrossesBothWaysAndShutdownEndsIt() throws {
        let s = try Setup()
        s.kamailio.send(try Self.parse([
            "SUBSCRIBE sip:bob@contoso.com SIP/2.0",
            "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKw1;rport",
            "Max-Forwards: 70",
            "From: <sip:alice@oma.example>;tag=w1",
            "To: <sip:bob@contoso.com>",
            "Call-ID: w1@127.0.0.1",
            "CSeq: 1 SUBSCRIBE",
            "Contact: <sip:alice@127.0.0.1:5070>",
            "Event: presence",
            "Accept: application/pidf+xml",
            "Expires: 600",
        ]), to: Setup.omaSide)
        s.run()
        // The enterprise edge receives the category SUBSCRIBE over TCP and answers with state 15500.
        let subscribe = try #require(s.edge.requests.first { Self.names($0, "sip:bob@contoso.com") })
        #expect(try subscribe.headers.from?.uri.description == "sip:alice@oma.example")
        let state = CategoriesDocument(uri: "sip:bob@contoso.com", categories: [
            Category(name: .state, instance: 1, publishTime: "2026-11-22T10:00:00.000",
                     payload: .state(MSState(type: .aggregateState, availability: 15500))),
        ])
        var ok = SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "ent1", headers: [
            (.contact, "<sip:127.0.0.1:5062;transport=tcp>"), (.expires, "3600"),
            (.contentType, BatchCategorySubscription.multipartContentType(boundary: "b1")),
            (.event, "presence"), (.subscriptionState, "active;expires=3600"), (.msPiggybackCSeq, "1"),
        ])
        ok.body = BatchSubscribeResponse(list: RLMIList(uri: "sip:alice@oma.example"), categories: [state]).multipart(boundary: "b1").bytes
        s.edge.send(.response(ok), to: Setup.enterpriseSide)
        s.run()
        // The OMA watcher gets 200 and a NOTIFY with open/away.
        #expect(s.kamailio.responses.first?.statusCode == 200)
        let notify = try #require(s.kamailio.requests.first { $0.method == .notify })
        #expect(String(decoding: notify.body, as: UTF8.self).contains("<basic>open</basic>"))
        // One OMA watcher; two enterprise legs: its own and the demo's linked identity's.
        #expect(s.runtime.counts.omaWatches == 1 && s.runtime.counts.enterpriseLegs == 2)

        // Graceful shutdown: final NOTIFY to the watcher, unsubscribe to the enterprise.
        s.runtime.shutdown()
        s.run()
        let final = try #require(s.kamailio.requests.last { $0.method == .notify })
        #expect(try final.headers.subscriptionState?.state == .terminated)
        #expect(try final.headers.subscriptionState?.reason == "deactivated")
        let unsubscribe = try #require(s.edge.requests.last { $0.method == .subscribe && $0.headers.callID == subscribe.headers.callID })
        #expect(try unsubscribe.headers.expires == 0)
        #expect(!s.runtime.status.running)
    }

    /// Whether a category SUBSCRIBE's batch body names `resource`.
    static func names(_ request: SIPRequest, _ resource: String) -> Bool {
        guard request.method == .subscribe, let batch = try? BatchSubscribe(bytes: request.body) else { return false }
        return batch.actions.contains { $0.resources.contains { $0.uri == resource } }
    }

    static func categoriesOK(_ subscribe: SIPRequest, _ uri: String, availability: UInt32, tag: String) -> SIPResponse {
        let state = CategoriesDocument(uri: uri, categories: [
            Category(name: .state, instance: 1, publishTime: "2026-11-22T10:00:00.000",
                     payload: .state(MSState(type: .aggregateState, availability: availability))),
        ])
        var ok = SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: tag, headers: [
            (.contact, "<sip:127.0.0.1:5062;transport=tcp>"), (.expires, "3600"),
            (.contentType, BatchCategorySubscription.multipartContentType(boundary: "b2")),
            (.event, "presence"), (.subscriptionState, "active;expires=3600"), (.msPiggybackCSeq, "1"),
        ])
        ok.body = BatchSubscribeResponse(list: RLMIList(uri: "sip:alice@oma.example"), categories: [state]).multipart(boundary: "b2").bytes
        return ok
    }

    @Test func linkedIdentityEnterpriseStateIsPublishedToTheOMAPresenceServer() throws {
        let s = try Setup()
        s.run()
        // At start the gateway subscribes to the linked enterprise identity (demo: alice@contoso.com).
        let subscribe = try #require(s.edge.requests.first { Self.names($0, "sip:alice@contoso.com") })
        s.edge.send(.response(Self.categoriesOK(subscribe, "sip:alice@contoso.com", availability: 15500, tag: "e1")), to: Setup.enterpriseSide)
        s.run()
        // …and PUBLISHes it as PIDF for the OMA identity (MS-PRES 3.7.5.4 row 9: open + away).
        let publish = try #require(s.kamailio.requests.first { $0.method == .publish })
        #expect(publish.uri.description == "sip:alice@oma.example")
        #expect(try publish.headers.event?.package == "presence")
        let pidf = String(decoding: publish.body, as: UTF8.self)
        #expect(pidf.contains(#"entity="sip:alice@oma.example""#))
        #expect(pidf.contains("<basic>open</basic>") && pidf.contains("away"))
        s.kamailio.send(.response(SIPResponse(replyingTo: publish, statusCode: 200, headers: [(.sipETag, "etag-1"), (.expires, "3600")])),
                        to: Setup.omaSide)
        s.run()
        // A change on the enterprise side modifies the publication under its entity-tag.
        let benotify = try Self.parse([
            "BENOTIFY sip:gateway@127.0.0.1:5061;transport=tcp SIP/2.0",
            "Via: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKbn7",
            "Max-Forwards: 70",
            "From: <sip:alice@oma.example>;tag=e1",
            "To: <sip:alice@oma.example>;tag=\((try subscribe.headers.from)?.tag ?? "")",
            "Call-ID: \(subscribe.headers.callID ?? "")",
            "CSeq: 2 BENOTIFY",
            "Event: presence",
            "Subscription-State: active;expires=3000",
            "Content-Type: application/msrtc-event-categories+xml",
        ], body: CategoriesDocument(uri: "sip:alice@contoso.com", categories: [
            Category(name: .state, instance: 1, publishTime: "2026-11-22T10:05:00.000",
                     payload: .state(MSState(type: .aggregateState, availability: 6500))),
        ]).serialized())
        s.edge.send(benotify, to: Setup.enterpriseSide)
        s.run()
        let modify = try #require(s.kamailio.requests.last { $0.method == .publish })
        #expect(modify.headers[.sipIfMatch] == "etag-1")
        #expect(String(decoding: modify.body, as: UTF8.self).contains("busy"))
        // Shutdown removes it (Expires 0 under the entity-tag).
        s.kamailio.send(.response(SIPResponse(replyingTo: modify, statusCode: 200, headers: [(.sipETag, "etag-2"), (.expires, "3600")])),
                        to: Setup.omaSide)
        s.run()
        s.runtime.shutdown()
        s.run()
        let remove = try #require(s.kamailio.requests.last { $0.method == .publish })
        #expect(try remove.headers.expires == 0)
        #expect(remove.headers[.sipIfMatch] == "etag-2")
    }

    @Test func requestsForUnservedDomainsAreRefusedAtTheEdge() throws {
        let s = try Setup()
        s.kamailio.send(try Self.parse([
            "SUBSCRIBE sip:x@elsewhere.example SIP/2.0",
            "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKw2;rport",
            "Max-Forwards: 70",
            "From: <sip:alice@oma.example>;tag=w2",
            "To: <sip:x@elsewhere.example>",
            "Call-ID: w2@127.0.0.1",
            "CSeq: 1 SUBSCRIBE",
            "Contact: <sip:alice@127.0.0.1:5070>",
            "Event: presence",
        ]), to: Setup.omaSide)
        s.run()
        #expect(s.kamailio.responses.first?.statusCode == 403)
        #expect(!s.edge.requests.contains { Self.names($0, "sip:x@elsewhere.example") })
    }
}
