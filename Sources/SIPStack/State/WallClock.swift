public import NIOCore

/// Turns the monotonic deadlines the state machines keep into wall-clock times that mean the same
/// after a restart, and back: stored state (docs/state.md) holds expiries as milliseconds since
/// the Unix epoch, because `NIODeadline` counts from an arbitrary point of one process's life.
public struct WallClock: Sendable, Hashable {
    /// Wall-clock nanoseconds since the epoch minus `NIODeadline` nanoseconds, at one instant.
    public var offset: Int64

    public init(offset: Int64) { self.offset = offset }

    /// The clock as it stands: `wallNanoseconds` since the epoch (e.g. from `Date()`) at `now`.
    public init(now: NIODeadline, wallNanoseconds: Int64) {
        offset = wallNanoseconds &- Int64(truncatingIfNeeded: now.uptimeNanoseconds)
    }

    /// `deadline` as milliseconds since the Unix epoch.
    public func milliseconds(_ deadline: NIODeadline) -> Int64 {
        (Int64(truncatingIfNeeded: deadline.uptimeNanoseconds) &+ offset) / 1_000_000
    }

    /// The deadline of a wall-clock time; one already past comes back as a past deadline (never
    /// before the start of `NIODeadline`'s count).
    public func deadline(milliseconds: Int64) -> NIODeadline {
        let uptime = milliseconds.multipliedReportingOverflow(by: 1_000_000)
        guard !uptime.overflow else { return milliseconds < 0 ? .uptimeNanoseconds(0) : .distantFuture }
        let nanoseconds = uptime.partialValue &- offset
        return .uptimeNanoseconds(UInt64(max(0, nanoseconds)))
    }
}
