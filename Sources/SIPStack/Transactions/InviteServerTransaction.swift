public import NIOCore
public import SIPMessages

/// The INVITE server transaction of RFC 3261 §17.2.1 (Figure 7), for the final non-2xx
/// responses this gateway gives INVITE (405 or 501: it is no call server), as a value that
/// returns actions.
///
/// ```
///   Proceeding --300-699 from TU / send response, Timer G (UDP), Timer H--> Completed
///   Completed --Timer G / resend response, G = min(2G, T2)--> Completed
///   Completed --ACK / Timer I--> Confirmed --Timer I--> Terminated
///   Completed --Timer H / inform TU--> Terminated
///   INVITE retransmission: last provisional resent in Proceeding, final response in Completed
/// ```
public struct InviteServerTransaction: Sendable {
    public enum State: String, Sendable, Hashable {
        case proceeding, completed, confirmed, terminated
    }

    public private(set) var state: State = .proceeding
    public let request: SIPRequest
    public let reliable: Bool
    public let timers: SIPTimerConfiguration
    public private(set) var lastResponse: SIPResponse?
    /// The interval Timer G was last started with.
    public private(set) var retransmitInterval: TimeAmount

    public init(request: SIPRequest, reliable: Bool, timers: SIPTimerConfiguration = .default) {
        self.request = request
        self.reliable = reliable
        self.timers = timers
        self.retransmitInterval = timers.t1
    }

    /// A retransmission of the INVITE arrived.
    public mutating func receiveRetransmission() -> [SIPTransactionAction] {
        switch state {
        case .proceeding, .completed:
            // "If a request retransmission is received while in the "Proceeding" state, the most
            // recent provisional response that was received from the TU MUST be passed to the
            // transport layer for retransmission." / "while in the "Completed" state ... the
            // server SHOULD pass the response to the transport for retransmission."
            return lastResponse.map { [.send(.response($0))] } ?? []
        case .confirmed, .terminated:
            return []
        }
    }

    /// The TU sends a response.
    public mutating func send(_ response: SIPResponse) -> [SIPTransactionAction] {
        guard state == .proceeding else { return [] }
        lastResponse = response
        switch response.statusCode {
        case ..<200:
            return [.send(.response(response))]
        case 200..<300:
            // "If, while in the "Proceeding" state, the TU passes a 2xx response to the server
            // transaction, the server transaction MUST pass this response to the transport layer
            // for transmission. ... The server transaction MUST then transition to the
            // "Terminated" state."
            state = .terminated
            return [.send(.response(response)), .terminate(.completed)]
        default:
            // "While in the "Proceeding" state, if the TU passes a response with status code from
            // 300 to 699 to the server transaction, the response MUST be passed to the transport
            // layer for transmission, and the state machine MUST enter the "Completed" state. For
            // unreliable transports, timer G is set to fire in T1 seconds ... When the "Completed"
            // state is entered, timer H MUST be set to fire in 64*T1 seconds for all transports."
            state = .completed
            var actions: [SIPTransactionAction] = [.send(.response(response))]
            if !reliable { actions.append(.startTimer(.g, retransmitInterval)) }
            actions.append(.startTimer(.h, timers.transactionTimeout))
            return actions
        }
    }

    /// An ACK matched this transaction (§17.2.3).
    public mutating func receiveACK() -> [SIPTransactionAction] {
        guard state == .completed else {
            // "The purpose of the "Confirmed" state is to absorb any additional ACK messages that
            // arrive, triggered from retransmissions of the final response."
            return []
        }
        // "If an ACK is received while the server transaction is in the "Completed" state, the
        // server transaction MUST transition to the "Confirmed" state. As Timer G is ignored in
        // this state, any retransmissions of the response will cease." Timer I: T4 for
        // unreliable transports, zero for reliable ones.
        state = .confirmed
        var actions: [SIPTransactionAction] = [.cancelTimer(.g), .cancelTimer(.h)]
        let i = timers.timerI(reliable: reliable)
        if i == .zero {
            state = .terminated
            actions.append(.terminate(.completed))
        } else {
            actions.append(.startTimer(.i, i))
        }
        return actions
    }

    public mutating func timerFired(_ timer: SIPTransactionTimer) -> [SIPTransactionAction] {
        switch (timer, state) {
        case (.g, .completed):
            // "If timer G fires, the response is passed to the transport layer once more for
            // retransmission, and timer G is set to fire in MIN(2*T1, T2) seconds. From then on,
            // when timer G fires, the response is passed to the transport again for
            // transmission, and timer G is reset with a value that doubles, unless that value
            // exceeds T2, in which case it is reset with the value of T2."
            retransmitInterval = timers.nextRetransmitInterval(after: retransmitInterval)
            return (lastResponse.map { [.send(.response($0))] } ?? []) + [.startTimer(.g, retransmitInterval)]
        case (.h, .completed):
            // "If timer H fires while in the "Completed" state, it implies that the ACK was never
            // received. In this case, the server transaction MUST transition to the "Terminated"
            // state, and MUST indicate to the TU that a transaction failure has occurred."
            state = .terminated
            return [.cancelTimer(.g), .terminate(.timeout)]
        case (.i, .confirmed):
            state = .terminated
            return [.terminate(.completed)]
        default:
            return []
        }
    }

    /// §17.2.4: a transport failure sending a response ends the transaction.
    public mutating func transportError() -> [SIPTransactionAction] {
        guard state != .terminated else { return [] }
        state = .terminated
        return [.cancelTimer(.g), .cancelTimer(.h), .cancelTimer(.i), .terminate(.transportError)]
    }
}
