/// The transport protocols the stack speaks (RFC 3261 §18; TLS per §26.2).
///
/// ```
/// transport  =  "UDP" / "TCP" / "TLS" / "SCTP" / other-transport   ; RFC 3261 §25.1 (Via)
/// ```
///
/// A closed set on purpose: these are the transports this stack implements. Via headers may name
/// others (SCTP, WS, ...); those are kept as text in ``SIPMessages/SIPVia`` and never sent to.
public enum SIPTransportKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case udp = "UDP"
    case tcp = "TCP"
    case tls = "TLS"

    /// Stream transports frame by Content-Length and need no retransmission (RFC 3261 §17.1.1.1).
    public var isReliable: Bool { self != .udp }

    /// 5060 for UDP and TCP, 5061 for TLS (RFC 3261 §19.1.2).
    public var defaultPort: UInt16 { self == .tls ? 5061 : 5060 }

    /// Parses a Via transport token case-insensitively; nil for transports this stack lacks.
    public init?(viaToken: String) {
        switch viaToken.uppercased() {
        case "UDP": self = .udp
        case "TCP": self = .tcp
        case "TLS": self = .tls
        default: return nil
        }
    }

    public var description: String { rawValue }
}
