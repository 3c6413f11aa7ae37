public import NIOCore
public import SIPMessages

/// What a transaction state machine asks its driver to do. The driver performs the actions in
/// order; the machine itself does no I/O and reads no clock.
public enum SIPTransactionAction: Sendable, Hashable {
    /// Hand a message to the transport (request retransmission, response, response retransmission).
    case send(SIPMessage)
    /// Start (or restart) a timer to fire after the given delay.
    case startTimer(SIPTransactionTimer, TimeAmount)
    /// Stop a running timer.
    case cancelTimer(SIPTransactionTimer)
    /// Pass a response up to the TU (client transactions; includes the 408 of Timer F and the 503
    /// of a transport error, RFC 3261 §8.1.3.1).
    case deliverResponse(SIPResponse)
    /// The transaction ended; remove it from the table (RFC 3261 §17 "Terminated").
    case terminate(SIPTransactionEnd)
}

/// Why a transaction ended, for the driver's bookkeeping and the TU.
public enum SIPTransactionEnd: String, Sendable, Hashable {
    /// It completed normally (Timer I, J or K fired, or zero on a reliable transport).
    case completed
    /// Timer F fired (client) or Timer H fired without an ACK (INVITE server).
    case timeout
    /// The transport reported an error (RFC 3261 §17.1.4, §17.2.4).
    case transportError
}
