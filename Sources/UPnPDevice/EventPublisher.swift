import NIOCore

/// The runtime owner of the subscription table and the moderator: the one place their values
/// change. It turns GENA requests and backend changes into event messages, which it queues for
/// the device's delivery loop.
public actor EventPublisher {
    private var table: GENASubscriptionTable
    private var moderator: EventModerator
    private var values: [EventedVariable: String] = [:]
    private let continuation: AsyncStream<Delivery>.Continuation
    /// The event messages to deliver, in order, and the ends of subscriptions; read by one
    /// delivery loop.
    public nonisolated let outbox: AsyncStream<Delivery>
    private let makeSID: @Sendable () -> String

    public init(configuration: GENAConfiguration, makeSID: @escaping @Sendable () -> String = { "uuid:" + makeUUID() })
    {
        table = GENASubscriptionTable(configuration: configuration)
        moderator = EventModerator(interval: configuration.moderationInterval)
        (outbox, continuation) = AsyncStream.makeStream(of: Delivery.self, bufferingPolicy: .bufferingNewest(1024))
        self.makeSID = makeSID
    }

    /// Sets the values the initial event messages carry (the backend's at start).
    public func seed(_ current: [EventedVariable: String]) {
        values.merge(current) { _, new in new }
    }

    /// Applies a GENA request from `controlPoint` (its IP address). Returns the status or the
    /// SID and granted seconds; a new subscription's initial event waits for ``accepted(sid:)``.
    public func handle(_ request: GENARequest, controlPoint: String) -> Result<(sid: String, seconds: Int?), GENAStatus>
    {
        let now = NIODeadline.now()
        switch request {
        case .subscribe(let callbacks, let timeout):
            let seconds = table.grantedTimeout(timeout)
            let sid = makeSID()
            return changingTable {
                $0.subscribe(callbacks: callbacks, timeout: timeout, controlPoint: controlPoint, sid: sid, now: now)
            }.map { ($0.sid, seconds) }
        case .renew(let sid, let timeout):
            return changingTable { $0.renew(sid: sid, timeout: timeout, now: now) }.map { (sid, $0) }
        case .unsubscribe(let sid):
            return changingTable { $0.unsubscribe(sid: sid, now: now) }.map { (sid, nil) }
        }
    }

    /// The SUBSCRIBE response went out: queue the initial event message (UDA 1.1 §4.3.2, SEQ 0,
    /// every evented variable with its current value).
    public func accepted(sid: String) {
        let properties = EventedVariable.all.map { ($0, values[$0] ?? "") }
        if let message = table.initialNotify(sid: sid, body: PropertySet.body(properties)) {
            continuation.yield(.notify(message))
        }
    }

    /// A backend change: remembered at once, sent now or when moderation lets it.
    public func changed(_ change: EventedChange) {
        values[change.variable] = change.value
        send(moderator.change(change.variable, change.value, now: .now()))
    }

    /// Sends the changes moderation held back and drops expired subscriptions; called
    /// periodically by the device.
    public func tick() {
        let now = NIODeadline.now()
        changingTable { $0.expire(now: now) }
        send(moderator.flush(now: now))
    }

    /// How many subscriptions there are (for tests and metrics).
    public var subscriptionCount: Int { table.subscriptions.count }

    /// Ends the outbox: the delivery loop stops after what is queued.
    public func finish() { continuation.finish() }

    private func send(_ properties: [(EventedVariable, String)]) {
        guard !properties.isEmpty else { return }
        for message in table.notifies(body: PropertySet.body(properties)) { continuation.yield(.notify(message)) }
    }

    /// Changes the table and reports the subscriptions that ended on the way (unsubscribed or
    /// expired), so that the delivery loop can drop their queues.
    private func changingTable<T>(_ change: (inout GENASubscriptionTable) -> T) -> T {
        let before = Set(table.subscriptions.keys)
        let result = change(&table)
        for sid in before.subtracting(table.subscriptions.keys) { continuation.yield(.ended(sid: sid)) }
        return result
    }
}

/// What the publisher hands to the delivery loop.
public enum Delivery: Sendable, Hashable {
    /// An event message to send.
    case notify(GENANotify)
    /// A subscription ended: nothing more will come for it.
    case ended(sid: String)
}

/// A random (version 4) UUID in lower case (RFC 9562 §5.4; UDA 1.1 §1.1.4 for UDNs and SIDs).
public func makeUUID() -> String {
    var bytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
    bytes[6] = (bytes[6] & 0x0F) | 0x40
    bytes[8] = (bytes[8] & 0x3F) | 0x80
    let hex = bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
    return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-")
}
