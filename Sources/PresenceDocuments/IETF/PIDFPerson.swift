public import XMLBridge

/// `dm:person` (RFC 4479 §3.1, §5.1). Its parts are held as a ``PIDFTuple``'s are.
public struct PIDFPerson: Hashable, Sendable {
    var parts: SharedFields<Parts>

    struct Parts: Hashable, Sendable {
        var id: String
        var rpid: RPID
        var cipid: CIPID
        var notes: [PIDFNote]
        var timestamp: String?
        var extensions: [XMLElement]
    }

    public var id: String {
        get { parts.value.id }
        set { parts = parts.changing { $0.id = newValue } }
    }
    public var rpid: RPID {
        get { parts.value.rpid }
        set { parts = parts.changing { $0.rpid = newValue } }
    }
    public var cipid: CIPID {
        get { parts.value.cipid }
        set { parts = parts.changing { $0.cipid = newValue } }
    }
    public var notes: [PIDFNote] {
        get { parts.value.notes }
        set { parts = parts.changing { $0.notes = newValue } }
    }
    public var timestamp: String? {
        get { parts.value.timestamp }
        set { parts = parts.changing { $0.timestamp = newValue } }
    }
    public var extensions: [XMLElement] {
        get { parts.value.extensions }
        set { parts = parts.changing { $0.extensions = newValue } }
    }

    public init(
        id: String, rpid: RPID = RPID(), cipid: CIPID = CIPID(), notes: [PIDFNote] = [], timestamp: String? = nil,
        extensions: [XMLElement] = []
    ) {
        parts = SharedFields(
            Parts(id: id, rpid: rpid, cipid: cipid, notes: notes, timestamp: timestamp, extensions: extensions))
    }

    /// True when the person says nothing beyond its id: no RPID, CIPID, note, timestamp or
    /// extension.
    public var isEmpty: Bool {
        parts.value.rpid.isEmpty && parts.value.cipid.isEmpty && parts.value.notes.isEmpty
            && parts.value.timestamp == nil && parts.value.extensions.isEmpty
    }
}
