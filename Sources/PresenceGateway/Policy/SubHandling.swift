/// What a presentity's authorization says about a watcher's subscription: RFC 5025 §3.2.1
/// `sub-handling`, ordered by value (block 0 < confirm 10 < polite-block 20 < allow 30) so that
/// combining several matching rules takes the largest (RFC 4745 §10.2).
public enum SubHandling: Int, Sendable, Hashable, Comparable, CaseIterable {
    /// 403 Forbidden (RFC 5025 §3.2.1; PacketCable Presence §6.3.5.1).
    case block = 0
    /// The subscription waits for the presentity's decision: accepted, state `pending`.
    case confirm = 10
    /// Accepted, but the watcher sees what a presentity that never published shows (RFC 5025
    /// §3.2.1; PacketCable Presence §6.3.5.2: "without revealing to the watcher that its request
    /// was rejected").
    case politeBlock = 20
    /// Accepted; the watcher sees what its container holds.
    case allow = 30

    /// The token of the pres-rules schema (`block`, `confirm`, `polite-block`, `allow`), trimmed.
    public init?(token: String) {
        switch token {
        case "block": self = .block
        case "confirm": self = .confirm
        case "polite-block": self = .politeBlock
        case "allow": self = .allow
        default: return nil
        }
    }

    public var token: String {
        switch self {
        case .block: "block"
        case .confirm: "confirm"
        case .politeBlock: "polite-block"
        case .allow: "allow"
        }
    }

    public static func < (a: SubHandling, b: SubHandling) -> Bool { a.rawValue < b.rawValue }
}
