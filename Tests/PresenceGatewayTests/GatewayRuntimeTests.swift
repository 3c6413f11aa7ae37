import NIOCore
import NIOEmbedded
import PresenceDocuments
import PresenceEvents
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

        init() throws {
            network = SIPLoopbackNetwork(eventLoop: loop)
            let configuration = try GatewayConfiguration(yaml: GatewayConfiguration.defaultYAML)
            let omaLayer = SIPTransactionLayer(transport: network.endpoint(Self.omaSide))
            let enterpriseLayer = SIPTransactionLayer(transport: network.endpoint(Self.enterpriseSide))
            let core = GatewayCore(
                configuration: configuration, mapper: PresenceMapper(tables: try MappingTables.builtIn()),
                contacts: [.oma: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5060")),
                           .enterprise: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5061;transport=tcp"))],
                ids: .random())
            runtime = GatewayRuntime(core: core, router: FederationRouter(configuration: configuration, localAddresses: ["127.0.0.1:5060", "127.0.0.1:5061"]),
                                     layers: [.oma: omaLayer, .enterprise: enterpriseLayer], eventLoop: loop)
            runtime.start()
            kamailio = Peer(network.endpoint(SIPTarget(.udp, host: "127.0.0.1", port: 5070)))
            edge = Peer(network.endpoint(SIPTarget(.tcp, host: "127.0.0.1", port: 5062)))
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
        let subscribe = try #require(s.edge.requests.first { $0.method == .subscribe })
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
        #expect(s.runtime.counts.omaWatches == 1 && s.runtime.counts.enterpriseLegs == 1)

        // Graceful shutdown: final NOTIFY to the watcher, unsubscribe to the enterprise.
        s.runtime.shutdown()
        s.run()
        let final = try #require(s.kamailio.requests.last { $0.method == .notify })
        #expect(try final.headers.subscriptionState?.state == .terminated)
        #expect(try final.headers.subscriptionState?.reason == "deactivated")
        let unsubscribe = try #require(s.edge.requests.last { $0.method == .subscribe })
        #expect(try unsubscribe.headers.expires == 0)
        #expect(!s.runtime.isRunning)
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
        #expect(s.edge.received.isEmpty)
    }
}
