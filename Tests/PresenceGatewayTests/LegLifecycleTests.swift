import NIOCore
import PresenceDocuments
import MSPresenceEvents
import PresenceGateway
import PresenceMapping
import SIPMessages
import Testing

/// The ends and beginnings of the gateway's legs: the final NOTIFY after an unsubscribe is
/// accepted on both sides (RFC 6665 §4.1.2.3), and an OMA watcher whose batch leg brought no data
/// is answered after a bounded wait.
@Suite struct LegLifecycleTests {
    typealias T = GatewayCoreTests

    /// A NOTIFY from the enterprise in the dialog `subscribe` created (tag `ent1`).
    static func enterpriseNotify(_ subscribe: SIPRequest, cseq: Int, state: String) throws -> SIPRequest {
        let from = try #require(try subscribe.headers.from)
        return try T.request([
            "NOTIFY sip:gw@127.0.0.1:5061;transport=tcp SIP/2.0",
            "Via: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKfn\(cseq)",
            "Max-Forwards: 70",
            "From: <\(subscribe.uri)>;tag=ent1",
            "To: <\(from.uri)>;tag=\(from.tag ?? "")",
            "Call-ID: \(subscribe.headers.callID ?? "")",
            "CSeq: \(cseq) NOTIFY",
            "Event: presence",
            "Subscription-State: \(state)",
        ])
    }

    /// An OMA watcher of bob@contoso.com, answered; returns the enterprise leg's SUBSCRIBE, its
    /// context and the watcher's dialog tag.
    static func omaWatcher(_ h: inout T.Harness) throws -> (SIPRequest, GatewayCore.Context, String) {
        let (id, actions) = h.receive(try T.omaSubscribe(), from: .oma)
        let (subscribe, context) = try #require(T.sent(actions, to: .enterprise).first)
        let answered = h.core.receive(T.enterpriseOK(subscribe, T.categories(availability: 3500, uri: "sip:bob@contoso.com")),
                                      to: subscribe, context: context, now: h.now)
        let ok = try #require(T.responses(answered, id).first)
        return (subscribe, context, try #require(try ok.headers.to?.tag))
    }

    /// RFC 6665 §4.1.2.3: the enterprise's NOTIFY (terminated) that follows the 2xx to the
    /// gateway's unsubscribe is answered 200, then the dialog is released (a later one is 481).
    @Test func finalNotifyAfterEnterpriseLegUnsubscribeIsAnswered200ThenReleased() throws {
        var h = try T.Harness()
        let (subscribe, context, tag) = try Self.omaWatcher(&h)
        let (_, gone) = h.receive(try T.omaSubscribe(expires: 0, cseq: 2, toTag: tag), from: .oma)
        let unsubscribe = try #require(T.sent(gone, to: .enterprise).first { $0.0.headers[.expires] == "0" }?.0)
        _ = h.core.receive(SIPResponse(replyingTo: unsubscribe, statusCode: 200, toTag: "ent1", headers: [(.expires, "0")]),
                           to: unsubscribe, context: context, now: h.now)
        let (finalID, final) = h.receive(try Self.enterpriseNotify(subscribe, cseq: 2, state: "terminated;reason=timeout"), from: .enterprise)
        #expect(T.responses(final, finalID).first?.statusCode == 200)
        #expect(h.core.counts.enterpriseLegs == 0)
        let (lateID, late) = h.receive(try Self.enterpriseNotify(subscribe, cseq: 3, state: "terminated;reason=timeout"), from: .enterprise)
        #expect(T.responses(late, lateID).first?.statusCode == 481)
    }

    /// Without a final NOTIFY the unsubscribed leg waits 64·T1 (32 s), then is released.
    @Test func unsubscribedEnterpriseLegWithoutFinalNotifyIsReleasedAfter64T1() throws {
        var h = try T.Harness()
        let (subscribe, context, tag) = try Self.omaWatcher(&h)
        let (_, gone) = h.receive(try T.omaSubscribe(expires: 0, cseq: 2, toTag: tag), from: .oma)
        let cleanup = try #require(gone.compactMap { if case .schedule(.cleanup(let c), let at) = $0 { (c, at) } else { nil } }.first)
        #expect(cleanup.0 == context)
        #expect(cleanup.1 == h.now + .seconds(32))
        let unsubscribe = try #require(T.sent(gone, to: .enterprise).first { $0.0.headers[.expires] == "0" }?.0)
        _ = h.core.receive(SIPResponse(replyingTo: unsubscribe, statusCode: 200, toTag: "ent1", headers: [(.expires, "0")]),
                           to: unsubscribe, context: context, now: h.now)
        #expect(h.core.counts.enterpriseLegs == 1, "released before its final NOTIFY could arrive")
        h.now = cleanup.1
        _ = h.core.fire(.cleanup(cleanup.0), now: h.now)
        #expect(h.core.counts.enterpriseLegs == 0)
        let (lateID, late) = h.receive(try Self.enterpriseNotify(subscribe, cseq: 2, state: "terminated;reason=timeout"), from: .enterprise)
        #expect(T.responses(late, lateID).first?.statusCode == 481)
    }

    /// The same on the OMA side: an enterprise watcher unsubscribes, the gateway unsubscribes
    /// its OMA leg, and the OMA side's final NOTIFY after the 200 is answered 200.
    @Test func finalNotifyAfterOMALegUnsubscribeIsAnswered200ThenReleased() throws {
        var h = try T.Harness()
        let john = "sip:john@oma.example"
        let (id, actions) = h.receive(try T.enterpriseSubscribe(resources: [john]), from: .enterprise, network: .sameEnterprise)
        let (leg, context) = try #require(T.sent(actions, to: .oma).first)
        _ = h.core.receive(SIPResponse(replyingTo: leg, statusCode: 200, toTag: "kam1", headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                           to: leg, context: context, now: h.now)
        let (_, answered) = h.receive(try T.omaNotify(leg, cseq: 2, body: T.pidf(john, activity: "away")), from: .oma)
        let ok = try #require(T.responses(answered, id).first)
        var unsubscribe = try T.enterpriseSubscribe(resources: [john], expires: 0)
        unsubscribe.headers.set(.to, "<sip:carol@contoso.com>;tag=\(try #require(try ok.headers.to?.tag))")
        unsubscribe.headers.set(.cseq, "2 SUBSCRIBE")
        let (_, gone) = h.receive(unsubscribe, from: .enterprise, network: .sameEnterprise)
        let legUnsubscribe = try #require(T.sent(gone, to: .oma).first { $0.0.headers[.expires] == "0" }?.0)
        _ = h.core.receive(SIPResponse(replyingTo: legUnsubscribe, statusCode: 200, toTag: "kam1", headers: [(.expires, "0")]),
                           to: legUnsubscribe, context: context, now: h.now)
        let (finalID, final) = h.receive(try T.omaNotify(leg, cseq: 3, state: "terminated;reason=timeout", body: []), from: .oma)
        #expect(T.responses(final, finalID).first?.statusCode == 200)
        #expect(h.core.counts.omaLegs == 0)
        let (lateID, late) = h.receive(try T.omaNotify(leg, cseq: 4, state: "terminated;reason=timeout", body: []), from: .oma)
        #expect(T.responses(late, lateID).first?.statusCode == 481)
    }

    /// The enterprise's 2xx for a batch leg carries no data for the resource and no
    /// notification follows: after the piggyback wait the OMA watcher is answered with the empty
    /// view (nothing known: RFC 3856 §6.6.2), and notified when the state arrives later.
    @Test func omaWatcherWhoseBatchLegBringsNoDataIsAnsweredAfterTheWaitThenNotified() throws {
        var h = try T.Harness()
        let (id, actions) = h.receive(try T.omaSubscribe(), from: .oma)
        let (subscribe, context) = try #require(T.sent(actions, to: .enterprise).first)
        let empty = h.core.receive(T.batchOK(subscribe), to: subscribe, context: context, now: h.now)
        #expect(T.responses(empty, id).isEmpty)
        let wait = try #require(empty.compactMap { if case .schedule(.firstAnswer(let c), let at) = $0 { (c, at) } else { nil } }.first)
        #expect(wait.1 == h.now + .milliseconds(500))
        h.now = wait.1
        let answered = h.core.fire(.firstAnswer(wait.0), now: h.now)
        #expect(T.responses(answered, id).first?.statusCode == 200)
        let first = try #require(T.sent(answered, to: .oma).first?.0)
        #expect(try first.headers.contentType?.mediaType == "application/pidf+xml")
        #expect(!String(decoding: first.body, as: UTF8.self).contains("busy"))
        // The state arrives later: the watcher is notified (MS-PRES 3.7.5.4 row 4: 6500 is busy).
        h.now = h.now + .seconds(1)
        let (_, later) = h.receive(try T.enterpriseBENOTIFY(subscribe, cseq: 2, T.categories(availability: 6500, uri: "sip:bob@contoso.com")),
                                   from: .enterprise)
        let update = try #require(T.sent(later, to: .oma).first?.0)
        #expect(String(decoding: update.body, as: UTF8.self).contains("busy"))
        // The timer firing again (late) changes nothing.
        #expect(h.core.fire(.firstAnswer(wait.0), now: h.now).isEmpty)
    }
}
