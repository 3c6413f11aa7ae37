public import SIPTransport

/// The peer a dialog belongs to: who made it (for the gateway's notifier dialogs, the sender of
/// the SUBSCRIBE) or whom the gateway made it with (for its subscriber dialogs, the target its
/// SUBSCRIBE went to).
///
/// RFC 3261 §12.2.2 matches a request to a dialog by Call-ID and tags alone, which anyone who
/// learns them can write. At the edge a request inside a dialog is also held to the dialog's
/// peer (``FederationRouter/admits(_:into:)``): same side, same transport, same configured peer
/// (or the same source address when the peer is not configured), and over mutual TLS the same
/// certificate identity; and the gateway's own requests in the dialog go only where that peer
/// may be reached (``FederationRouter/mayReach(_:in:)``).
public struct DialogPeer: Sendable, Hashable {
    public var side: GatewayConfiguration.Side
    /// The transport the dialog was made over: its requests stay on it (RFC 5630 §3.1.1 for TLS).
    public var transport: SIPTransportKind
    /// The address the peer used or was reached at (host and port).
    public var host: String
    public var port: UInt16
    /// The configured peer, when the address is one: its position in
    /// ``GatewayConfiguration/peers`` (two bytes where a name would take sixteen, in every
    /// dialog's state).
    public var peer: UInt16?
    /// The TLS identities accepted inside the dialog: the configured peer's `certificate-names`,
    /// else the names of the certificate that made it; empty over UDP and TCP.
    public var certificateNames: [String]

    public init(
        side: GatewayConfiguration.Side, transport: SIPTransportKind, host: String, port: UInt16, peer: UInt16? = nil,
        certificateNames: [String] = []
    ) {
        self.side = side
        self.transport = transport
        self.host = host
        self.port = port
        self.peer = peer
        self.certificateNames = certificateNames
    }

    /// The peer's address as a target: where the gateway's requests in the dialog go when its
    /// remote target may not be reached.
    public var target: SIPTarget {
        SIPTarget(transport, host: host, port: port, serverName: certificateNames.first { !$0.hasPrefix("*") })
    }
}
