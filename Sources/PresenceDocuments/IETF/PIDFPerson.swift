public import XMLBridge

// Optional stored properties are declared `Optional<T>`, not `T?`: a `var x: T?`
// starts out nil, so the initializer's `self.x = x` assigns it a second time,
// and the optimizer then builds the whole value aside and copies it into place
// (a retain and a release per field on every value made). `Optional<T>` has no
// implicit initial value: the initializer's assignment is the only one.

/// `dm:person` (RFC 4479 §3.1, §5.1).
public struct PIDFPerson: Hashable, Sendable {
    public var id: String
    public var rpid: RPID
    public var cipid: CIPID
    public var notes: [PIDFNote]
    public var timestamp: Optional<String>
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
}
