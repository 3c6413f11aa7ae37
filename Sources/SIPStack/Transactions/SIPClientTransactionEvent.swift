public import SIPMessages

/// What a client transaction reports to its TU (RFC 3261 §17.1.2, §8.1.3.1).
public enum SIPClientTransactionEvent: Sendable, Hashable {
    /// A response from the network, provisional or final.
    case response(SIPResponse)
    /// Timer F fired: a 408 made locally ("the UAC core MUST treat [a timeout] as if it had
    /// received a 408 (Request Timeout)", §8.1.3.1).
    case timeout(SIPResponse)
    /// The transport failed: a 503 made locally ("as if it had received a 503 (Service
    /// Unavailable)", §8.1.3.1).
    case transportError(SIPResponse)

    /// The response, received or made locally.
    public var response: SIPResponse {
        switch self {
        case .response(let r), .timeout(let r), .transportError(let r): r
        }
    }
}
