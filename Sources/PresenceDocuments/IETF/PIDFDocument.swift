public import XMLBridge

/// A PIDF presence document (RFC 3863) with the data-model (RFC 4479), RPID
/// (RFC 4480), CIPID (RFC 4482) and capability (RFC 5196) extensions, and the
/// Microsoft additions of [MS-PRES] §2.2.2.8.
///
/// ```
/// <presence entity="pres:..."> tuple* note* any* </presence>   (RFC 3863 §4.4)
/// ```
/// Unknown extension elements are kept in `extensions` and written back unchanged.
public struct PIDFDocument: Hashable, Sendable {
    /// The presentity URI (`entity` attribute).
    public var entity: String
    public var tuples: [PIDFTuple]
    /// RFC 4479 `dm:person` elements.
    public var persons: [PIDFPerson]
    /// RFC 4479 `dm:device` elements.
    public var devices: [PIDFDevice]
    /// Presence-level notes (RFC 3863 §4.1.6).
    public var notes: [PIDFNote]
    /// CIPID elements placed directly under `presence`, as Microsoft servers
    /// write `ci:display-name` ([MS-PRES] §2.2.2.8.1; RFC 4482 puts them in a person or tuple).
    public var cipid: CIPID
    /// Microsoft `linked-identities` ([MS-PRES] §2.2.2.8.1), in the PIDF namespace.
    public var linkedIdentities: LinkedIdentities?
    /// Microsoft `cid` ([MS-PRES] §2.2.2.8.1), in the PIDF namespace.
    public var cid: String?
    /// Unknown elements under `presence`, kept verbatim.
    public var extensions: [XMLElement]

    public init(
        entity: String, tuples: [PIDFTuple] = [], persons: [PIDFPerson] = [], devices: [PIDFDevice] = [],
        notes: [PIDFNote] = [], cipid: CIPID = CIPID(), linkedIdentities: LinkedIdentities? = nil,
        cid: String? = nil, extensions: [XMLElement] = []
    ) {
        self.entity = entity
        self.tuples = tuples
        self.persons = persons
        self.devices = devices
        self.notes = notes
        self.cipid = cipid
        self.linkedIdentities = linkedIdentities
        self.cid = cid
        self.extensions = extensions
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
public struct PIDFTuple: Hashable, Sendable {
    public var id: String
    public var status: PIDFStatus
    /// RFC 4479 `dm:deviceID` children.
    public var deviceIDs: [String]
    public var contact: PIDFContact?
    public var notes: [PIDFNote]
    /// `<timestamp>` as written (xs:dateTime).
    public var timestamp: String?
    /// RPID elements that RFC 4480 allows in a tuple (class, relationship,
    /// service-class, status-icon, user-input, ...).
    public var rpid: RPID
    /// CIPID elements in the tuple (RFC 4482 §3).
    public var cipid: CIPID
    /// Unknown elements in the tuple, kept verbatim.
    public var extensions: [XMLElement]

    public init(
        id: String, status: PIDFStatus = PIDFStatus(), deviceIDs: [String] = [], contact: PIDFContact? = nil,
        notes: [PIDFNote] = [], timestamp: String? = nil, rpid: RPID = RPID(), cipid: CIPID = CIPID(),
        extensions: [XMLElement] = []
    ) {
        self.id = id
        self.status = status
        self.deviceIDs = deviceIDs
        self.contact = contact
        self.notes = notes
        self.timestamp = timestamp
        self.rpid = rpid
        self.cipid = cipid
        self.extensions = extensions
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
