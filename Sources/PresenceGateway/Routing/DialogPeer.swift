import NIOConcurrencyHelpers
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
    /// What says who the peer is, held out of line and shared: every dialog's state keeps a
    /// peer (its entry's, and some their subscription's), nearly always one of a few, so a
    /// dialog holds a reference (8 bytes) where the fields take 40, and dialogs of one peer
    /// share one copy of them (``shared()``).
    struct Fields: Hashable, Sendable {
        var side: GatewayConfiguration.Side
        var transport: SIPTransportKind
        var host: String
        var port: UInt16
        var peer: UInt16?
        var certificateNames: [String]
    }

    final class Storage: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    /// Its fields' one copy (shared by equal peers once ``shared()``).
    private(set) var storage: Storage

    public var side: GatewayConfiguration.Side {
        get { storage.fields.side }
        set { change { $0.side = newValue } }
    }
    /// The transport the dialog was made over: its requests stay on it (RFC 5630 §3.1.1 for TLS).
    public var transport: SIPTransportKind {
        get { storage.fields.transport }
        set { change { $0.transport = newValue } }
    }
    /// The address the peer used or was reached at (host and port).
    public var host: String {
        get { storage.fields.host }
        set { change { $0.host = newValue } }
    }
    public var port: UInt16 {
        get { storage.fields.port }
        set { change { $0.port = newValue } }
    }
    /// The configured peer, when the address is one: its position in
    /// ``GatewayConfiguration/peers`` (two bytes where a name would take sixteen).
    public var peer: UInt16? {
        get { storage.fields.peer }
        set { change { $0.peer = newValue } }
    }
    /// The TLS identities accepted inside the dialog: the configured peer's `certificate-names`,
    /// else the names of the certificate that made it; empty over UDP and TCP.
    public var certificateNames: [String] {
        get { storage.fields.certificateNames }
        set { change { $0.certificateNames = newValue } }
    }

    public init(
        side: GatewayConfiguration.Side, transport: SIPTransportKind, host: String, port: UInt16, peer: UInt16? = nil,
        certificateNames: [String] = []
    ) {
        storage = Storage(
            Fields(
                side: side, transport: transport, host: host, port: port, peer: peer,
                certificateNames: certificateNames))
    }

    private mutating func change(_ body: (inout Fields) -> Void) {
        var fields = storage.fields
        body(&fields)
        storage = Storage(fields)
    }

    public static func == (a: Self, b: Self) -> Bool { a.storage === b.storage || a.storage.fields == b.storage.fields }

    public func hash(into hasher: inout Hasher) { storage.fields.hash(into: &hasher) }

    /// The same peer, holding the copy of its fields that the dialogs made lately with an equal
    /// peer hold, when one did: what a dialog keeps is then shared with them. The peers seen
    /// lately are few and bounded (``Recent/capacity``), so nothing grows with the dialogs.
    public func shared() -> DialogPeer {
        var peer = self
        peer.storage = Self.recent.withLockedValue { $0.storage(for: storage) }
        return peer
    }

    private static let recent = NIOLockedValueBox(Recent())

    /// The storage of the peers seen last, replaced in turn.
    private struct Recent {
        static let capacity = 32
        private var kept: [Storage] = []
        private var next = 0

        mutating func storage(for storage: Storage) -> Storage {
            if let known = kept.first(where: { $0 === storage || $0.fields == storage.fields }) { return known }
            if kept.count < Self.capacity {
                kept.append(storage)
            } else {
                kept[next] = storage
                next = (next + 1) % Self.capacity
            }
            return storage
        }
    }

    /// The peer's address as a target: where the gateway's requests in the dialog go when its
    /// remote target may not be reached.
    public var target: SIPTarget {
        SIPTarget(transport, host: host, port: port, serverName: certificateNames.first { !$0.hasPrefix("*") })
    }
}
