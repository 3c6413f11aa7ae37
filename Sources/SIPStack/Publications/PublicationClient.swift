public import NIOCore
public import SIPMessages

/// One publication on the publisher side: the Event Publication Agent / Presence User Agent of
/// RFC 3903 §4 and §5. Publishes, keeps the entity-tag, refreshes before expiry, modifies,
/// removes; a state machine that returns actions, like ``SubscriberSubscription``.
///
/// ```
///         start            200                       remove()/200
///  (new) ──────▶ publishing ────▶ published ─┬──────────────────────▶ removed
///                   ▲   │ 412 → initial again│ refresh(now:) / modify(...)
///                   │   │ 423 → Min-Expires  ▼
///                   │   └─────────────── (PUBLISH in flight) ── failure ──▶ failed
/// ```
///
/// One PUBLISH at a time (RFC 3903 §4: the EPA does not send a new PUBLISH for the same state
/// until the previous one has a final response or has timed out): a
/// ``modify(body:contentType:)`` or ``remove()`` asked while one is in flight waits for its
/// final response.
///
/// Failure policy (RFC 3903 §5 leaves it to the EPA):
/// - 412 Conditional Request Failed: the ESC lost the state; publish afresh with the current
///   body, without SIP-If-Match (RFC 3903 §5: "If an EPA receives a 412 (Conditional Request
///   Failed) response, it MUST NOT reattempt the PUBLISH request. Instead, to publish event
///   state, the EPA SHOULD perform an initial publication ... The EPA MUST also discard the
///   entity-tag that produced this error response"). A 412 to a removal ends it: nothing is
///   left at the ESC.
/// - 423 Interval Too Brief: retry at once with Min-Expires when it is larger than what was
///   asked (RFC 3903 §5 via RFC 3261 §21.4.17); otherwise fail.
/// - 408 Request Timeout, from the peer or from the transaction layer (``transactionFailed(now:)``,
///   RFC 3261 §8.1.3.1), and 503 / 500 with Retry-After: retried after
///   ``Configuration/retryInterval`` doubled each time (or the Retry-After value), at most
///   ``Configuration/maxRetries`` times in a row; then failed.
/// - Any other final failure: reported with ``Action/failed(statusCode:reason:)`` and stopped.
public struct PublicationClient: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// Request-URI: the resource whose state is published (RFC 3903 §4.1).
        public var target: SIPURI
        /// From: the publisher, without tag.
        public var from: SIPAddress
        /// To: the resource (RFC 3903 §4.1: usually the same address as the Request-URI).
        public var to: SIPAddress
        public var package: SIPEventPackage
        /// Requested duration in seconds (RFC 3903 §4.1: Expires).
        public var expires: UInt32
        /// Further headers for every PUBLISH.
        public var extraHeaders: SIPHeaders
        /// First delay before retrying a timed-out PUBLISH; doubled on each retry. Default 30 s.
        public var retryInterval: TimeAmount
        /// Consecutive retries after 408 / 5xx before giving up. Default 3.
        public var maxRetries: Int

        public init(
            target: SIPURI, from: SIPAddress, to: SIPAddress, package: SIPEventPackage = .presence,
            expires: UInt32 = 3600, extraHeaders: SIPHeaders = [], retryInterval: TimeAmount = .seconds(30),
            maxRetries: Int = 3
        ) {
            self.target = target
            self.from = from
            self.to = to
            self.package = package
            self.expires = expires
            self.extraHeaders = extraHeaders
            self.retryInterval = retryInterval
            self.maxRetries = maxRetries
        }
    }

    public enum Status: Sendable, Hashable, Codable {
        /// The initial PUBLISH is in flight (or waiting for a retry).
        case publishing
        /// The ESC holds the state under ``PublicationClient/entityTag``.
        case published
        /// Expires 0 sent.
        case removing
        case removed
        case failed(statusCode: Int?)
    }

    public enum Action: Sendable, Hashable {
        /// Send this PUBLISH (a new client transaction).
        case send(SIPRequest)
        /// Call ``refresh(now:)`` at this deadline.
        case scheduleRefresh(NIODeadline)
        /// Call ``retry(now:)`` at this deadline.
        case scheduleRetry(NIODeadline)
        /// The ESC accepted the state: this entity-tag until this deadline.
        case published(entityTag: String, expiresAt: NIODeadline)
        /// The publication was removed at the ESC (or never got there).
        case removed
        /// The publication failed for good (status code, or nil for a local reason).
        case failed(statusCode: Int?, reason: String)
    }

    enum Operation: String, Sendable, Hashable, Codable {
        case initial, refresh, modify, remove
    }

    public private(set) var configuration: Configuration
    public internal(set) var status: Status
    /// The entity-tag of the state at the ESC (RFC 3903 §4.1), nil before the first 200.
    public internal(set) var entityTag: String?
    public internal(set) var expiresAt: NIODeadline?
    /// The state this side publishes (kept for modify and for publishing afresh after 412).
    public private(set) var body: [UInt8]
    public private(set) var contentType: String
    public let callID: String
    public let localTag: String
    /// The PUBLISH awaiting its final response.
    public private(set) var outstanding: SIPRequest?
    var outstandingOperation: Operation?
    /// A modify or remove asked while a PUBLISH was in flight.
    var queued: Operation?
    var cseq: UInt32 = 0
    private var retries = 0

    /// Starts a publication: the initial PUBLISH with the body (RFC 3903 §4.2).
    public static func start(
        _ configuration: Configuration, body: [UInt8], contentType: String,
        callID: String, localTag: String
    ) -> (PublicationClient, [Action]) {
        var client = PublicationClient(
            configuration: configuration, body: body, contentType: contentType,
            callID: callID, localTag: localTag)
        let request = client.makeRequest(.initial)
        return (client, [.send(request)])
    }

    init(configuration: Configuration, body: [UInt8], contentType: String, callID: String, localTag: String) {
        self.configuration = configuration
        self.status = .publishing
        self.body = body
        self.contentType = contentType
        self.callID = callID
        self.localTag = localTag
    }

    /// The refresh timer fired: a PUBLISH with SIP-If-Match and no body (RFC 3903 §4.3).
    public mutating func refresh(now: NIODeadline) -> [Action] {
        guard status == .published, outstanding == nil else { return [] }
        return [.send(makeRequest(.refresh))]
    }

    /// New state: a PUBLISH with SIP-If-Match and the new body (RFC 3903 §4.4). Before the
    /// first 200 the new body goes out when the initial PUBLISH completes.
    public mutating func modify(body newBody: [UInt8], contentType newType: String) -> [Action] {
        switch status {
        case .publishing, .published:
            body = newBody
            contentType = newType
            if outstanding != nil {
                if queued != .remove { queued = .modify }
                return []
            }
            if status == .publishing {
                // Waiting for a retry of the initial PUBLISH: it will carry the new body.
                return []
            }
            return [.send(makeRequest(.modify))]
        default:
            return []
        }
    }

    /// Removes the state: a PUBLISH with SIP-If-Match and Expires 0 (RFC 3903 §4.5).
    public mutating func remove() -> [Action] {
        switch status {
        case .published where outstanding == nil:
            status = .removing
            return [.send(makeRequest(.remove))]
        case .published, .publishing:
            if outstanding != nil {
                queued = .remove
                return []
            }
            // Nothing at the ESC yet (an initial PUBLISH waiting for a retry).
            status = .removed
            return [.removed]
        default:
            return []
        }
    }

    /// The retry timer fired: the failed PUBLISH again, with a new CSeq.
    public mutating func retry(now: NIODeadline) -> [Action] {
        guard outstanding == nil, let operation = outstandingOperation else { return [] }
        switch status {
        case .publishing: return [.send(makeRequest(.initial))]
        case .published, .removing: return [.send(makeRequest(operation == .initial ? .refresh : operation))]
        default: return []
        }
    }

    /// A response to the outstanding PUBLISH (matched by CSeq). `jitter` in 0..<1 (injected randomness) spreads
    /// refreshes as ``SubscriberSubscription`` does: due at `expires × (0.9 − 0.1 × jitter)`, and
    /// at least 5 s before expiry when the duration allows (RFC 3903 §4.3 leaves the margin to
    /// the EPA).
    public mutating func receive(_ response: SIPResponse, now: NIODeadline, jitter: Double) -> [Action] {
        guard let request = outstanding, let operation = outstandingOperation, response.statusCode >= 200,
            Self.sameCSeq(request, response)
        else { return [] }
        outstanding = nil
        if (200..<300).contains(response.statusCode) {
            retries = 0
            outstandingOperation = nil
            return succeeded(operation, response, now: now, jitter: jitter)
        }
        switch response.statusCode {
        case 412 where operation != .initial:
            // RFC 3903 §5: the entity-tag is unknown at the ESC; publish afresh with the current body.
            entityTag = nil
            expiresAt = nil
            if operation == .remove || queued == .remove {
                queued = nil
                status = .removed
                outstandingOperation = nil
                return [.removed]
            }
            queued = nil
            status = .publishing
            return [.send(makeRequest(.initial))]
        case 423:
            if let minimum = try? response.headers.minExpires, minimum > configuration.expires, operation != .remove {
                configuration.expires = minimum
                return [.send(makeRequest(operation))]
            }
        case 408, 500, 503:
            let retryAfter = (try? response.headers.retryAfter).map { TimeAmount.seconds(Int64($0.seconds)) }
            if response.statusCode == 408 || retryAfter != nil, retries < configuration.maxRetries {
                let delay = retryAfter ?? backoff()
                retries += 1
                return [.scheduleRetry(now + delay)]
            }
        default:
            break
        }
        return fail(operation, statusCode: response.statusCode, reason: response.reasonPhrase)
    }

    /// The outstanding PUBLISH went out again as `request`, with credentials and CSeq one higher
    /// (RFC 3261 §22.2, §8.1.3.5): its response is matched by that CSeq, and later PUBLISHes
    /// number on from it. False when nothing was outstanding.
    public mutating func resent(_ request: SIPRequest) -> Bool {
        guard outstanding != nil, let sequence = (try? request.headers.cseq)?.sequence else { return false }
        outstanding = request
        cseq = max(cseq, sequence)
        return true
    }

    /// The outstanding PUBLISH timed out or failed in transport (RFC 3261 §8.1.3.1: as 408).
    public mutating func transactionFailed(now: NIODeadline) -> [Action] {
        guard let request = outstanding else { return [] }
        let timeout = SIPResponse(replyingTo: request, statusCode: 408, reasonPhrase: "Request Timeout")
        return receive(timeout, now: now, jitter: 0)
    }

    private mutating func succeeded(
        _ operation: Operation, _ response: SIPResponse, now: NIODeadline,
        jitter: Double
    ) -> [Action] {
        if operation == .remove {
            status = .removed
            entityTag = nil
            expiresAt = nil
            outstandingOperation = nil
            return [.removed]
        }
        guard let tag = try? response.headers.sipETag else {
            // RFC 3903 §5: a 2xx without SIP-ETag cannot be refreshed; report and stop.
            status = .failed(statusCode: response.statusCode)
            outstandingOperation = nil
            return [.failed(statusCode: response.statusCode, reason: "2xx without SIP-ETag")]
        }
        let granted = (try? response.headers.expires) ?? configuration.expires
        entityTag = tag
        status = .published
        let end = now + .seconds(Int64(granted))
        expiresAt = end
        var actions: [Action] = [.published(entityTag: tag, expiresAt: end)]
        if granted > 0 { actions.append(.scheduleRefresh(refreshDeadline(granted: granted, now: now, jitter: jitter))) }
        switch queued {
        case .modify:
            queued = nil
            actions.append(.send(makeRequest(.modify)))
        case .remove:
            queued = nil
            status = .removing
            actions.append(.send(makeRequest(.remove)))
        default:
            break
        }
        return actions
    }

    private mutating func fail(_ operation: Operation, statusCode: Int, reason: String) -> [Action] {
        outstandingOperation = nil
        retries = 0
        if operation == .remove || queued == .remove {
            // The state will expire at the ESC by itself (RFC 3903 §6).
            queued = nil
            status = .removed
            return [.failed(statusCode: statusCode, reason: reason), .removed]
        }
        // A failed refresh or modify leaves the state at the ESC until it expires (RFC 3903 §6);
        // the owner decides whether to publish again.
        queued = nil
        status = .failed(statusCode: statusCode)
        return [.failed(statusCode: statusCode, reason: reason)]
    }

    /// The response answers this request (a late response to an earlier PUBLISH does not; the
    /// transaction layer normally filters those already).
    static func sameCSeq(_ request: SIPRequest, _ response: SIPResponse) -> Bool {
        guard let sent = try? request.headers.cseq, let got = try? response.headers.cseq else { return false }
        return sent == got
    }

    private func backoff() -> TimeAmount {
        var delay = configuration.retryInterval
        for _ in 0..<retries { delay = delay * 2 }
        return delay
    }

    private mutating func makeRequest(_ operation: Operation) -> SIPRequest {
        cseq += 1
        var h = SIPHeaders()
        var from = configuration.from
        from.tag = localTag
        h.append(.maxForwards, "70")
        h.append(.from, from.description)
        h.append(.to, configuration.to.description)
        h.append(.callID, callID)
        h.append(.cseq, "\(cseq) PUBLISH")
        h.append(.event, configuration.package.name)
        h.append(.expires, operation == .remove ? "0" : String(configuration.expires))
        if operation != .initial, let entityTag { h.append(.sipIfMatch, entityTag) }
        for field in configuration.extraHeaders { h.fields.append(field) }
        var requestBody: [UInt8] = []
        if operation == .initial || operation == .modify {
            h.append(.contentType, contentType)
            requestBody = body
        }
        let request = SIPRequest(method: .publish, uri: configuration.target, headers: h, body: requestBody)
        outstanding = request
        outstandingOperation = operation
        return request
    }

    private func refreshDeadline(granted: UInt32, now: NIODeadline, jitter: Double) -> NIODeadline {
        let seconds = Double(granted)
        var at = seconds * (0.9 - 0.1 * min(max(jitter, 0), 1))
        if seconds > 10 { at = min(at, seconds - 5) }
        return now + .milliseconds(Int64(at * 1000))
    }
}
