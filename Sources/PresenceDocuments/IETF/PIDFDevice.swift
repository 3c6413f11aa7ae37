public import XMLBridge

/// `dm:device` (RFC 4479 §3.3, §5.1).
public struct PIDFDevice: Hashable, Sendable {
    public var id: String
    public var deviceID: String?
    public var rpid: RPID
    public var notes: [PIDFNote]
    public var timestamp: String?
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
