public import NIOCore
public import SIPMessages

/// One subscription on the subscriber side (RFC 6665 §4.1): sends SUBSCRIBE, creates the dialog
/// from the 200 or from a NOTIFY that arrives first (§4.1.2.4), refreshes before expiry,
/// handles terminated NOTIFYs per reason (§4.1.3), and unsubscribes. A state machine that returns
/// actions; the driver sends, schedules and delivers.
public struct SubscriberSubscription: Sendable {
    /// What to subscribe to, and how.
    public struct Configuration: Sendable, Hashable {
        /// Request-URI of the initial SUBSCRIBE (the resource, or a pool GRUU for [MS-PRES]
        /// §3.4.5.1.3 resubscribe).
        public var target: SIPURI
        /// From: this side's identity (the watcher), without tag.
        public var from: SIPAddress
        /// To: the resource.
        public var to: SIPAddress
        /// This side's Contact.
        public var contact: SIPAddress
        public var package: SIPEventPackage
        public var eventID: String?
        /// Accept values, in order of preference.
        public var accept: [String]
        /// Requested duration in seconds.
        public var expires: UInt32
        /// Supported option tags (`ms-benotify`, `ms-piggyback-first-notify`, `eventlist`).
        public var supported: [String]
        /// Further headers for every SUBSCRIBE (Require: adhoclist, categoryList; ...).
        public var extraHeaders: SIPHeaders
        /// Body of the SUBSCRIBE ([MS-PRES] §2.2.2.4 batch category list) and its type.
        public var body: [UInt8]
        public var bodyType: String?
        /// The owner gives the body of every later SUBSCRIBE (``SubscriberSubscription/resubscribe(body:now:)``,
        /// as a batch subscription does, [MS-PRES] §4.5): the body is then kept only while its
        /// SUBSCRIBE awaits a final response (a 423 retry resends it) and dropped after, so that
        /// a subscription does not hold a request body for hours. Default false.
        public var bodyGivenPerRequest: Bool
        /// RFC 6446 rate control asked of the notifier, in seconds: at least `minInterval` and at
        /// most `maxInterval` between two notifications, sent in the Event header as the rates
        /// `max-rate` = 1 / minInterval and `min-rate` = 1 / maxInterval; nil asks for none.
        public var minInterval: UInt32?
        public var maxInterval: UInt32?

        public init(
            target: SIPURI, from: SIPAddress, to: SIPAddress, contact: SIPAddress,
            package: SIPEventPackage = .presence, eventID: String? = nil,
            accept: [String] = [SIPBodyType.pidf], expires: UInt32 = 3600,
            supported: [String] = [], extraHeaders: SIPHeaders = [],
            body: [UInt8] = [], bodyType: String? = nil, bodyGivenPerRequest: Bool = false,
            minInterval: UInt32? = nil, maxInterval: UInt32? = nil
        ) {
            self.target = target
            self.from = from
            self.to = to
            self.contact = contact
            self.package = package
            self.eventID = eventID
            self.accept = accept
            self.expires = expires
            self.supported = supported
            self.extraHeaders = extraHeaders
            self.body = body
            self.bodyType = bodyType
            self.bodyGivenPerRequest = bodyGivenPerRequest
            self.minInterval = minInterval
            self.maxInterval = maxInterval
        }
    }

    public enum Status: Sendable, Hashable, Codable {
        /// SUBSCRIBE sent, neither a 2xx nor a NOTIFY seen yet.
        case subscribing
        case pending
        case active
        /// Unsubscribe sent; waiting for the final NOTIFY.
        case unsubscribing
        case terminated(reason: String?)
    }

    /// One notification for the application.
    public struct Notification: Sendable, Hashable {
        public var state: SIPSubscriptionState
        /// The whole Content-Type, parameters (such as a multipart boundary) included.
        public var contentType: SIPContentType?
        public var body: [UInt8]
        /// True when it came in the 200 OK ([MS-PRES] §4.4.2 piggyback).
        public var piggybacked: Bool
    }

    public enum Action: Sendable {
        /// Send this SUBSCRIBE (initial, refresh, retry or unsubscribe).
        case send(SIPRequest)
        /// Answer the NOTIFY just received (not for BENOTIFY, which takes no response).
        case respond(SIPResponse)
        /// Call ``refresh(now:)`` at this deadline.
        case scheduleRefresh(NIODeadline)
        /// The subscription ended and may be started afresh (a new dialog) at this deadline
        /// (RFC 6665 §4.1.3: deactivated/timeout at once, probation/giveup after retry-after).
        case scheduleResubscribe(NIODeadline)
        case deliver(Notification)
        /// Over for good; `status` says why (a final response code or a reason).
        case ended(reason: String)
    }

    /// What this subscription was started with (and changed since: a longer Expires after 423,
    /// a new body from ``resubscribe(body:now:)``). Stored compactly (``StoredConfiguration``) and
    /// rebuilt when read.
    public private(set) var configuration: Configuration {
        get { stored.configuration }
        set { stored = StoredConfiguration(newValue) }
    }
    public internal(set) var status: Status
    /// The dialog, once a 2xx or a NOTIFY established it.
    public private(set) var dialog: SIPDialog? {
        get {
            switch link {
            case .identifiers: nil
            case .dialog(let dialog), .otherDialog(let dialog, _, _): dialog
            }
        }
        set { link = Link(newValue, callID: callID, localTag: localTag) }
    }
    /// The Call-ID of every SUBSCRIBE of this subscription.
    public var callID: String {
        switch link {
        case .identifiers(let callID, _), .otherDialog(_, let callID, _): callID
        case .dialog(let dialog): dialog.id.callID
        }
    }
    /// The From tag of every SUBSCRIBE of this subscription.
    public var localTag: String {
        switch link {
        case .identifiers(_, let localTag), .otherDialog(_, _, let localTag): localTag
        case .dialog(let dialog): dialog.id.localTag
        }
    }
    /// The Call-ID and local tag, held by the dialog once there is one (which repeats them):
    /// 32 bytes less in every subscription a gateway keeps.
    private var link: Link

    private enum Link: Sendable {
        case identifiers(callID: String, localTag: String)
        /// A dialog with this subscription's Call-ID and local tag.
        case dialog(SIPDialog)
        /// A dialog whose identifiers differ from the subscription's (not expected: responses
        /// and NOTIFYs echo both); out of line.
        indirect case otherDialog(SIPDialog, callID: String, localTag: String)

        init(_ dialog: SIPDialog?, callID: String, localTag: String) {
            guard let dialog else {
                self = .identifiers(callID: callID, localTag: localTag)
                return
            }
            self =
                dialog.id.callID == callID && dialog.id.localTag == localTag
                ? .dialog(dialog) : .otherDialog(dialog, callID: callID, localTag: localTag)
        }
    }
    /// The SUBSCRIBE awaiting its response; nil once it has a final one.
    public private(set) var outstanding: SIPRequest? {
        get { outstandingBox?.value }
        set { outstandingBox = newValue.map(Box.init) }
    }
    /// Granted duration of the last 2xx or Subscription-State expires.
    public internal(set) var expiresAt: NIODeadline?
    var cseq: UInt32 = 0
    private var stored: StoredConfiguration
    /// Held out of line: a request is hundreds of bytes and only exists while a transaction runs.
    private var outstandingBox: Box<SIPRequest>?

    final class Box<Value: Sendable>: Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    /// Starts a subscription: the initial SUBSCRIBE (out of dialog, CSeq 1).
    public static func start(_ configuration: Configuration, callID: String, localTag: String) -> (
        SubscriberSubscription, [Action]
    ) {
        var sub = SubscriberSubscription(
            configuration: configuration, status: .subscribing, dialog: nil,
            callID: callID, localTag: localTag)
        let request = sub.initialRequest(expires: configuration.expires)
        return (sub, [.send(request)])
    }

    init(configuration: Configuration, status: Status, dialog: SIPDialog?, callID: String, localTag: String) {
        self.stored = StoredConfiguration(configuration)
        self.status = status
        self.link = Link(dialog, callID: callID, localTag: localTag)
    }

    private mutating func initialRequest(expires: UInt32) -> SIPRequest {
        let configuration = self.configuration
        cseq += 1
        var h = SIPHeaders()
        var from = configuration.from
        from.tag = localTag
        h.append(.maxForwards, "70")
        h.append(.from, from.description)
        h.append(.to, configuration.to.description)
        h.append(.callID, callID)
        h.append(.cseq, "\(cseq) SUBSCRIBE")
        h.append(.contact, configuration.contact.description)
        addSubscriptionHeaders(&h, expires: expires)
        let request = SIPRequest(method: .subscribe, uri: configuration.target, headers: h, body: configuration.body)
        outstanding = request
        return request
    }

    private func addSubscriptionHeaders(_ h: inout SIPHeaders, expires: UInt32) {
        let profile = stored.profile.value
        h.append(.event, profile.event)
        if !profile.accept.isEmpty { h.append(.accept, profile.accept.joined(separator: ", ")) }
        if !profile.supported.isEmpty { h.append(.supported, profile.supported.joined(separator: ", ")) }
        h.append(.expires, String(expires))
        for field in profile.extraHeaders { h.fields.append(field) }
        if let type = profile.bodyType, !stored.body.isEmpty { h.append(.contentType, type) }
    }

    mutating func inDialogRequest(expires: UInt32) -> SIPRequest? {
        guard var dialog else { return nil }
        var request = dialog.makeRequest(.subscribe, contact: stored.profile.value.contact)
        self.dialog = dialog
        cseq = dialog.localSequence ?? cseq
        var h = request.headers
        addSubscriptionHeaders(&h, expires: expires)
        request.headers = h
        request.body = stored.body
        outstanding = request
        return request
    }

    /// Replaces the body of every later SUBSCRIBE of this subscription and sends one at once in the
    /// dialog (a batched category subscription adding or removing resources, [MS-PRES] §4.5).
    /// Nothing is sent before the dialog exists or after it ended.
    public mutating func resubscribe(body: [UInt8], now: NIODeadline) -> [Action] {
        stored.body = body
        return refresh(now: now)
    }

    /// The refresh timer fired: an in-dialog SUBSCRIBE with the configured Expires (§4.1.2.2).
    public mutating func refresh(now: NIODeadline) -> [Action] {
        switch status {
        case .pending, .active:
            guard let request = inDialogRequest(expires: stored.expires) else { return [] }
            return [.send(request)]
        default:
            return []
        }
    }

    /// Unsubscribes (§4.1.2.3: SUBSCRIBE with Expires 0; a final NOTIFY follows).
    public mutating func unsubscribe() -> [Action] {
        switch status {
        case .pending, .active:
            guard let request = inDialogRequest(expires: 0) else { return [] }
            status = .unsubscribing
            return [.send(request)]
        case .subscribing:
            status = .terminated(reason: "unsubscribed")
            return [.ended(reason: "unsubscribed")]
        default:
            return []
        }
    }

    /// A response to the outstanding SUBSCRIBE. `jitter` in 0..<1 (injected randomness) spreads
    /// refreshes: the refresh is due at `expires × (0.9 − 0.1 × jitter)` but at least 5 s before
    /// expiry when the duration allows (§4.1.2.2 leaves the margin to the subscriber).
    public mutating func receive(_ response: SIPResponse, now: NIODeadline, jitter: Double, overTLS: Bool = false)
        -> [Action]
    {
        guard let request = outstanding else { return [] }
        if response.statusCode < 200 { return [] }
        defer {
            if outstanding == nil, stored.profile.value.bodyGivenPerRequest { stored.body = [] }
        }
        outstanding = nil
        let wasInitial = dialog == nil && (try? request.headers.to)?.tag == nil
        if (200..<300).contains(response.statusCode) {
            if dialog == nil {
                dialog = (try? SIPDialog(uacFor: request, response: response, overTLS: overTLS))
            } else {
                dialog?.receive(response, to: .subscribe)
            }
            if status == .unsubscribing { return [] }
            let granted = (try? response.headers.expires) ?? stored.expires
            var actions: [Action] = []
            if granted == 0 {
                // A fetch: only the one NOTIFY (or the piggybacked body) follows.
                expiresAt = now
            } else {
                expiresAt = now + .seconds(Int64(granted))
                actions.append(.scheduleRefresh(refreshDeadline(granted: granted, now: now, jitter: jitter)))
            }
            if status == .subscribing { status = .active }
            if let piggy = piggybackNotification(response) {
                if piggy.state.state == .pending { status = .pending }
                if let cseq = try? response.headers.msPiggybackCSeq { dialog?.remoteSequence = cseq }
                actions.append(.deliver(piggy))
            }
            return actions
        }
        switch response.statusCode {
        case 423:
            // §4.1.2.1: retry with at least Min-Expires.
            if let minimum = try? response.headers.minExpires, minimum > stored.expires {
                stored.expires = minimum
                if wasInitial { return [.send(initialRequest(expires: minimum))] }
                if let r = inDialogRequest(expires: minimum) { return [.send(r)] }
            }
        case 481 where !wasInitial:
            // §4.1.2.2: the refresh found no subscription; start a new one.
            status = .terminated(reason: "481")
            dialog = nil
            return [.scheduleResubscribe(now), .ended(reason: "481")]
        default:
            break
        }
        if status == .unsubscribing {
            status = .terminated(reason: "unsubscribed")
            return [.ended(reason: "unsubscribed")]
        }
        if !wasInitial, status == .active || status == .pending {
            // A failed refresh leaves the subscription until it expires (§4.1.2.2).
            return []
        }
        status = .terminated(reason: String(response.statusCode))
        var actions: [Action] = []
        if let retry = try? response.headers.retryAfter {
            actions.append(.scheduleResubscribe(now + .seconds(Int64(retry.seconds))))
        }
        actions.append(.ended(reason: String(response.statusCode)))
        return actions
    }

    /// The outstanding SUBSCRIBE went out again as `request`, the same SUBSCRIBE with credentials
    /// and CSeq one higher (RFC 3261 §22.2, §8.1.3.5): it is outstanding now, so the dialog its
    /// answer or first NOTIFY makes starts from its CSeq, and a dialog's later requests number
    /// on from it (§12.2.1.1). False when nothing was outstanding.
    public mutating func resent(_ request: SIPRequest) -> Bool {
        guard outstanding != nil, let sequence = (try? request.headers.cseq)?.sequence else { return false }
        outstanding = request
        cseq = max(cseq, sequence)
        if var dialog, (dialog.localSequence ?? 0) < sequence {
            dialog.localSequence = sequence
            self.dialog = dialog
        }
        return true
    }

    /// The outstanding SUBSCRIBE timed out or failed in transport (RFC 3261 §8.1.3.1: as 408).
    public mutating func transactionFailed(now: NIODeadline) -> [Action] {
        var timeout = SIPResponse(statusCode: 408, reasonPhrase: "Request Timeout")
        if let r = outstanding {
            timeout.headers = SIPHeaders(r.headers.fields.filter { [.from, .to, .callID, .cseq].contains($0.name) })
        }
        return receive(timeout, now: now, jitter: 0)
    }

    /// A NOTIFY or BENOTIFY for this subscription (the driver matched Call-ID, tags and Event).
    public mutating func receive(
        notify: SIPRequest, now: NIODeadline, jitter: Double, localTag responseTag: String? = nil,
        overTLS: Bool = false
    ) -> [Action] {
        let expectsResponse = notify.method != .benotify
        func answer(_ code: Int, _ reason: String) -> [Action] {
            expectsResponse
                ? [.respond(SIPResponse(replyingTo: notify, statusCode: code, reasonPhrase: reason, toTag: nil))] : []
        }
        guard let state = try? notify.headers.subscriptionState else {
            return answer(400, "Missing or Bad Subscription-State")
        }
        if dialog == nil {
            // RFC 6665 §4.1.2.4: the NOTIFY came before the 200; it creates the dialog.
            guard let request = outstanding,
                let created = try? SIPDialog(subscriberFor: request, notify: notify, overTLS: overTLS)
            else {
                return answer(481, "Subscription Does Not Exist")
            }
            dialog = created
        } else if dialog?.receive(notify) == .rejectOutOfOrder {
            return answer(500, "Out of Order CSeq")
        }
        var actions = answer(200, "OK")
        let contentType = try? notify.headers.contentType
        actions.append(
            .deliver(Notification(state: state, contentType: contentType, body: notify.body, piggybacked: false)))
        switch state.state {
        case .active, .pending:
            if status == .unsubscribing { break }
            status = state.state == .active ? .active : .pending
            if let seconds = state.expires {
                let deadline = now + .seconds(Int64(seconds))
                // §4.1.2.2: the notifier may shorten the subscription; refresh before the new end.
                if expiresAt.map({ deadline < $0 }) ?? true, seconds > 0 {
                    expiresAt = deadline
                    actions.append(.scheduleRefresh(refreshDeadline(granted: seconds, now: now, jitter: jitter)))
                }
            }
        case .terminated:
            let wasUnsubscribing = status == .unsubscribing
            status = .terminated(reason: state.reason)
            dialog = nil
            if !wasUnsubscribing, let retry = Self.retryDelay(reason: state.reason, retryAfter: state.retryAfter) {
                actions.append(.scheduleResubscribe(now + retry))
            }
            actions.append(.ended(reason: state.reason ?? "terminated"))
        default:
            // §8.2.3: an unknown substate is treated as active... but only after a 2xx; keep status.
            break
        }
        return actions
    }

    /// RFC 6665 §4.1.3: after `deactivated` or `timeout` the subscriber may resubscribe at once;
    /// after `probation` or `giveup`, not before retry-after (here: retry-after, else 60 s);
    /// after `rejected`, `noresource` or `invariant` (and unknown reasons) it should not retry.
    public static func retryDelay(reason: String?, retryAfter: UInt32?) -> TimeAmount? {
        switch reason?.lowercased() {
        case "deactivated", "timeout", nil:
            return .seconds(Int64(retryAfter ?? 0))
        case "probation", "giveup":
            return .seconds(Int64(retryAfter ?? 60))
        default:
            return nil
        }
    }

    private func refreshDeadline(granted: UInt32, now: NIODeadline, jitter: Double) -> NIODeadline {
        let seconds = Double(granted)
        var at = seconds * (0.9 - 0.1 * min(max(jitter, 0), 1))
        if seconds > 10 { at = min(at, seconds - 5) }
        return now + .milliseconds(Int64(at * 1000))
    }

    private func piggybackNotification(_ response: SIPResponse) -> Notification? {
        guard (try? response.headers.msPiggybackCSeq) != nil,
            let state = try? response.headers.subscriptionState
        else { return nil }
        let contentType = try? response.headers.contentType
        return Notification(state: state, contentType: contentType, body: response.body, piggybacked: true)
    }
}
