public import XMLBridge

/// `dm:person` (RFC 4479 §3.1, §5.1).
public struct PIDFPerson: Hashable, Sendable {
    public var id: String
    public var rpid: RPID
    public var cipid: CIPID
    public var notes: [PIDFNote]
    public var timestamp: String?
    public var extensions: [XMLElement]

    public init(
        id: String, rpid: RPID = RPID(), cipid: CIPID = CIPID(), notes: [PIDFNote] = [], timestamp: String? = nil,
        extensions: [XMLElement] = []
    ) {
        self.id = id
        self.rpid = rpid
        self.cipid = cipid
        self.notes = notes
        self.timestamp = timestamp
        self.extensions = extensions
    }

    /// True when the person says nothing beyond its id: no RPID, CIPID, note, timestamp or
    /// extension.
    public var isEmpty: Bool {
        rpid.isEmpty && cipid.isEmpty && notes.isEmpty && timestamp == nil && extensions.isEmpty
    }
}
