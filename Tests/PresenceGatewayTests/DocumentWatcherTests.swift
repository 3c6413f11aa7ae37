import NIOCore
import PresenceDocuments
import MSPresenceEvents
import PresenceGateway
import PresenceMapping
import SIPMessages
import Testing

/// Flow 1 for enterprise SUBSCRIBEs without a category list ([MS-PRES] §4.10 PIDF, §4.11
/// msrtc.pidf): one OMA leg for the Request-URI, the body format negotiated from Accept in the
/// §1.3.3 order and kept for refreshes, the watcher's view (polite block, pending) in that format,
/// refresh, unsubscribe and termination.
@Suite struct DocumentWatcherTests {
    typealias T = GatewayCoreTests

    static let john = "sip:john@oma.example"

    /// An enterprise client's SUBSCRIBE for one presentity without body ([MS-PRES] §4.10 shape).
    static func subscribe(accept: String, from: String = "sip:carol@contoso.com", expires: Int = 3600, cseq: Int = 1,
                          toTag: String? = nil) throws -> SIPRequest {
        try T.request([
            "SUBSCRIBE \(john) SIP/2.0",
            "Via: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKd\(cseq)",
            "Max-Forwards: 69",
            "From: <\(from)>;tag=ent-d1;epid=5e434f57d3",
            "To: <\(john)>" + (toTag.map { ";tag=\($0)" } ?? ""),
            "Call-ID: ent-doc-1",
            "CSeq: \(cseq) SUBSCRIBE",
            "Contact: <\(from);opaque=user:epid:x;gruu>",
            "Event: presence",
            "Accept: \(accept)",
            "Expires: \(expires)",
        ])
    }

    /// What a watcher saw at the first answer: the 200, the first NOTIFY, the OMA SUBSCRIBE and its context.
    struct Answered {
        var id: GatewayCore.ServerRequestID
        var ok: SIPResponse
        var notify: SIPRequest
        var leg: SIPRequest
        var legContext: GatewayCore.Context
    }

    /// Subscribes, lets the OMA leg answer 200 and NOTIFY `state` with `body`, returns the answer.
    static func answered(_ h: inout T.Harness, accept: String, from: String = "sip:carol@contoso.com",
                         network: SourceNetwork = .sameEnterprise, state: String = "active;expires=3500", body: [UInt8]) throws -> Answered {
        let (id, actions) = h.receive(try subscribe(accept: accept, from: from), from: .enterprise, network: network)
        #expect(T.responses(actions, id).isEmpty, "answered before the OMA side spoke")
        let (leg, context) = try #require(T.sent(actions, to: .oma).first)
        _ = h.core.receive(SIPResponse(replyingTo: leg, statusCode: 200, toTag: "kam1", headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                           to: leg, context: context, now: h.now)
        let (notifyID, out) = h.receive(try T.omaNotify(leg, cseq: 2, state: state, body: body), from: .oma)
        #expect(T.responses(out, notifyID).first?.statusCode == 200)
        let ok = try #require(T.responses(out, id).first)
        let notify = try #require(T.sent(out, to: .enterprise).first?.0)
        return Answered(id: id, ok: ok, notify: notify, leg: leg, legContext: context)
    }

    @Test func pidfSubscribeFromEnterpriseIsBridgedToOneOMALegAndNotifiedInPIDF() throws {
        var h = try T.Harness()
        let (id, actions) = h.receive(try Self.subscribe(accept: "application/pidf+xml"), from: .enterprise, network: .sameEnterprise)
        // Not 400 any more: one PIDF SUBSCRIBE toward the Request-URI, with the watcher in From.
        #expect(T.responses(actions, id).isEmpty)
        let legs = T.sent(actions, to: .oma)
        #expect(legs.count == 1)
        let (leg, context) = try #require(legs.first)
        #expect(leg.uri.description == Self.john)
        #expect(try leg.headers.from?.uri.description == "sip:carol@contoso.com")
        #expect(try leg.headers.accept?.first?.subtype == "pidf+xml")
        _ = h.core.receive(SIPResponse(replyingTo: leg, statusCode: 200, toTag: "kam1", headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                           to: leg, context: context, now: h.now)
        let (_, out) = h.receive(try T.omaNotify(leg, cseq: 2, body: T.pidf(Self.john, activity: "away")), from: .oma)
        #expect(T.responses(out, id).first?.statusCode == 200)
        // RFC 6665 §4.2.1.2: a NOTIFY with the state follows the 200, as PIDF (RFC 3863).
        let notify = try #require(T.sent(out, to: .enterprise).first?.0)
        #expect(notify.method == .notify)
        #expect(try notify.headers.contentType?.mediaType == "application/pidf+xml")
        #expect(try notify.headers.subscriptionState?.state == .active)
        let first = try PIDFDocument(bytes: notify.body)
        #expect(first.entity == Self.john)
        #expect(String(decoding: notify.body, as: UTF8.self).contains("away"))
        // A change reaches the watcher in PIDF; the same state again does not.
        let (_, busy) = h.receive(try T.omaNotify(leg, cseq: 3, body: T.pidf(Self.john, activity: "busy")), from: .oma)
        let changed = try #require(T.sent(busy, to: .enterprise).first?.0)
        #expect(try changed.headers.contentType?.mediaType == "application/pidf+xml")
        #expect(String(decoding: changed.body, as: UTF8.self).contains("busy"))
        let (_, again) = h.receive(try T.omaNotify(leg, cseq: 4, body: T.pidf(Self.john, activity: "busy")), from: .oma)
        #expect(T.sent(again, to: .enterprise).isEmpty)
        #expect(h.core.counts.enterpriseWatches == 1 && h.core.counts.omaLegs == 1)
    }

    /// [MS-PRES] §1.3.3: msrtc.pidf is preferred to PIDF when Accept offers both, whatever the
    /// order; the refresh keeps it (§4.11).
    @Test func msrtcPIDFIsPreferredToPIDFAndKeptForRefreshes() throws {
        var h = try T.Harness()
        let a = try Self.answered(&h, accept: "application/pidf+xml, text/xml+msrtc.pidf", body: T.pidf(Self.john, activity: "away"))
        #expect(try a.notify.headers.contentType?.mediaType == "text/xml+msrtc.pidf")
        let tag = try #require(try a.ok.headers.to?.tag)
        let (refreshID, refreshed) = h.receive(try Self.subscribe(accept: "application/pidf+xml, text/xml+msrtc.pidf", cseq: 2, toTag: tag),
                                               from: .enterprise, network: .sameEnterprise)
        #expect(T.responses(refreshed, refreshID).first?.statusCode == 200)
        let notify = try #require(T.sent(refreshed, to: .enterprise).first?.0)
        #expect(try notify.headers.contentType?.mediaType == "text/xml+msrtc.pidf")
        #expect(notify.body == a.notify.body)
    }

    /// docs/flows.md, "Containers and polite blocking": a politely blocked watcher gets, byte for
    /// byte, what an allowed watcher of a
    /// presentity that never published gets (the OMA NOTIFY without body, RFC 3856 §6.6.2), in
    /// PIDF and in msrtc.pidf, and is never told the real changes.
    @Test(arguments: ["application/pidf+xml", "text/xml+msrtc.pidf"])
    func politelyBlockedDocumentWatcherGetsTheNeverPublishedBytes(_ accept: String) throws {
        var h = try T.Harness()
        // The default policy politely blocks public-cloud watchers.
        let blocked = try Self.answered(&h, accept: accept, from: "sip:pc@cloud.example", network: .publicCloud,
                                        body: T.pidf(Self.john, activity: "on-the-phone"))
        var fresh = try T.Harness()
        let never = try Self.answered(&fresh, accept: accept, from: "sip:pc@cloud.example", network: .federated, body: [])
        #expect(blocked.notify.body == never.notify.body)
        #expect(try blocked.notify.headers.contentType?.mediaType == accept)
        let (_, later) = h.receive(try T.omaNotify(blocked.leg, cseq: 3, body: T.pidf(Self.john, activity: "busy")), from: .oma)
        #expect(T.sent(later, to: .enterprise).isEmpty)
        // An allowed watcher of the published state sees something else.
        var other = try T.Harness()
        let allowed = try Self.answered(&other, accept: accept, from: "sip:pc@cloud.example", network: .federated,
                                        body: T.pidf(Self.john, activity: "on-the-phone"))
        #expect(allowed.notify.body != never.notify.body)
    }

    /// RFC 6665 §4.2.1.2 / §4.1.2.3: the unsubscribe is answered 200 and followed by the final
    /// NOTIFY (terminated); the OMA leg is unsubscribed.
    @Test func unsubscribeEndsTheWatcherWithAFinalNotifyAndUnsubscribesTheOMALeg() throws {
        var h = try T.Harness()
        let a = try Self.answered(&h, accept: "application/pidf+xml", body: T.pidf(Self.john, activity: "away"))
        let tag = try #require(try a.ok.headers.to?.tag)
        let (id, out) = h.receive(try Self.subscribe(accept: "application/pidf+xml", expires: 0, cseq: 2, toTag: tag),
                                  from: .enterprise, network: .sameEnterprise)
        #expect(T.responses(out, id).first?.statusCode == 200)
        let final = try #require(T.sent(out, to: .enterprise).first?.0)
        #expect(try final.headers.subscriptionState?.state == .terminated)
        let unsubscribe = try #require(T.sent(out, to: .oma).first?.0)
        #expect(unsubscribe.headers[.expires] == "0")
        #expect(h.core.counts.enterpriseWatches == 0)
        // A further SUBSCRIBE in the ended dialog finds nothing.
        let (lateID, late) = h.receive(try Self.subscribe(accept: "application/pidf+xml", cseq: 3, toTag: tag), from: .enterprise)
        #expect(T.responses(late, lateID).first?.statusCode == 481)
    }

    /// The OMA subscription ends (terminated;reason=rejected): the watcher's dialog ends with
    /// the reason (RFC 6665 §4.2.2).
    @Test func omaTerminationEndsTheDocumentWatcherWithTheReason() throws {
        var h = try T.Harness()
        let a = try Self.answered(&h, accept: "application/pidf+xml", body: T.pidf(Self.john, activity: "away"))
        let (_, out) = h.receive(try T.omaNotify(a.leg, cseq: 3, state: "terminated;reason=rejected", body: []), from: .oma)
        let final = try #require(T.sent(out, to: .enterprise).first?.0)
        let state = try #require(try final.headers.subscriptionState)
        #expect(state.state == .terminated)
        #expect(state.reason == "rejected")
        #expect(h.core.counts.enterpriseWatches == 0 && h.core.counts.omaLegs == 0)
    }

    /// RFC 6665 §4.2.1.3: while the OMA presentity has not authorized the watcher the
    /// subscription is pending (no state); its first authorized NOTIFY activates it.
    @Test func pendingOMALegMakesThePIDFSubscriptionPendingUntilAuthorized() throws {
        var h = try T.Harness()
        let a = try Self.answered(&h, accept: "application/pidf+xml", state: "pending;expires=3500", body: [])
        #expect(try a.notify.headers.subscriptionState?.state == .pending)
        #expect(a.notify.body.isEmpty)
        let (_, out) = h.receive(try T.omaNotify(a.leg, cseq: 3, body: T.pidf(Self.john, activity: "busy")), from: .oma)
        let active = try #require(T.sent(out, to: .enterprise).first?.0)
        #expect(try active.headers.subscriptionState?.state == .active)
        #expect(String(decoding: active.body, as: UTF8.self).contains("busy"))
    }

    /// A slow OMA side: the watcher is answered after the piggyback wait with the empty view,
    /// then notified when the state arrives.
    @Test func slowOMASideAnswersThePIDFWatcherAfterTheWait() throws {
        var h = try T.Harness()
        let (id, actions) = h.receive(try Self.subscribe(accept: "application/pidf+xml"), from: .enterprise, network: .sameEnterprise)
        let (leg, _) = try #require(T.sent(actions, to: .oma).first)
        let wait = try #require(actions.compactMap { if case .schedule(.firstAnswer(let c), let at) = $0 { (c, at) } else { nil } }.first)
        #expect(wait.1 == h.now + .milliseconds(500))
        h.now = wait.1
        let answered = h.core.fire(.firstAnswer(wait.0), now: h.now)
        #expect(T.responses(answered, id).first?.statusCode == 200)
        let first = try #require(T.sent(answered, to: .enterprise).first?.0)
        #expect(try first.headers.contentType?.mediaType == "application/pidf+xml")
        let (_, later) = h.receive(try T.omaNotify(leg, cseq: 2, body: T.pidf(Self.john, activity: "away")), from: .oma)
        let update = try #require(T.sent(later, to: .enterprise).first?.0)
        #expect(String(decoding: update.body, as: UTF8.self).contains("away"))
    }

    /// A fetch (Expires 0, RFC 6665 §4.4.3): one answer with the state, a NOTIFY that says
    /// terminated, and nothing kept: the OMA leg is unsubscribed.
    @Test func pidfFetchIsAnsweredOnceAndKeepsNothing() throws {
        var h = try T.Harness()
        let (id, actions) = h.receive(try Self.subscribe(accept: "application/pidf+xml", expires: 0), from: .enterprise, network: .sameEnterprise)
        let (leg, context) = try #require(T.sent(actions, to: .oma).first)
        _ = h.core.receive(SIPResponse(replyingTo: leg, statusCode: 200, toTag: "kam1", headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                           to: leg, context: context, now: h.now)
        let (_, out) = h.receive(try T.omaNotify(leg, cseq: 2, body: T.pidf(Self.john, activity: "away")), from: .oma)
        #expect(T.responses(out, id).first?.statusCode == 200)
        let notify = try #require(T.sent(out, to: .enterprise).first?.0)
        #expect(try notify.headers.subscriptionState?.state == .terminated)
        #expect(String(decoding: notify.body, as: UTF8.self).contains("away"))
        #expect(T.sent(out, to: .oma).contains { $0.0.headers[.expires] == "0" })
        #expect(h.core.counts.enterpriseWatches == 0)
    }
}
