/// The timers of RFC 3261 §17 the transaction state machines schedule.
public enum SIPTransactionTimer: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Non-INVITE client: request retransmission (§17.1.2.2).
    case e = "E"
    /// Non-INVITE client: transaction timeout (§17.1.2.2).
    case f = "F"
    /// INVITE server: response retransmission (§17.2.1).
    case g = "G"
    /// INVITE server: wait for ACK (§17.2.1).
    case h = "H"
    /// INVITE server: absorb ACK retransmissions (§17.2.1).
    case i = "I"
    /// Non-INVITE server: absorb request retransmissions (§17.2.2).
    case j = "J"
    /// Non-INVITE client: absorb response retransmissions (§17.1.2.2).
    case k = "K"

    public var description: String { "Timer \(rawValue)" }
}
