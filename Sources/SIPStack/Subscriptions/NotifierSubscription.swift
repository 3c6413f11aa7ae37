public import NIOCore
public import SIPMessages
import _GatewayInternals

/// One subscription on the notifier side (RFC 6665 §4.2.2): a state machine that returns the
/// messages to send and the timers to set, so every transition is testable without I/O.
///
/// ```
///            accept(active)            expire / terminate / unsubscribe / NOTIFY failed
///   (new) ──────────────────▶ active ───────────────────────────────────────────▶ terminated
///     │ accept(pending)          ▲
///     ▼                          │ activate
///  pending ──────────────────────┘ (and pending ──▶ terminated likewise)
/// ```
///
/// The Microsoft dialect ([MS-PRES] §3.4.5.1.4, §4.4.2): NOTIFYs are sent as BENOTIFY (no
/// response expected) when the subscriber supports `ms-benotify`; with
/// `ms-piggyback-first-notify` the first notification's body rides in the 200 OK with
/// `ms-piggyback-cseq` and no separate first NOTIFY is sent.
public struct NotifierSubscription: Sendable {
    public enum Status: Sendable, Hashable, Codable {
        case pending
        case active
        case terminated(reason: String?)
    }

    /// What the driver must do, in order.
    public enum Action: Sendable {
        /// Send this response to the SUBSCRIBE.
        case respond(SIPResponse)
        /// Send this NOTIFY (or BENOTIFY) in the dialog.
        case notify(SIPRequest)
        /// (Re)arm the expiry timer: call ``expire(now:)`` at this deadline.
        case scheduleExpiry(NIODeadline)
        /// The subscription is over: cancel its timer and forget it.
        case remove
    }

    public private(set) var dialog: SIPDialog
    /// What was granted: the package, Event id, body type and options are shared with the other
    /// subscriptions that have the same (``SharedValue``); the duration is this subscription's.
    public private(set) var terms: SubscriptionTerms {
        get {
            var terms = sharedTerms.value
            terms.expires = expires
            return terms
        }
        set {
            expires = newValue.expires
            var shared = newValue
            shared.expires = 0
            if shared != sharedTerms.value { sharedTerms = SharedValues.terms.shared(shared) }
        }
    }
    public private(set) var status: Status
    public private(set) var expiresAt: NIODeadline
    /// This side's Contact for in-dialog requests and 2xx responses (one copy shared by every
    /// subscription with the same Contact).
    public var contact: SIPAddress {
        get { sharedContact.value }
        set { sharedContact = SharedValues.addresses.shared(newValue) }
    }
    private var sharedTerms: SharedValue<SubscriptionTerms>
    private var expires: UInt32
    private var sharedContact: SharedValue<SIPAddress>

    init(dialog: SIPDialog, terms: SubscriptionTerms, status: Status, expiresAt: NIODeadline, contact: SIPAddress) {
        self.dialog = dialog
        var shared = terms
        shared.expires = 0
        self.sharedTerms = SharedValues.terms.shared(shared)
        self.expires = terms.expires
        self.status = status
        self.expiresAt = expiresAt
        self.sharedContact = SharedValues.addresses.shared(contact)
    }

    /// Accepts a new subscription (RFC 6665 §4.2.1.1 then §4.2.1.2: "the notifier SHOULD
    /// immediately construct and send a NOTIFY"). `status` is `.active` or `.pending` (waiting
    /// for authorization, §4.2.1.3); `body` is the current state in `terms.bodyType` (nil for a
    /// NOTIFY without body, e.g. pending). `responseHeaders` go into the 200 (e.g. Record-Route
    /// copies, Server). With Expires 0 (a fetch, §4.4.3) the one NOTIFY says terminated;timeout
    /// and the subscription ends at once — unless the subscriber takes a piggybacked first
    /// notification: then the 200 OK itself carries the state (a [MS-PRES] §3.4.5.1.2 polling
    /// subscription).
    ///
    /// `bodyType` overrides the negotiated type for this first body only (a batch category
    /// SUBSCRIBE's 200 OK carries `multipart/related`, [MS-PRES] §2.2.2.4.2, while its later
    /// NOTIFYs carry categories).
    public static func accept(
        _ subscribe: SIPRequest, terms: SubscriptionTerms, status: Status, localTag: String,
        contact: SIPAddress, body: [UInt8]?, bodyType: String? = nil, responseHeaders: SIPHeaders = [],
        now: NIODeadline, overTLS: Bool = false, piggyback: Bool = true
    ) throws(SIPStackError) -> (NotifierSubscription, [Action]) {
        let dialog = try SIPDialog(uasFor: subscribe, localTag: localTag, overTLS: overTLS)
        var sub = NotifierSubscription(
            dialog: dialog, terms: terms, status: status,
            expiresAt: now + .seconds(Int64(terms.expires)), contact: contact)
        if terms.expires == 0 { sub.status = .terminated(reason: "timeout") }
        var actions = sub.answer(
            subscribe, body: body, bodyType: bodyType, responseHeaders: responseHeaders,
            piggyback: piggyback, now: now)
        if case .terminated = sub.status {
            actions.append(.remove)
        } else {
            actions.append(.scheduleExpiry(sub.expiresAt))
        }
        return (sub, actions)
    }

    /// A SUBSCRIBE inside the dialog (RFC 6665 §4.2.1.2): a refresh, or with Expires 0 an
    /// unsubscribe. `terms` come from ``SubscriptionTerms/evaluate(_:registry:negotiated:)``
    /// with this subscription's body type. Both are answered 200 and followed by a NOTIFY with
    /// the current state (§4.2.1.2: "a NOTIFY ... SHOULD be sent"); the unsubscribe's is the
    /// final one, `terminated;reason=timeout` (§4.2.1.4 — Kamailio sends the same).
    ///
    /// With `piggyback` (and a subscriber that supports it) the state rides in the 200 OK instead
    /// of a NOTIFY, as in the [MS-PRES] §4.5 refreshes that add resources to a batch dialog
    /// (`ms-piggyback-cseq: 2`, `: 3`).
    public mutating func refresh(
        _ subscribe: SIPRequest, terms newTerms: SubscriptionTerms,
        body: [UInt8]?, bodyType: String? = nil, responseHeaders: SIPHeaders = [],
        now: NIODeadline, piggyback: Bool = false
    ) -> [Action] {
        guard !isTerminated else {
            return [
                .respond(
                    SIPResponse(
                        replyingTo: subscribe, statusCode: 481, reasonPhrase: "Subscription Does Not Exist",
                        toTag: dialog.id.localTag))
            ]
        }
        if dialog.receive(subscribe) == .rejectOutOfOrder {
            return [
                .respond(
                    SIPResponse(
                        replyingTo: subscribe, statusCode: 500, reasonPhrase: "Out of Order CSeq",
                        toTag: dialog.id.localTag))
            ]
        }
        var updated = terms
        updated.expires = newTerms.expires
        updated.bodyType = newTerms.bodyType
        terms = updated
        if newTerms.expires == 0 {
            status = .terminated(reason: "timeout")
            return answer(
                subscribe, body: body, bodyType: bodyType, responseHeaders: responseHeaders,
                piggyback: false, now: now) + [.remove]
        }
        expiresAt = now + .seconds(Int64(newTerms.expires))
        return answer(
            subscribe, body: body, bodyType: bodyType, responseHeaders: responseHeaders,
            piggyback: piggyback, now: now) + [.scheduleExpiry(expiresAt)]
    }

    /// The 200 OK to a SUBSCRIBE of this dialog, and the NOTIFY with `body` — or, with `piggyback`
    /// and a subscriber that supports it, the body in the 200 OK with Event, subscription-state
    /// and `ms-piggyback-cseq` (the CSeq the NOTIFY would have had; [MS-PRES] §4.4.2, §4.5).
    private mutating func answer(
        _ subscribe: SIPRequest, body: [UInt8]?, bodyType: String?,
        responseHeaders: SIPHeaders, piggyback: Bool, now: NIODeadline
    ) -> [Action] {
        var ok = SIPResponse(replyingTo: subscribe, statusCode: 200, reasonPhrase: "OK", toTag: dialog.id.localTag)
        // RFC 3261 §12.1.1: "the UAS MUST copy all Record-Route header field values from the
        // request into the response ... and MUST maintain the order of those values", so that the
        // subscriber's in-dialog requests pass the record-routing proxies too (Kamailio in front
        // of OMA watchers answered their refreshes itself with 481 without them).
        for field in subscribe.headers where field.name == .recordRoute {
            ok.headers.append(.recordRoute, field.value)
        }
        ok.headers.append(.contact, contact.description)
        ok.headers.append(.expires, String(terms.expires))
        ok.headers.fields.append(contentsOf: responseHeaders.fields)
        guard piggyback && terms.supportsPiggyback else {
            return [.respond(ok), .notify(makeNotify(body: body, bodyType: bodyType, now: now))]
        }
        let cseq = dialog.nextLocalSequence()
        // A polling subscription ([MS-PRES] §3.4.5.1.2, example §4.7) gets its one answer here:
        // `subscription-state: terminated;expires=0`, and no state is kept.
        let state = isTerminated ? SIPSubscriptionState(state: .terminated, expires: 0) : subscriptionState(now: now)
        ok.headers.append(.event, eventHeader)
        ok.headers.append(.subscriptionState, state.description)
        ok.headers.append(.msPiggybackCSeq, String(cseq))
        ok.headers.append(.supported, "ms-benotify, ms-piggyback-first-notify")
        if let body, !body.isEmpty {
            ok.headers.append(.contentType, bodyType ?? terms.bodyType)
            ok.body = body
        }
        return [.respond(ok)]
    }

    /// The resource's state changed: one NOTIFY with the new body (RFC 6665 §4.2.2). Nothing
    /// while pending (the subscriber is not yet authorized to see state) or terminated.
    /// `bodyType` overrides the negotiated type for this body; `headers` are added to the NOTIFY
    /// (e.g. `Require: eventlist` on a batch dialog's notifications, [MS-PRES] §2.2.2.4.3).
    public mutating func stateChanged(
        body: [UInt8], bodyType: String? = nil, headers: SIPHeaders = [],
        now: NIODeadline
    ) -> [Action] {
        guard status == .active else { return [] }
        var notify = makeNotify(body: body, bodyType: bodyType, now: now)
        notify.headers.fields.append(contentsOf: headers.fields)
        return [.notify(notify)]
    }

    /// Authorization granted: pending → active, with a NOTIFY carrying the state (§4.2.1.3).
    public mutating func activate(body: [UInt8]?, now: NIODeadline) -> [Action] {
        guard status == .pending else { return [] }
        status = .active
        return [.notify(makeNotify(body: body, now: now))]
    }

    /// Ends the subscription with a final NOTIFY (`terminated;reason=...`, optional retry-after;
    /// RFC 6665 §4.2.2: deactivated, probation, rejected, timeout, giveup, noresource, invariant).
    public mutating func terminate(
        reason: String, retryAfter: UInt32? = nil, body: [UInt8]? = nil,
        now: NIODeadline
    ) -> [Action] {
        guard !isTerminated else { return [] }
        status = .terminated(reason: reason)
        return [.notify(makeNotify(body: body, now: now, retryAfter: retryAfter)), .remove]
    }

    /// The expiry timer fired (RFC 6665 §4.2.2: "the notifier ... sends a NOTIFY with
    /// Subscription-State terminated;reason=timeout"). Ignored when a refresh moved the deadline
    /// past `now` (a stale timer).
    public mutating func expire(now: NIODeadline) -> [Action] {
        guard !isTerminated, now >= expiresAt else { return [] }
        return terminate(reason: "timeout", now: now)
    }

    /// The outcome of a NOTIFY this subscription sent: a 481, a 408, a timeout or a transport
    /// error ends it without another NOTIFY (RFC 6665 §4.2.2: "the notifier MUST remove the
    /// subscription" on 481; §4.2.2 likewise on timeout / failure responses other than 489/420).
    /// Other failures leave it as is.
    public mutating func notifyFailed(status code: Int?) -> [Action] {
        guard !isTerminated else { return [] }
        let fatal = code.map { $0 == 481 || $0 == 408 || $0 >= 500 || ($0 >= 400 && $0 != 489 && $0 != 420) } ?? true
        guard fatal else { return [] }
        status = .terminated(reason: code.map { "notify-\($0)" } ?? "notify-failed")
        return [.remove]
    }

    public var isTerminated: Bool {
        if case .terminated = status { return true }
        return false
    }

    /// `presence;id=...` as sent in NOTIFY.
    var eventHeader: String {
        SIPEvent(
            package: terms.package.name,
            parameters: SIPParameters(terms.eventID.map { [SIPParameter(name: "id", value: $0)] } ?? [])
        ).description
    }

    /// The Subscription-State for a NOTIFY sent at `now` (§4.2.2: expires is the time left).
    func subscriptionState(now: NIODeadline, retryAfter: UInt32? = nil) -> SIPSubscriptionState {
        switch status {
        case .pending:
            return withRates(SIPSubscriptionState(state: .pending, expires: secondsLeft(now)))
        case .active:
            return withRates(SIPSubscriptionState(state: .active, expires: secondsLeft(now)))
        case .terminated(let reason):
            return SIPSubscriptionState(state: .terminated, reason: reason, retryAfter: retryAfter)
        }
    }

    /// RFC 6446: the rates in force, as the notifier applies them, with the subscription's state.
    private func withRates(_ state: SIPSubscriptionState) -> SIPSubscriptionState {
        var state = state
        if let rate = terms.maxRate { state.parameters.set("max-rate", SubscriptionTerms.decimal(rate)) }
        if let rate = terms.minRate { state.parameters.set("min-rate", SubscriptionTerms.decimal(rate)) }
        if let rate = terms.adaptiveMinRate {
            state.parameters.set("adaptive-min-rate", SubscriptionTerms.decimal(rate))
        }
        return state
    }

    private func secondsLeft(_ now: NIODeadline) -> UInt32 {
        let left = (expiresAt - now).nanoseconds
        guard left > 0 else { return 0 }
        return UInt32(clamping: (left + 999_999_999) / 1_000_000_000)
    }

    /// A NOTIFY (or BENOTIFY when the subscriber supports it and the subscription goes on:
    /// a final notification needs its response, so it stays a NOTIFY) for the current status.
    mutating func makeNotify(
        body: [UInt8]?, bodyType: String? = nil, now: NIODeadline,
        retryAfter: UInt32? = nil
    ) -> SIPRequest {
        let method: SIPMethod = terms.supportsBENotify && !isTerminated ? .benotify : .notify
        var request = dialog.makeRequest(
            method, contact: contact, body: body ?? [],
            contentType: bodyType ?? terms.bodyType)
        request.headers.append(.event, eventHeader)
        request.headers.append(.subscriptionState, subscriptionState(now: now, retryAfter: retryAfter).description)
        return request
    }
}
