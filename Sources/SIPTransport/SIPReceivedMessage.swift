public import SIPMessages

/// One message taken off the wire, with where it came from.
///
/// For requests the transport has already applied RFC 3261 §18.2.1 to the top Via (`received`
/// when the source address differs from sent-by, `rport` filled in per RFC 3581 §4).
public struct SIPReceivedMessage: Sendable {
    public var message: SIPMessage
    /// The peer's address as seen on the socket.
    public var source: SIPTarget
    /// The local address the message arrived on.
    public var local: SIPTarget
    /// The stream connection it arrived on; nil for UDP.
    public var connection: SIPConnectionID?
    /// For TLS: the names in the peer's certificate (subjectAltName DNS entries, then the
    /// subject common name), so that the layers above can bind a peer to a domain. Empty for
    /// UDP, TCP, and TLS peers that sent no certificate.
    public var peerCertificateNames: [String]

    public init(
        message: SIPMessage, source: SIPTarget, local: SIPTarget,
        connection: SIPConnectionID? = nil, peerCertificateNames: [String] = []
    ) {
        self.message = message
        self.source = source
        self.local = local
        self.connection = connection
        self.peerCertificateNames = peerCertificateNames
    }
}
