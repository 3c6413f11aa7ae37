/// A copy of one SIP message as it crossed the wire: the bytes received (after TLS decryption,
/// before any parsing or Via stamping) or sent (as serialized), with the transport and the
/// addresses on either end.
public struct SIPCapturedMessage: Sendable {
    public var bytes: [UInt8]
    public var transport: SIPTransportKind
    /// The sender: the peer for a received message, our socket for a sent one.
    public var source: SIPTarget
    /// The receiver: our socket for a received message, the peer for a sent one.
    public var destination: SIPTarget

    public init(bytes: [UInt8], transport: SIPTransportKind, source: SIPTarget, destination: SIPTarget) {
        self.bytes = bytes
        self.transport = transport
        self.source = source
        self.destination = destination
    }
}

/// Where ``SIPNetworkTransport`` copies every message it sends and receives (HEP v3 capture:
/// ``HEPCapture``).
///
/// ``capture(_:)`` is called on the transport's event loop, on its hot path: it must only take the
/// message (the byte array is shared, not copied) and return at once, never block and never
/// do the encoding or the sending there.
public protocol SIPMessageCapture: AnyObject, Sendable {
    func capture(_ message: SIPCapturedMessage)
}
