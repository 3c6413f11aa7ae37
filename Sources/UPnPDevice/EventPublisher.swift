import NIOCore

/// The runtime owner of the subscription table and the moderator: the one place their values
/// change. It turns GENA requests and backend changes into event messages, which it queues for
/// the device's delivery loop.
public actor EventPublisher {
    private var table: GENASubscriptionTable
    private var moderator: EventModerator
    private var values: [EventedVariable: String] = [:]
    private let continuation: AsyncStream<EventDelivery>.Continuation
    /// The event messages to deliver, in order, and the ends of subscriptions; read by one
    /// delivery loop.
    public nonisolated let outbox: AsyncStream<EventDelivery>
    private let makeSID: @Sendable () -> String

    public init(configuration: GENAConfiguration, makeSID: @escaping @Sendable () -> String = { "uuid:" + makeUUID() })
    {
        table = GENASubscriptionTable(configuration: configuration)
        moderator = EventModerator(interval: configuration.moderationInterval)
        (outbox, continuation) = AsyncStream.makeStream(of: EventDelivery.self, bufferingPolicy: .bufferingNewest(1024))
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
