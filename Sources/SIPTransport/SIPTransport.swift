public import NIOCore
public import SIPMessages

/// What the transaction layer needs from a transport: send bytes of a message somewhere, receive
/// parsed messages, and know the local address to put in Via and Contact.
///
/// Implementations: ``SIPNetworkTransport`` (SwiftNIO sockets: UDP, TCP, TLS) and
/// ``SIPLoopbackNetwork`` (in memory, on an injected event loop whose clock tests advance).
///
/// All callbacks run on ``eventLoop``; the layers above are confined to it too, so its clock is
/// the stack's clock (an `EmbeddedEventLoop` in tests: timers fire on `advanceTime`, no sleeping).
public protocol SIPTransport: AnyObject, Sendable {
    /// The loop every callback runs on and every timer of the layers above is scheduled on.
    var eventLoop: any EventLoop { get }

    /// Sends one message. Over TCP/TLS an open `connection` is used when given and still open,
    /// else an open connection to `target`, else a new one (RFC 3261 §18.1.1). Fails with
    /// ``SIPTransportError`` when the message cannot be handed to the network.
    func send(_ message: SIPMessage, to target: SIPTarget, connection: SIPConnectionID?) -> EventLoopFuture<Void>

    /// Installs the receiver of every parsed inbound message (replacing any earlier one). Called
    /// on ``eventLoop``.
    func setMessageHandler(_ handler: @escaping @Sendable (SIPReceivedMessage) -> Void)

    /// The address this transport advertises for `kind` (Via sent-by, Contact); nil when it does
    /// not listen on that transport.
    func advertisedAddress(for kind: SIPTransportKind) -> SIPTarget?
}
