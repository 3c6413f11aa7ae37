public import XMLBridge

// Optional stored properties are declared `Optional<T>`, not `T?`: a `var x: T?`
// starts out nil, so the initializer's `self.x = x` assigns it a second time,
// and the optimizer then builds the whole value aside and copies it into place
// (a retain and a release per field on every value made). `Optional<T>` has no
// implicit initial value: the initializer's assignment is the only one.

/// `dm:device` (RFC 4479 §3.3, §5.1).
public struct PIDFDevice: Hashable, Sendable {
    public var id: String
    public var deviceID: Optional<String>
    public var rpid: RPID
    public var notes: [PIDFNote]
    public var timestamp: Optional<String>
    public var extensions: [XMLElement]

    public init(
        id: String, deviceID: String? = nil, rpid: RPID = RPID(), notes: [PIDFNote] = [], timestamp: String? = nil,
        extensions: [XMLElement] = []
    ) {
        self.id = id
        self.deviceID = deviceID
        self.rpid = rpid
        self.notes = notes
        self.timestamp = timestamp
        self.extensions = extensions
    }
}
