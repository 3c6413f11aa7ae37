import NIOCore
public import SIPMessages

/// The non-INVITE server transaction of RFC 3261 §17.2.2 (Figure 8), as a value that returns
/// actions.
///
/// ```
///   Trying --1xx from TU / send--> Proceeding --200-699 from TU / send--> Completed
///   Trying --200-699 from TU / send--> Completed --Timer J--> Terminated
///   request retransmission: absorbed in Trying, last provisional resent in Proceeding,
///   final response resent in Completed
/// ```
public struct NonInviteServerTransaction: Sendable {
    public enum State: String, Sendable, Hashable {
        case trying, proceeding, completed, terminated
    }

    public private(set) var state: State = .trying
    public let reliable: Bool
    public let timers: SIPTimerConfiguration
    /// The last response sent (resent on request retransmissions).
    public var lastResponse: SIPResponse? { provisional ?? finalResponse }

    /// The last provisional response sent, while in Proceeding.
    private var provisional: SIPResponse?
    /// The final response, as the bytes it is written as. A UDP transaction holds it for 64·T1
    /// in Completed, for a retransmission of the request that may never come: held parsed, its
    /// header fields (slices of the request's buffer, RFC 3261 §8.2.6.2 copies Via, From, To,
    /// Call-ID and CSeq) would keep the whole request, body and all, alive with it
    /// (docs/performance.md, "Transactions").
    private var finalBytes: [UInt8]?

    /// The final response, parsed again from what is held (only when a retransmission asks for it).
    private var finalResponse: SIPResponse? {
        guard let finalBytes, case .response(let response)? = try? SIPMessage(parsing: finalBytes) else { return nil }
        return response
    }

    /// §17.2.2: "The state machine is initialized in the "Trying" state and is passed a request
    /// other than INVITE or ACK when initialized. This request is passed up to the TU." The
    /// machine itself never needs the request again (it answers retransmissions with its last
    /// response), so it does not keep it: an answered UDP transaction lives on for 64·T1, and
    /// holding every request that long multiplied a busy server's memory.
    public init(reliable: Bool, timers: SIPTimerConfiguration = .default) {
        self.reliable = reliable
        self.timers = timers
    }

    /// A retransmission of the request arrived.
    public mutating func receiveRetransmission() -> [SIPTransactionAction] {
        switch state {
        case .trying, .terminated:
            // "Once in the "Trying" state, any further request retransmissions are discarded."
            return []
        case .proceeding, .completed:
            // "If a retransmission of the request is received while in the "Proceeding" state,
            // the most recently sent provisional response MUST be passed to the transport layer
            // for retransmission." / "While in the "Completed" state, the server transaction MUST
            // pass the final response to the transport layer for retransmission whenever a
            // retransmission of the request is received."
            return lastResponse.map { [.send(.response($0))] } ?? []
        }
    }

    /// The TU sends a response.
    public mutating func send(_ response: SIPResponse) -> [SIPTransactionAction] {
        switch state {
        case .trying, .proceeding:
            if response.statusCode < 200 {
                provisional = response
                state = .proceeding
                return [.send(.response(response))]
            }
            provisional = nil
            // "If the TU passes a final response (status codes 200-699) to the server while in the
            // "Proceeding" state, the transaction MUST enter the "Completed" state, and the
            // response MUST be passed to the transport layer for transmission. When the server
            // transaction enters the "Completed" state, it MUST set Timer J to fire in 64*T1
            // seconds for unreliable transports, and zero seconds for reliable transports."
            state = .completed
            let j = timers.timerJ(reliable: reliable)
            if j == .zero {
                state = .terminated
                return [.send(.response(response)), .terminate(.completed)]
            }
            finalBytes = SIPMessage.response(response).serialized()
            return [.send(.response(response)), .startTimer(.j, j)]
        case .completed, .terminated:
            // "Any other final responses passed by the TU to the server transaction MUST be
            // discarded while in the "Completed" state."
            return []
        }
    }

    public mutating func timerFired(_ timer: SIPTransactionTimer) -> [SIPTransactionAction] {
        guard timer == .j, state == .completed else { return [] }
        // "The server transaction remains in this state until Timer J fires, at which point it
        // MUST transition to the "Terminated" state."
        state = .terminated
        return [.terminate(.completed)]
    }

    /// The TU gave no final response while the client could still be waiting (the driver calls
    /// this at 64·T1, when the client's Timer F has fired, §17.1.2.2). Not an RFC 3261 event:
    /// the transaction ends without a response, since RFC 4320 §4.2 forbids a 408 to a
    /// non-INVITE request and the client has given up anyway.
    public mutating func abandon() -> [SIPTransactionAction] {
        switch state {
        case .trying, .proceeding:
            state = .terminated
            return [.terminate(.timeout)]
        case .completed, .terminated:
            return []
        }
    }

    /// §17.2.4: a transport failure sending a response; the transaction ends (the TU is told).
    public mutating func transportError() -> [SIPTransactionAction] {
        guard state != .terminated else { return [] }
        state = .terminated
        return [.cancelTimer(.j), .terminate(.transportError)]
    }
}
