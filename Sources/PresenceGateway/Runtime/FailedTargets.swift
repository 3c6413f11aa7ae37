public import NIOCore
public import SIPTransport

/// Targets that recently failed a request, so that later requests skip them. RFC 3263 §4.3: on
/// a transport error or a timeout the client sends a new request, identical but with a new Via
/// branch (a new transaction), to the next element of the list; "If a 503 error response is
/// received, the client SHOULD try the next element". How long a failure is remembered is left
/// to the client: here a short, bounded memory (``Limits``).
///
/// A value: the runtime keeps one and asks it to order every resolved target list.
public struct FailedTargets: Sendable {
    /// How long a failed target is skipped, and how many are remembered.
    public struct Limits: Sendable, Hashable {
        /// How long a failure is remembered (default 30 s: about one Timer F, RFC 3261 §17.1.2.2,
        /// so a target that timed out is not tried again before a retry of the same request
        /// would have given up on it).
        public var duration: TimeAmount
        /// At most this many targets are remembered (default 256); when full, the one whose
        /// memory ends first is forgotten.
        public var capacity: Int

        public init(duration: TimeAmount = .seconds(30), capacity: Int = 256) {
            self.duration = duration
            self.capacity = max(1, capacity)
        }
    }

    public let limits: Limits
    private var until: [SIPTarget: NIODeadline] = [:]

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Remembers that `target` failed at `now`.
    public mutating func record(_ target: SIPTarget, now: NIODeadline) {
        until = until.filter { $0.value > now }
        if until[target] == nil, until.count >= limits.capacity,
            let oldest = until.min(by: { $0.value < $1.value })?.key
        {
            until[oldest] = nil
        }
        until[target] = now + limits.duration
    }

    /// Whether `target` failed less than ``Limits/duration`` before `now`.
    public func hasFailed(_ target: SIPTarget, now: NIODeadline) -> Bool {
        guard let end = until[target] else { return false }
        return end > now
    }

    /// The targets to try, in the resolver's order, without those that failed recently. When all
    /// of them failed recently they are all returned, in order: trying again is better than
    /// failing a request that no target was asked about.
    public func usable(_ targets: [SIPTarget], now: NIODeadline) -> [SIPTarget] {
        let fresh = targets.filter { !hasFailed($0, now: now) }
        return fresh.isEmpty ? targets : fresh
    }

    /// How many failures are remembered at `now`.
    public func count(now: NIODeadline) -> Int { until.values.count { $0 > now } }
}
