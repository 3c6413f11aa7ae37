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

/// The tokens of a transaction's running timers, one per timer, stored inline: a transaction
/// has at most three running at a time, and a dictionary for them was one more allocation for
/// every transaction (kept, over UDP, 64·T1 after the answer). Zero means "not running"; tokens
/// start at 1.
struct SIPTimerTokens: Sendable {
    private var tokens: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)

    subscript(timer: SIPTransactionTimer) -> UInt64? {
        get {
            let token =
                switch timer {
                case .e: tokens.0
                case .f: tokens.1
                case .g: tokens.2
                case .h: tokens.3
                case .i: tokens.4
                case .j: tokens.5
                case .k: tokens.6
                }
            return token == 0 ? nil : token
        }
        set {
            let token = newValue ?? 0
            switch timer {
            case .e: tokens.0 = token
            case .f: tokens.1 = token
            case .g: tokens.2 = token
            case .h: tokens.3 = token
            case .i: tokens.4 = token
            case .j: tokens.5 = token
            case .k: tokens.6 = token
            }
        }
    }
}
