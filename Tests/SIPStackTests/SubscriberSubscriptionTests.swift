import NIOCore
import SIPMessages
import SIPStack
import Testing

@Suite struct SubscriberSubscriptionTests {
    let t0 = NIODeadline.uptimeNanoseconds(5_000_000_000_000)

    private func configuration() throws -> SubscriberSubscription.Configuration {
        SubscriberSubscription.Configuration(
            target: try SIPURI("sip:bob@oma.example"), from: try SIPAddress("<sip:alice@contoso.com>"),
            to: try SIPAddress("<sip:bob@oma.example>"), contact: try SIPAddress("<sip:gw@198.51.100.1:5060>"),
            accept: ["application/pidf+xml"], expires: 3600)
    }

    private func sent(_ actions: [SubscriberSubscription.Action]) -> [SIPRequest] {
        actions.compactMap { if case .send(let r) = $0 { return r } else { return nil } }
    }

    private func okFor(_ request: SIPRequest, expires: Int, extra: String = "") -> SIPResponse {
        var r = SIPResponse(replyingTo: request, statusCode: 200, toTag: "srv1")
        r.headers.append(.contact, "<sip:bob@203.0.113.7:5060>")
        r.headers.append(.expires, String(expires))
        return r
    }

    private func notify(cseq: Int, state: String, body: String = "<presence/>") -> SIPRequest {
        request("""
            NOTIFY sip:gw@198.51.100.1:5060 SIP/2.0
            Via: SIP/2.0/UDP 203.0.113.7:5060;branch=z9hG4bKn\(cseq)
            Max-Forwards: 70
            From: <sip:bob@oma.example>;tag=srv1
            To: <sip:alice@contoso.com>;tag=w1
            Call-ID: c1@gw
            CSeq: \(cseq) NOTIFY
            Contact: <sip:bob@203.0.113.7:5060>
            Event: presence
            Subscription-State: \(state)
            Content-Type: application/pidf+xml
            Content-Length: \(body.utf8.count)

            \(body)
            """)
    }

    @Test func initialSubscribeHasEventAcceptExpiresAndAFromTag() throws {
        let (_, actions) = SubscriberSubscription.start(try configuration(), callID: "c1@gw", localTag: "w1")
        let subscribe = try #require(sent(actions).first)
        #expect(subscribe.method == .subscribe)
        #expect(try subscribe.headers.event?.package == "presence")
        #expect(subscribe.headers[.accept] == "application/pidf+xml")
        #expect(try subscribe.headers.expires == 3600)
        #expect(try subscribe.headers.from?.tag == "w1")
        #expect(try subscribe.headers.to?.tag == nil)
    }

    /// The dialog holds the Call-ID and local tag once it exists; the subscription's own stay
    /// the same before, during and after it.
    @Test func callIDAndLocalTagOutliveTheDialog() throws {
        var (sub, actions) = SubscriberSubscription.start(try configuration(), callID: "c1@gw", localTag: "w1")
        #expect(sub.callID == "c1@gw" && sub.localTag == "w1" && sub.dialog == nil)
        let subscribe = try #require(sent(actions).first)
        _ = sub.receive(okFor(subscribe, expires: 600), now: t0, jitter: 0.5)
        #expect(sub.dialog?.id == SIPDialog.ID(callID: "c1@gw", localTag: "w1", remoteTag: "srv1"))
        #expect(sub.callID == "c1@gw" && sub.localTag == "w1")
        _ = sub.receive(notify: notify(cseq: 1, state: "terminated;reason=deactivated"), now: t0, jitter: 0.5)
        #expect(sub.dialog == nil)
        #expect(sub.callID == "c1@gw" && sub.localTag == "w1")
    }

    @Test func okCreatesTheDialogAndSchedulesARefreshBeforeExpiry() throws {
        var (sub, actions) = SubscriberSubscription.start(try configuration(), callID: "c1@gw", localTag: "w1")
        let subscribe = try #require(sent(actions).first)
        let after = sub.receive(okFor(subscribe, expires: 600), now: t0, jitter: 0.5)
        #expect(sub.dialog?.id.remoteTag == "srv1")
        #expect(sub.status == .active)
        guard case .scheduleRefresh(let at) = after.first else { Issue.record("no refresh"); return }
        // Granted 600 s (shortened by the notifier): refresh well before, after at least 80 %.
        #expect(at < t0 + .seconds(600) && at >= t0 + .seconds(480))
        let refresh = try #require(sent(sub.refresh(now: at)).first)
        #expect(try refresh.headers.to?.tag == "srv1")
        #expect(try refresh.headers.cseq == SIPCSeq(2, .subscribe))
        #expect(refresh.uri.host == "203.0.113.7")
    }

    @Test func notifyBeforeThe200CreatesTheDialog() throws {
        // RFC 6665 §4.1.2.4.
        var (sub, actions) = SubscriberSubscription.start(try configuration(), callID: "c1@gw", localTag: "w1")
        let subscribe = try #require(sent(actions).first)
        let early = sub.receive(notify: notify(cseq: 1, state: "active;expires=600"), now: t0, jitter: 0)
        guard case .respond(let answer) = early.first else { Issue.record("no answer"); return }
        #expect(answer.statusCode == 200)
        #expect(sub.dialog?.id.remoteTag == "srv1")
        #expect(sub.status == .active)
        _ = sub.receive(okFor(subscribe, expires: 600), now: t0, jitter: 0)
        #expect(sub.dialog?.remoteSequence == 1)
        #expect(sub.status == .active)
    }

    @Test func terminatedReasonsDecideWhetherToResubscribe() throws {
        // RFC 6665 §4.1.3.
        let cases: [(String, TimeAmount?)] = [
            ("terminated;reason=deactivated", .seconds(0)),
            ("terminated;reason=timeout", .seconds(0)),
            ("terminated;reason=probation;retry-after=90", .seconds(90)),
            ("terminated;reason=giveup", .seconds(60)),
            ("terminated;reason=rejected", nil),
            ("terminated;reason=noresource", nil),
            ("terminated;reason=invariant", nil),
        ]
        for (state, delay) in cases {
            var (sub, actions) = SubscriberSubscription.start(try configuration(), callID: "c1@gw", localTag: "w1")
            _ = sub.receive(okFor(try #require(sent(actions).first), expires: 600), now: t0, jitter: 0)
            let result = sub.receive(notify: notify(cseq: 2, state: state, body: ""), now: t0, jitter: 0)
            let retry = result.compactMap { if case .scheduleResubscribe(let at) = $0 { return at } else { return nil } }.first
            #expect(retry == delay.map { t0 + $0 }, "\(state)")
            if case .terminated = sub.status {} else { Issue.record("not terminated: \(state)") }
        }
    }

    @Test func intervalTooBriefRetriesWithMinExpires() throws {
        var (sub, actions) = SubscriberSubscription.start(try configuration(), callID: "c1@gw", localTag: "w1")
        var brief = SIPResponse(replyingTo: try #require(sent(actions).first), statusCode: 423)
        brief.headers.append(.minExpires, "7200")
        let retry = try #require(sent(sub.receive(brief, now: t0, jitter: 0)).first)
        #expect(try retry.headers.expires == 7200)
        #expect(try retry.headers.cseq?.sequence == 2)
    }

    @Test func unsubscribeSendsExpiresZeroAndEndsOnTheFinalNotify() throws {
        var (sub, actions) = SubscriberSubscription.start(try configuration(), callID: "c1@gw", localTag: "w1")
        _ = sub.receive(okFor(try #require(sent(actions).first), expires: 600), now: t0, jitter: 0)
        let bye = try #require(sent(sub.unsubscribe()).first)
        #expect(try bye.headers.expires == 0)
        let final = sub.receive(notify: notify(cseq: 2, state: "terminated;reason=timeout", body: ""), now: t0, jitter: 0)
        // No resubscription after our own unsubscribe.
        #expect(!final.contains { if case .scheduleResubscribe = $0 { return true } else { return false } })
        if case .terminated = sub.status {} else { Issue.record("still \(sub.status)") }
    }

    @Test func rejectedInitialSubscribeEndsWithItsStatus() throws {
        var (sub, actions) = SubscriberSubscription.start(try configuration(), callID: "c1@gw", localTag: "w1")
        let forbidden = SIPResponse(replyingTo: try #require(sent(actions).first), statusCode: 403)
        let result = sub.receive(forbidden, now: t0, jitter: 0)
        guard case .ended(let reason) = result.last else { Issue.record("not ended"); return }
        #expect(reason == "403")
    }
}
