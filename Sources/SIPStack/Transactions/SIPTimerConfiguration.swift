public import NIOCore

/// The timer base values of RFC 3261 §17.1.1.1, Table 4, and the timers derived from them.
///
/// ```
/// T1   500ms default   RTT Estimate
/// T2   4s              The maximum retransmit interval for non-INVITE requests and INVITE responses
/// T4   5s              Maximum duration a message will remain in the network
/// Timer E  initially T1  non-INVITE request retransmit interval, UDP only     (§17.1.2.2)
/// Timer F  64*T1         non-INVITE transaction timeout timer                  (§17.1.2.2)
/// Timer G  initially T1  INVITE response retransmit interval                   (§17.2.1)
/// Timer H  64*T1         Wait time for ACK receipt                             (§17.2.1)
/// Timer I  T4 for UDP, 0s for TCP/SCTP   Wait time for ACK retransmits         (§17.2.1)
/// Timer J  64*T1 for UDP, 0s for TCP/SCTP  Wait time for non-INVITE request retransmits (§17.2.2)
/// Timer K  T4 for UDP, 0s for TCP/SCTP   Wait time for response retransmits    (§17.1.2.2)
/// ```
public struct SIPTimerConfiguration: Sendable, Hashable {
    /// RTT estimate; default 500 ms.
    public var t1: TimeAmount
    /// Maximum retransmit interval for non-INVITE requests and INVITE responses; default 4 s.
    public var t2: TimeAmount
    /// Maximum time a message remains in the network; default 5 s.
    public var t4: TimeAmount

    public init(t1: TimeAmount = .milliseconds(500), t2: TimeAmount = .seconds(4), t4: TimeAmount = .seconds(5)) {
        self.t1 = t1
        self.t2 = t2
        self.t4 = t4
    }

    /// T1 500 ms, T2 4 s, T4 5 s.
    public static let `default` = SIPTimerConfiguration()

    /// 64·T1: Timers F, H, and J on unreliable transports.
    public var transactionTimeout: TimeAmount { .nanoseconds(t1.nanoseconds * 64) }

    /// Timer K (and Timer I): T4 on UDP, zero on reliable transports.
    public func timerK(reliable: Bool) -> TimeAmount { reliable ? .zero : t4 }
    /// Timer I: T4 on UDP, zero on reliable transports (§17.2.1).
    public func timerI(reliable: Bool) -> TimeAmount { reliable ? .zero : t4 }
    /// Timer J: 64·T1 on UDP, zero on reliable transports (§17.2.2).
    public func timerJ(reliable: Bool) -> TimeAmount { reliable ? .zero : transactionTimeout }

    /// The next retransmit interval after `current`: doubled, at most T2 (§17.1.2.2, §17.2.1).
    public func nextRetransmitInterval(after current: TimeAmount) -> TimeAmount {
        let doubled = current.nanoseconds > Int64.max / 2 ? Int64.max : current.nanoseconds * 2
        return .nanoseconds(min(doubled, t2.nanoseconds))
    }
}
