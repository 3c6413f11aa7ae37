public import NIOCore

/// The subscriptions of the service as a value: every GENA rule of UDA 1.1 §4.1 and the SEQ
/// numbering of §4.3.2, with the time passed in, no I/O.
public struct GENASubscriptionTable: Sendable {
    public let configuration: GENAConfiguration
    public private(set) var subscriptions: [String: GENASubscription] = [:]

    public init(configuration: GENAConfiguration) {
        self.configuration = configuration
    }

    /// The SEQ after `sequence`: UDA 1.1 §4.3.2 wraps 4294967295 to 1, as 0 is kept for the
    /// initial event message.
    public static func sequence(after sequence: UInt32) -> UInt32 {
        sequence == .max ? 1 : sequence + 1
    }

    /// The duration granted for a requested TIMEOUT, within the configured bounds.
    public func grantedTimeout(_ requested: GENATimeout?) -> Int {
        let wanted: Int
        switch requested {
        case .none: wanted = configuration.defaultTimeout
        case .infinite: wanted = configuration.maximumTimeout
        case .seconds(let seconds): wanted = seconds
        }
        return min(max(wanted, configuration.minimumTimeout), configuration.maximumTimeout)
    }

    /// A new subscription (UDA 1.1 §4.1.2), or why not: 412 for a callback the policy refuses,
    /// 503 when a limit is reached. `sid` is the new SID (`uuid:` + a fresh UUID).
    public mutating func subscribe(
        callbacks: [String], timeout: GENATimeout?, controlPoint: String, sid: String, now: NIODeadline
    ) -> Result<GENASubscription, GENAStatus> {
        guard configuration.callbackPolicy.allows(callbacks) else { return .failure(.preconditionFailed) }
        expire(now: now)
        let fromSame = subscriptions.values.filter { $0.controlPoint == controlPoint }.count
        guard subscriptions.count < configuration.maxSubscriptions, fromSame < configuration.maxPerControlPoint else {
            return .failure(.serviceUnavailable)
        }
        let seconds = grantedTimeout(timeout)
        let subscription = GENASubscription(
            sid: sid, callbacks: callbacks, controlPoint: controlPoint, expires: now + .seconds(Int64(seconds)),
            nextSequence: 0, initialSent: false)
        subscriptions[sid] = subscription
        return .success(subscription)
    }

    /// Renews a subscription (UDA 1.1 §4.1.3): the granted seconds, or 412 for an unknown or
    /// expired SID.
    public mutating func renew(sid: String, timeout: GENATimeout?, now: NIODeadline) -> Result<Int, GENAStatus> {
        expire(now: now)
        guard subscriptions[sid] != nil else { return .failure(.preconditionFailed) }
        let seconds = grantedTimeout(timeout)
        subscriptions[sid]?.expires = now + .seconds(Int64(seconds))
        return .success(seconds)
    }

    /// Ends a subscription (UDA 1.1 §4.1.4); 412 for an unknown SID.
    public mutating func unsubscribe(sid: String, now: NIODeadline) -> Result<Void, GENAStatus> {
        expire(now: now)
        return subscriptions.removeValue(forKey: sid) == nil ? .failure(.preconditionFailed) : .success(())
    }

    /// Drops the subscriptions not renewed in time (UDA 1.1 §4.1.3).
    public mutating func expire(now: NIODeadline) {
        subscriptions = subscriptions.filter { $0.value.expires > now }
    }

    /// The initial event message of a subscription (UDA 1.1 §4.3.2: SEQ 0, every evented
    /// variable), or nil when it went out already or the SID is unknown.
    public mutating func initialNotify(sid: String, body: [UInt8]) -> GENANotify? {
        guard var subscription = subscriptions[sid], !subscription.initialSent else { return nil }
        subscription.initialSent = true
        subscription.nextSequence = 1
        subscriptions[sid] = subscription
        return GENANotify(sid: sid, callbacks: subscription.callbacks, sequence: 0, body: body)
    }

    /// One event message per subscription whose initial message went out, each with its next SEQ.
    public mutating func notifies(body: [UInt8]) -> [GENANotify] {
        var messages: [GENANotify] = []
        for (sid, subscription) in subscriptions.sorted(by: { $0.key < $1.key }) where subscription.initialSent {
            messages.append(
                GENANotify(sid: sid, callbacks: subscription.callbacks, sequence: subscription.nextSequence, body: body)
            )
            subscriptions[sid]?.nextSequence = Self.sequence(after: subscription.nextSequence)
        }
        return messages
    }

    /// Sets the next SEQ of a subscription (tests of the wrap-around).
    mutating func setNextSequence(_ sequence: UInt32, sid: String) {
        subscriptions[sid]?.nextSequence = sequence
    }
}
