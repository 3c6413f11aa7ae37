public import NIOCore
public import SIPMessages

/// The non-INVITE client transaction of RFC 3261 §17.1.2 (Figure 6), as a value that returns
/// actions.
///
/// ```
///                  |Request from TU / send request, Timer E (UDP), Timer F
///   Trying  --1xx--> Proceeding   (Timer E: resend, E = min(2E, T2) in Trying, T2 in Proceeding)
///   Trying/Proceeding --200-699 / resp. to TU--> Completed --Timer K--> Terminated
///   Trying/Proceeding --Timer F or transport error / inform TU--> Terminated
/// ```
///
/// Timer F and a transport error reach the TU as responses: "the UAC core MUST treat [a timeout]
/// as if it had received a 408 (Request Timeout)" and a transport failure "as if it had received
/// a 503 (Service Unavailable)" (§8.1.3.1).
public struct NonInviteClientTransaction: Sendable {
    public enum State: String, Sendable, Hashable {
        case trying, proceeding, completed, terminated
    }

    public private(set) var state: State = .trying
    /// The request as sent (top Via with this transaction's branch).
    public let request: SIPRequest
    /// Whether the transport is reliable (TCP, TLS): no Timer E, Timer K zero.
    public let reliable: Bool
    public let timers: SIPTimerConfiguration
    /// The interval Timer E was last started with.
    public private(set) var retransmitInterval: TimeAmount

    public init(request: SIPRequest, reliable: Bool, timers: SIPTimerConfiguration = .default) {
        self.request = request
        self.reliable = reliable
        self.timers = timers
        self.retransmitInterval = timers.t1
    }

    /// §17.1.2.2: "the client transaction MUST ... pass the request to the transport layer ...
    /// If an unreliable transport is in use, the client transaction MUST set timer E to fire in
    /// T1 seconds. ... timer F MUST be set to fire in 64*T1 seconds."
    public mutating func start() -> [SIPTransactionAction] {
        var actions: [SIPTransactionAction] = [.send(.request(request))]
        if !reliable { actions.append(.startTimer(.e, retransmitInterval)) }
        actions.append(.startTimer(.f, timers.transactionTimeout))
        return actions
    }

    /// A timer fired.
    public mutating func timerFired(_ timer: SIPTransactionTimer) -> [SIPTransactionAction] {
        switch (timer, state) {
        case (.e, .trying):
            // "If timer E fires while still in this state, the timer is reset, but this time with
            // a value of MIN(2*T1, T2). When the timer fires again, it is reset to a MIN(4*T1, T2)."
            retransmitInterval = timers.nextRetransmitInterval(after: retransmitInterval)
            return [.send(.request(request)), .startTimer(.e, retransmitInterval)]
        case (.e, .proceeding):
            // "If Timer E fires while in the Proceeding state, the request MUST be passed to the
            // transport layer for retransmission, and Timer E MUST be reset with a value of T2."
            retransmitInterval = timers.t2
            return [.send(.request(request)), .startTimer(.e, retransmitInterval)]
        case (.f, .trying), (.f, .proceeding):
            // "If Timer F fires while the client transaction is still in the "Trying" state, the
            // client transaction SHOULD inform the TU about the timeout, and then it SHOULD enter
            // the "Terminated" state." (Likewise in Proceeding.)
            state = .terminated
            return [
                .cancelTimer(.e), .deliverResponse(SIPResponse(replyingTo: request, statusCode: 408)),
                .terminate(.timeout),
            ]
        case (.k, .completed):
            state = .terminated
            return [.terminate(.completed)]
        default:
            return []
        }
    }

    /// A response matched this transaction (§17.1.3).
    public mutating func receive(_ response: SIPResponse) -> [SIPTransactionAction] {
        let provisional = response.statusCode < 200
        switch state {
        case .trying, .proceeding:
            if provisional {
                // "If a provisional response is received while in the "Trying" state, the
                // response MUST be passed to the TU, and then the client transaction SHOULD move
                // to the "Proceeding" state."
                state = .proceeding
                return [.deliverResponse(response)]
            }
            // "If a final response (status codes 200-699) is received while in the "Trying" [or
            // "Proceeding"] state, the response MUST be passed to the TU, and the client
            // transaction MUST transition to the "Completed" state." Timer K: T4 on UDP, 0 else.
            state = .completed
            var actions: [SIPTransactionAction] = [.cancelTimer(.e), .cancelTimer(.f), .deliverResponse(response)]
            let k = timers.timerK(reliable: reliable)
            if k == .zero {
                state = .terminated
                actions.append(.terminate(.completed))
            } else {
                actions.append(.startTimer(.k, k))
            }
            return actions
        case .completed, .terminated:
            // "The "Completed" state exists to buffer any additional response retransmissions
            // that may be received (which is why the client transaction remains there only for
            // unreliable transports)."
            return []
        }
    }

    /// §17.1.4: "If a fatal transport error is reported by the transport layer (generally, due to
    /// fatal ICMP errors in UDP or connection failures in TCP), the condition MUST be treated as a
    /// 503 (Service Unavailable) status code."
    public mutating func transportError() -> [SIPTransactionAction] {
        switch state {
        case .trying, .proceeding:
            state = .terminated
            return [
                .cancelTimer(.e), .cancelTimer(.f),
                .deliverResponse(SIPResponse(replyingTo: request, statusCode: 503)),
                .terminate(.transportError),
            ]
        case .completed, .terminated:
            return []
        }
    }
}
