import NIOCore
import SIPMessages
import SIPStack
import Testing

@Suite struct NotifierSubscriptionTests {
    let contact: SIPAddress = {
        do { return try SIPAddress("<sip:gw@198.51.100.1:5060>") } catch { fatalError("\(error)") }
    }()
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    let body = Array("<presence/>".utf8)

    private func terms(_ request: SIPRequest) -> SubscriptionTerms {
        guard case .accept(let t) = SubscriptionTerms.evaluate(request, registry: SIPEventPackageRegistry()) else {
            fatalError("rejected")
        }
        return t
    }

    private func start(_ request: SIPRequest, status: NotifierSubscription.Status = .active) throws
        -> (NotifierSubscription, [NotifierSubscription.Action]) {
        try NotifierSubscription.accept(request, terms: terms(request), status: status, localTag: "gw1",
                                        contact: contact, body: body, now: t0)
    }

    private func responses(_ actions: [NotifierSubscription.Action]) -> [SIPResponse] {
        actions.compactMap { if case .respond(let r) = $0 { return r } else { return nil } }
    }

    private func notifies(_ actions: [NotifierSubscription.Action]) -> [SIPRequest] {
        actions.compactMap { if case .notify(let r) = $0 { return r } else { return nil } }
    }

    @Test func acceptAnswers200ThenSendsTheFirstNotifyAtOnce() throws {
        let (sub, actions) = try start(presenceSubscribe())
        let ok = try #require(responses(actions).first)
        #expect(ok.statusCode == 200)
        #expect(try ok.headers.expires == 600)
        #expect(try ok.headers.to?.tag == "gw1")
        let notify = try #require(notifies(actions).first)
        #expect(notify.method == .notify)
        #expect(try notify.headers.subscriptionState == SIPSubscriptionState(state: .active, expires: 600))
        #expect(try notify.headers.event?.package == "presence")
        #expect(try notify.headers.contentType?.mediaType == "application/pidf+xml")
        #expect(notify.body == body)
        #expect(sub.status == .active)
        guard case .scheduleExpiry(let at) = actions.last else { Issue.record("no expiry timer"); return }
        #expect(at == t0 + .seconds(600))
    }

    /// RFC 3261 §12.1.1: the UAS copies every Record-Route of the dialog-creating request into
    /// its 2xx, in order, so the subscriber's route set holds the record-routing proxies.
    @Test func the200CopiesTheSubscribesRecordRouteInOrder() throws {
        let (_, actions) = try start(presenceSubscribe())
        let ok = try #require(responses(actions).first)
        #expect(try ok.headers.recordRoute.map(\.uri.description) == ["sip:p1.oma.example;lr", "sip:p2.oma.example;lr"])
    }

    @Test func pendingSubscriptionSaysPendingAndSendsNoStateUntilActivated() throws {
        var (sub, actions) = try start(presenceSubscribe(), status: .pending)
        #expect(try notifies(actions).first?.headers.subscriptionState?.state == .pending)
        #expect(sub.stateChanged(body: body, now: t0).isEmpty)
        let activated = notifies(sub.activate(body: body, now: t0 + .seconds(10)))
        // RFC 6665 §4.2.2: expires in NOTIFY is the time left.
        #expect(try activated.first?.headers.subscriptionState == SIPSubscriptionState(state: .active, expires: 590))
    }

    @Test func piggybackPutsTheFirstNotificationInThe200AndSendsNoNotify() throws {
        let request = presenceSubscribe(accept: "application/msrtc-event-categories+xml",
                                        supported: "ms-piggyback-first-notify, ms-benotify")
        var (sub, actions) = try start(request)
        #expect(notifies(actions).isEmpty)
        let ok = try #require(responses(actions).first)
        // [MS-PRES] §4.4.2: ms-piggyback-cseq 1, subscription-state active, the body.
        #expect(try ok.headers.msPiggybackCSeq == 1)
        #expect(try ok.headers.subscriptionState?.state == .active)
        #expect(ok.body == body)
        // The next notification is CSeq 2, sent as BENOTIFY (ms-benotify).
        let next = try #require(notifies(sub.stateChanged(body: body, now: t0)).first)
        #expect(next.method == .benotify)
        #expect(try next.headers.cseq == SIPCSeq(2, .benotify))
    }

    @Test func fetchGetsOneTerminatedNotifyAndKeepsNoState() throws {
        let (sub, actions) = try start(presenceSubscribe(expires: "0"))
        let notify = try #require(notifies(actions).first)
        #expect(try notify.headers.subscriptionState?.state == .terminated)
        #expect(try notify.headers.subscriptionState?.reason == "timeout")
        #expect(sub.isTerminated)
        guard case .remove = actions.last else { Issue.record("fetch kept state"); return }
    }

    @Test func refreshMovesTheDeadlineAndUnsubscribeSendsTheFinalNotify() throws {
        var (sub, _) = try start(presenceSubscribe())
        let refreshed = sub.refresh(presenceSubscribe(expires: "600", cseq: 2, toTag: "gw1"),
                                    terms: terms(presenceSubscribe()), body: body, now: t0 + .seconds(500))
        #expect(sub.expiresAt == t0 + .seconds(1100))
        #expect(responses(refreshed).first?.statusCode == 200)
        // A stale timer at the old deadline does nothing.
        #expect(sub.expire(now: t0 + .seconds(600)).isEmpty)
        let unsubscribe = presenceSubscribe(expires: "0", cseq: 3, toTag: "gw1")
        let bye = sub.refresh(unsubscribe, terms: terms(unsubscribe), body: nil, now: t0 + .seconds(700))
        #expect(try notifies(bye).first?.headers.subscriptionState?.state == .terminated)
        #expect(sub.isTerminated)
    }

    @Test func expiryAtTheDeadlineSendsTerminatedTimeout() throws {
        var (sub, _) = try start(presenceSubscribe())
        #expect(sub.expire(now: t0 + .seconds(599)).isEmpty)
        let actions = sub.expire(now: t0 + .seconds(600))
        #expect(try notifies(actions).first?.headers.subscriptionState?.reason == "timeout")
        #expect(sub.isTerminated)
    }

    @Test func terminateCarriesReasonAndRetryAfter() throws {
        var (sub, _) = try start(presenceSubscribe())
        let actions = sub.terminate(reason: "probation", retryAfter: 120, now: t0)
        let state = try #require(try notifies(actions).first?.headers.subscriptionState)
        #expect(state == SIPSubscriptionState(state: .terminated, reason: "probation", retryAfter: 120))
    }

    @Test func notify481Or408OrTransportFailureEndsTheSubscriptionSilently() throws {
        for code: Int? in [481, 408, nil] {
            var (sub, _) = try start(presenceSubscribe())
            let actions = sub.notifyFailed(status: code)
            #expect(sub.isTerminated)
            #expect(notifies(actions).isEmpty)
        }
    }

    @Test func refreshAfterTerminationIs481AndOutOfOrderIs500() throws {
        var (sub, _) = try start(presenceSubscribe(cseq: 4))
        let stale = sub.refresh(presenceSubscribe(cseq: 3, toTag: "gw1"), terms: terms(presenceSubscribe()), body: nil, now: t0)
        #expect(responses(stale).first?.statusCode == 500)
        _ = sub.terminate(reason: "deactivated", now: t0)
        let late = sub.refresh(presenceSubscribe(cseq: 5, toTag: "gw1"), terms: terms(presenceSubscribe()), body: nil, now: t0)
        #expect(responses(late).first?.statusCode == 481)
    }
}
