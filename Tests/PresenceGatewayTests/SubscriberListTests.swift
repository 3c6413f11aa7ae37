import Foundation
import MSPresenceEvents
import NIOCore
import PresenceDocuments
import PresenceGateway
import SIPMessages
import SIPStack
import SIPTransport
import Testing
import XMLBridge

/// An OMA watcher joins the subscriber list of the enterprise user it watches, as a contact
/// who adds the user does ([MS-PRES] §2.2.2.4.1, §3.6): the gateway's category SUBSCRIBE for
/// it carries a `context` for that resource.
@Suite struct SubscriberListTests {
    typealias Setup = GatewayRuntimeTests.Setup

    /// The context each resource of a category SUBSCRIBE carries.
    static func context(of request: SIPRequest, _ resource: String) throws -> XMLElement? {
        let batch = try BatchSubscribe(bytes: request.body)
        let found = batch.actions.flatMap(\.resources).first { $0.uri == resource }
        return try #require(found).context
    }

    static func bobSubscribe(s: Setup, id: String) throws -> SIPRequest {
        s.kamailio.send(try EdgeSecurityTests.omaSubscribe(id: id, extra: ["Expires: 7200"]), to: Setup.omaSide)
        s.run()
        return try #require(s.edge.requests.last { GatewayRuntimeTests.names($0, "sip:bob@contoso.com") })
    }

    @Test func anOMAWatchersSubscribeAsksToJoinTheUsersSubscriberList() throws {
        let s = try Setup()
        let subscribe = try Self.bobSubscribe(s: s, id: "sl1")
        #expect(try subscribe.headers.from?.uri.description == "sip:dave@oma.example")
        #expect(try Self.context(of: subscribe, "sip:bob@contoso.com") == BatchSubscribe.Resource.addedAsWatcher)
        // The linked identity's own watch (the demo publishes alice's enterprise state to the
        // OMA side) is no contact of anyone: no context.
        let linked = try #require(s.edge.requests.first { GatewayRuntimeTests.names($0, "sip:alice@contoso.com") })
        #expect(try Self.context(of: linked, "sip:alice@contoso.com") == nil)
        // Refreshes carry no context (BatchSubscriberTests).
    }

    @Test func aFullSubscriberListDoesNotCostTheWatcherItsSubscription() throws {
        let s = try Setup()
        let subscribe = try Self.bobSubscribe(s: s, id: "sl2")
        // §3.6.5.3: the server may refuse 413 when the subscriber list is full.
        s.edge.send(.response(SIPResponse(replyingTo: subscribe, statusCode: 413)), to: Setup.enterpriseSide)
        s.run()
        let again = try #require(s.edge.requests.last { GatewayRuntimeTests.names($0, "sip:bob@contoso.com") })
        #expect(again.headers.callID != subscribe.headers.callID)
        #expect(try again.headers.from?.uri.description == "sip:dave@oma.example")
        #expect(try Self.context(of: again, "sip:bob@contoso.com") == nil)
        s.edge.send(
            .response(GatewayRuntimeTests.categoriesOK(again, "sip:bob@contoso.com", availability: 3500, tag: "e2")),
            to: Setup.enterpriseSide)
        s.run()
        #expect(s.kamailio.responses.map(\.statusCode) == [200])
        let notify = try #require(s.kamailio.requests.first { $0.method == .notify })
        #expect(String(decoding: notify.body, as: UTF8.self).contains("<basic>open</basic>"))
        // A 413 to the SUBSCRIBE without context ends the watch as any refusal does.
        let s2 = try Setup()
        let first = try Self.bobSubscribe(s: s2, id: "sl3")
        s2.edge.send(.response(SIPResponse(replyingTo: first, statusCode: 413)), to: Setup.enterpriseSide)
        s2.run()
        let second = try #require(s2.edge.requests.last { GatewayRuntimeTests.names($0, "sip:bob@contoso.com") })
        s2.edge.send(.response(SIPResponse(replyingTo: second, statusCode: 413)), to: Setup.enterpriseSide)
        s2.run()
        #expect(s2.edge.requests.count { GatewayRuntimeTests.names($0, "sip:bob@contoso.com") } == 2)
        #expect(s2.kamailio.responses.map(\.statusCode) == [503])
    }

    @Test func anOperatorCanLeaveOMAWatchersOutOfSubscriberLists() throws {
        let s = try Setup(
            yaml: GatewayConfiguration.defaultYAML.replacingOccurrences(
                of: "  next-hop: \"sip:127.0.0.1:5062;transport=tcp\"",
                with: "  next-hop: \"sip:127.0.0.1:5062;transport=tcp\"\n  subscriber-list: false"))
        let subscribe = try Self.bobSubscribe(s: s, id: "sl4")
        #expect(try Self.context(of: subscribe, "sip:bob@contoso.com") == nil)
    }
}
