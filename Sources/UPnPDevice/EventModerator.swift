public import NIOCore

/// Event moderation as a value: at most one event message per variable per interval; changes
/// that come sooner are coalesced and the latest value goes out when the interval has passed
/// (UDA 1.1 §4.3, moderated variables; ISO/IEC 29341-26-16 §5.4, Table 2).
public struct EventModerator: Sendable {
    public let interval: TimeAmount
    private var lastSent: [EventedVariable: NIODeadline] = [:]
    private var pending: [EventedVariable: String] = [:]

    public init(interval: TimeAmount) {
        self.interval = interval
    }

    /// Records a change; returns the properties to send now (empty when it must wait: then
    /// ``flush(now:)`` returns it once the interval has passed).
    public mutating func change(_ variable: EventedVariable, _ value: String, now: NIODeadline) -> [(
        EventedVariable, String
    )] {
        if let last = lastSent[variable], now < last + interval {
            pending[variable] = value
            return []
        }
        pending[variable] = nil
        lastSent[variable] = now
        return [(variable, value)]
    }

    /// The coalesced changes whose interval has passed, in the order of the state table.
    public mutating func flush(now: NIODeadline) -> [(EventedVariable, String)] {
        var due: [(EventedVariable, String)] = []
        for variable in EventedVariable.all {
            guard let value = pending[variable] else { continue }
            if let last = lastSent[variable], now < last + interval { continue }
            due.append((variable, value))
            pending[variable] = nil
            lastSent[variable] = now
        }
        return due
    }

    /// When the next pending change falls due, nil when none waits.
    public var nextDeadline: NIODeadline? {
        pending.keys.compactMap { lastSent[$0].map { $0 + interval } }.min()
    }
}
