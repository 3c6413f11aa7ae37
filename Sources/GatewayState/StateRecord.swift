/// One piece of the gateway's state as the durable store keeps it (docs/state.md): a watcher's
/// subscription, a subscription the gateway holds on the other side, a publication, a pool hint.
///
/// The store does not read ``body`` (the gateway's own JSON for the kind); it keeps the columns
/// beside it so that a node can find who owns a dialog and an operator can query the file.
public struct StateRecord: Sendable, Hashable {
    /// What the record holds (`enterprise-watch`, `oma-leg`, `oma-watch`, `enterprise-leg`, ...).
    public var kind: String
    /// Unique within the kind.
    public var key: String
    /// The Call-ID and local tag of the dialog it holds, if any (RFC 3261 §12: with the remote
    /// tag, the dialog ID; these two name it from either side's requests to this one).
    public var callID: String?
    public var localTag: String?
    /// When it ends unless refreshed, in milliseconds since the Unix epoch.
    public var expires: Int64?
    public var body: [UInt8]

    public init(
        kind: String, key: String, callID: String? = nil, localTag: String? = nil, expires: Int64? = nil, body: [UInt8]
    ) {
        self.kind = kind
        self.key = key
        self.callID = callID
        self.localTag = localTag
        self.expires = expires
        self.body = body
    }
}

/// A change to the stored state: a record written (new or replaced) or removed.
public enum StateChange: Sendable, Hashable {
    case put(StateRecord)
    case delete(kind: String, key: String)

    public var kind: String {
        switch self {
        case .put(let record): record.kind
        case .delete(let kind, _): kind
        }
    }

    public var key: String {
        switch self {
        case .put(let record): record.key
        case .delete(_, let key): key
        }
    }

    public var id: StateRecordID { StateRecordID(kind: kind, key: key) }
}
