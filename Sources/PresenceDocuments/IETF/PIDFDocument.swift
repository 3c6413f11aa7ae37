public import XMLBridge

/// A PIDF presence document (RFC 3863) with the data-model (RFC 4479), RPID
/// (RFC 4480), CIPID (RFC 4482) and capability (RFC 5196) extensions, and the
/// Microsoft additions of [MS-PRES] §2.2.2.8.
///
/// ```
/// <presence entity="pres:..."> tuple* note* any* </presence>   (RFC 3863 §4.4)
/// ```
/// Unknown extension elements are kept in `extensions` and written back unchanged. The parts
/// are held as a ``PIDFTuple``'s are, in one shared box: copying a document costs a retain.
public struct PIDFDocument: Hashable, Sendable {
    var parts: SharedFields<Parts>

    struct Parts: Hashable, Sendable {
        var entity: String
        var tuples: [PIDFTuple]
        var persons: [PIDFPerson]
        var devices: [PIDFDevice]
        var notes: [PIDFNote]
        var cipid: CIPID
        var linkedIdentities: LinkedIdentities?
        var cid: String?
        var extensions: [XMLElement]
    }

    /// The presentity URI (`entity` attribute).
    public var entity: String {
        get { parts.value.entity }
        set { parts = parts.changing { $0.entity = newValue } }
    }
    public var tuples: [PIDFTuple] {
        get { parts.value.tuples }
        set { parts = parts.changing { $0.tuples = newValue } }
    }
    /// RFC 4479 `dm:person` elements.
    public var persons: [PIDFPerson] {
        get { parts.value.persons }
        set { parts = parts.changing { $0.persons = newValue } }
    }
    /// RFC 4479 `dm:device` elements.
    public var devices: [PIDFDevice] {
        get { parts.value.devices }
        set { parts = parts.changing { $0.devices = newValue } }
    }
    /// Presence-level notes (RFC 3863 §4.1.6).
    public var notes: [PIDFNote] {
        get { parts.value.notes }
        set { parts = parts.changing { $0.notes = newValue } }
    }
    /// CIPID elements placed directly under `presence`, as Microsoft servers
    /// write `ci:display-name` ([MS-PRES] §2.2.2.8.1; RFC 4482 puts them in a person or tuple).
    public var cipid: CIPID {
        get { parts.value.cipid }
        set { parts = parts.changing { $0.cipid = newValue } }
    }
    /// Microsoft `linked-identities` ([MS-PRES] §2.2.2.8.1), in the PIDF namespace.
    public var linkedIdentities: LinkedIdentities? {
        get { parts.value.linkedIdentities }
        set { parts = parts.changing { $0.linkedIdentities = newValue } }
    }
    /// Microsoft `cid` ([MS-PRES] §2.2.2.8.1), in the PIDF namespace.
    public var cid: String? {
        get { parts.value.cid }
        set { parts = parts.changing { $0.cid = newValue } }
    }
    /// Unknown elements under `presence`, kept verbatim.
    public var extensions: [XMLElement] {
        get { parts.value.extensions }
        set { parts = parts.changing { $0.extensions = newValue } }
    }

    public init(
        entity: String, tuples: [PIDFTuple] = [], persons: [PIDFPerson] = [], devices: [PIDFDevice] = [],
        notes: [PIDFNote] = [], cipid: CIPID = CIPID(), linkedIdentities: LinkedIdentities? = nil,
        cid: String? = nil, extensions: [XMLElement] = []
    ) {
        parts = SharedFields(
            Parts(
                entity: entity, tuples: tuples, persons: persons, devices: devices, notes: notes, cipid: cipid,
                linkedIdentities: linkedIdentities, cid: cid, extensions: extensions))
    }
}

/// Which spelling of PIDF extensions a writer uses.
public enum PIDFDialect: String, Sendable, Hashable, CaseIterable {
    /// RFC-conformant: RPID (RFC 4480) in `dm:person`, CIPID in the person,
    /// no Microsoft elements. For OMA/IMS peers.
    case rfc
    /// As Microsoft servers write it ([MS-PRES] §2.2.2.8.1): one tuple whose
    /// status carries `rpid-status` activities, CIPID under `presence`,
    /// `linked-identities` and `cid` in the PIDF namespace.
    case microsoft
}

/// `<basic>` (RFC 3863 §4.1.4).
public enum PIDFBasic: String, Hashable, Sendable {
    case open, closed
}

/// A `<note>` with its optional `xml:lang` (RFC 3863 §4.1.6).
public struct PIDFNote: Hashable, Sendable {
    public var text: String
    public var lang: String?
    public init(_ text: String, lang: String? = nil) {
        self.text = text
        self.lang = lang
    }
}

/// `<tuple>` (RFC 3863 §4.1.2).
///
/// Its parts are held in one shared box that is never changed (a change makes a new one), as
/// ``RPID``'s elements are: a tuple is copied wherever an array of them is read or built, and
/// copying it costs one retain; a read of a part borrows it where it lies.
public struct PIDFTuple: Hashable, Sendable {
    var parts: SharedFields<Parts>

    struct Parts: Hashable, Sendable {
        var id: String
        var status: PIDFStatus
        var deviceIDs: [String]
        var contact: PIDFContact?
        var notes: [PIDFNote]
        var timestamp: String?
        var rpid: RPID
        var cipid: CIPID
        var extensions: [XMLElement]
    }

    public var id: String {
        get { parts.value.id }
        set { parts = parts.changing { $0.id = newValue } }
    }
    public var status: PIDFStatus {
        get { parts.value.status }
        set { parts = parts.changing { $0.status = newValue } }
    }
    /// Calls `body` with the status where it lies in the tuple: the `status` getter copies it
    /// whole (a retain and a release for each of its strings, arrays and boxes).
    public func withStatus<Result>(_ body: (PIDFStatus) throws -> Result) rethrows -> Result {
        try body(parts.value.status)
    }
    /// RFC 4479 `dm:deviceID` children.
    public var deviceIDs: [String] {
        get { parts.value.deviceIDs }
        set { parts = parts.changing { $0.deviceIDs = newValue } }
    }
    public var contact: PIDFContact? {
        get { parts.value.contact }
        set { parts = parts.changing { $0.contact = newValue } }
    }
    public var notes: [PIDFNote] {
        get { parts.value.notes }
        set { parts = parts.changing { $0.notes = newValue } }
    }
    /// `<timestamp>` as written (xs:dateTime).
    public var timestamp: String? {
        get { parts.value.timestamp }
        set { parts = parts.changing { $0.timestamp = newValue } }
    }
    /// RPID elements that RFC 4480 allows in a tuple (class, relationship,
    /// service-class, status-icon, user-input, ...).
    public var rpid: RPID {
        get { parts.value.rpid }
        set { parts = parts.changing { $0.rpid = newValue } }
    }
    /// CIPID elements in the tuple (RFC 4482 §3).
    public var cipid: CIPID {
        get { parts.value.cipid }
        set { parts = parts.changing { $0.cipid = newValue } }
    }
    /// Unknown elements in the tuple, kept verbatim.
    public var extensions: [XMLElement] {
        get { parts.value.extensions }
        set { parts = parts.changing { $0.extensions = newValue } }
    }

    public init(
        id: String, status: PIDFStatus = PIDFStatus(), deviceIDs: [String] = [], contact: PIDFContact? = nil,
        notes: [PIDFNote] = [], timestamp: String? = nil, rpid: RPID = RPID(), cipid: CIPID = CIPID(),
        extensions: [XMLElement] = []
    ) {
        parts = SharedFields(
            Parts(
                id: id, status: status, deviceIDs: deviceIDs, contact: contact, notes: notes, timestamp: timestamp,
                rpid: rpid, cipid: cipid, extensions: extensions))
    }
}

/// `<status>` (RFC 3863 §4.1.3), with RFC 5196 `caps:servcaps` and the
/// pre-RFC RPID elements Microsoft puts there.
public struct PIDFStatus: Hashable, Sendable {
    public var basic: PIDFBasic?
    /// The text of `<basic>` when it is neither open nor closed (baresip sends
    /// "unknown"); kept so the document round-trips and the mapper can report it.
    public var unrecognizedBasic: String?
    /// `caps:servcaps` (RFC 5196 §3). The codec reads it from the tuple (where
    /// RFC 5196 §5 puts it) or from the status, and writes it in the tuple.
    public var capabilities: ServiceCapabilities?
    /// RPID in the status: pre-RFC `rpid-status` activities (Microsoft dialect).
    public var rpid: RPID
    public var extensions: [XMLElement]

    public init(
        basic: PIDFBasic? = nil, unrecognizedBasic: String? = nil, capabilities: ServiceCapabilities? = nil,
        rpid: RPID = RPID(), extensions: [XMLElement] = []
    ) {
        self.basic = basic
        self.unrecognizedBasic = unrecognizedBasic
        self.capabilities = capabilities
        self.rpid = rpid
        self.extensions = extensions
    }
}

/// `<contact priority="...">` (RFC 3863 §4.1.5). Priority is kept as written.
public struct PIDFContact: Hashable, Sendable {
    public var uri: String
    public var priority: String?
    public init(uri: String, priority: String? = nil) {
        self.uri = uri
        self.priority = priority
    }
}
