public import XMLBridge

// Optional stored properties are declared `Optional<T>`, not `T?`: a `var x: T?`
// starts out nil, so the initializer's `self.x = x` assigns it a second time,
// and the optimizer then builds the whole value aside and copies it into place
// (a retain and a release per field on every value made). `Optional<T>` has no
// implicit initial value: the initializer's assignment is the only one.

/// The `contactCard` category data ([MS-PRES] §2.2.2.7.5, schema §7.3).
///
/// The identity (display names and e-mails), the URLs and the photos (what CIPID carries) are
/// held inline and every other field out of line, in one box that is absent when they all are:
/// a card is usually published as several instances of which most hold the identity only, and
/// copying or freeing a card touches one reference for all the rest (it was fifteen, one per
/// field).
public struct ContactCard: Hashable, Sendable {
    /// `identity/name/displayName` texts (with LCID when given).
    public var displayNames: [LocalizedText]
    /// `identity/email` values.
    public var emails: [String]
    public var urls: [TypedURI]
    public var photos: [Photo]
    private var rare: Optional<SharedFields<Rare>>

    struct Rare: RareFields {
        var addresses: [Address] = []
        var company: [LocalizedText] = []
        var department: [LocalizedText] = []
        var title: [LocalizedText] = []
        var office: [LocalizedText] = []
        var phones: [Phone] = []
        var automaton: Bool?
        var type: String?
        var descriptionText: String?
        var displayADPhoto: Bool?
        var majorVersion: String?
        var minorVersion: String?
        var isUCEnabled: Bool?
        var extensions: [XMLElement] = []

        var isEmpty: Bool {
            addresses.isEmpty && company.isEmpty && department.isEmpty && title.isEmpty && office.isEmpty
                && phones.isEmpty && automaton == nil && type == nil && descriptionText == nil
                && displayADPhoto == nil && majorVersion == nil && minorVersion == nil
                && isUCEnabled == nil && extensions.isEmpty
        }
    }

    public var addresses: [Address] { get { rare?.value.addresses ?? [] } set { rare.update(emptying: newValue.isEmpty) { $0.addresses = newValue } } }
    public var company: [LocalizedText] { get { rare?.value.company ?? [] } set { rare.update(emptying: newValue.isEmpty) { $0.company = newValue } } }
    public var department: [LocalizedText] {
        get { rare?.value.department ?? [] } set { rare.update(emptying: newValue.isEmpty) { $0.department = newValue } }
    }
    public var title: [LocalizedText] { get { rare?.value.title ?? [] } set { rare.update(emptying: newValue.isEmpty) { $0.title = newValue } } }
    public var office: [LocalizedText] { get { rare?.value.office ?? [] } set { rare.update(emptying: newValue.isEmpty) { $0.office = newValue } } }
    public var phones: [Phone] { get { rare?.value.phones ?? [] } set { rare.update(emptying: newValue.isEmpty) { $0.phones = newValue } } }
    public var automaton: Bool? { get { rare?.value.automaton } set { rare.update(emptying: newValue == nil) { $0.automaton = newValue } } }
    /// After the first `ct:delimiter`: person, huntgroup, autoattendant, automaton.
    public var type: String? { get { rare?.value.type } set { rare.update(emptying: newValue == nil) { $0.type = newValue } } }
    public var descriptionText: String? {
        get { rare?.value.descriptionText } set { rare.update(emptying: newValue == nil) { $0.descriptionText = newValue } }
    }
    /// After a second `ct:delimiter`.
    public var displayADPhoto: Bool? {
        get { rare?.value.displayADPhoto } set { rare.update(emptying: newValue == nil) { $0.displayADPhoto = newValue } }
    }
    public var majorVersion: String? {
        get { rare?.value.majorVersion } set { rare.update(emptying: newValue == nil) { $0.majorVersion = newValue } }
    }
    public var minorVersion: String? {
        get { rare?.value.minorVersion } set { rare.update(emptying: newValue == nil) { $0.minorVersion = newValue } }
    }
    /// Prose-only attribute ([MS-PRES] lines 4108-4109), not in the schema.
    public var isUCEnabled: Bool? { get { rare?.value.isUCEnabled } set { rare.update(emptying: newValue == nil) { $0.isUCEnabled = newValue } } }
    /// Elements not modelled above, kept verbatim.
    public var extensions: [XMLElement] {
        get { rare?.value.extensions ?? [] } set { rare.update(emptying: newValue.isEmpty) { $0.extensions = newValue } }
    }

    public struct LocalizedText: Hashable, Sendable {
        public var text: String
        public var lcid: Optional<String>
        public init(_ text: String, lcid: String? = nil) {
            self.text = text
            self.lcid = lcid
        }
    }

    public struct Address: Hashable, Sendable {
        public var type: Optional<String>
        public var street: [LocalizedText]
        public var city: [LocalizedText]
        public var state: [LocalizedText]
        public var zipcode: [LocalizedText]
        public var countryCode: Optional<String>
        public init(type: String? = nil, street: [LocalizedText] = [], city: [LocalizedText] = [], state: [LocalizedText] = [], zipcode: [LocalizedText] = [], countryCode: String? = nil) {
            self.type = type
            self.street = street
            self.city = city
            self.state = state
            self.zipcode = zipcode
            self.countryCode = countryCode
        }
    }

    public struct TypedURI: Hashable, Sendable {
        public var type: Optional<String>
        public var uri: String
        public init(type: String?, uri: String) {
            self.type = type
            self.uri = uri
        }
    }

    public struct Phone: Hashable, Sendable {
        /// work, home, mobile, other, custom1.
        public var type: Optional<String>
        /// A tel URI (required by the schema).
        public var uri: String
        public var displayStrings: [LocalizedText]
        public init(type: String?, uri: String, displayStrings: [LocalizedText] = []) {
            self.type = type
            self.uri = uri
            self.displayStrings = displayStrings
        }
    }

    public struct Photo: Hashable, Sendable {
        /// default, enterprise, exchange, other.
        public var type: Optional<String>
        public var uri: Optional<String>
        /// CRC or Exchange ChangeKey (required by the schema).
        public var hash: Optional<String>
        public init(type: String? = nil, uri: String? = nil, hash: String? = nil) {
            self.type = type
            self.uri = uri
            self.hash = hash
        }
    }

    public init(
        displayNames: [LocalizedText] = [], emails: [String] = [], addresses: [Address] = [],
        company: [LocalizedText] = [], department: [LocalizedText] = [], title: [LocalizedText] = [],
        office: [LocalizedText] = [], urls: [TypedURI] = [], phones: [Phone] = [], automaton: Bool? = nil,
        type: String? = nil, descriptionText: String? = nil, displayADPhoto: Bool? = nil, photos: [Photo] = [],
        majorVersion: String? = nil, minorVersion: String? = nil, isUCEnabled: Bool? = nil,
        extensions: [XMLElement] = []
    ) {
        self.displayNames = displayNames
        self.emails = emails
        self.urls = urls
        self.photos = photos
        let rare = Rare(
            addresses: addresses, company: company, department: department, title: title, office: office,
            phones: phones, automaton: automaton, type: type, descriptionText: descriptionText,
            displayADPhoto: displayADPhoto, majorVersion: majorVersion, minorVersion: minorVersion,
            isUCEnabled: isUCEnabled, extensions: extensions)
        self.rare = Optional(keeping: rare)
    }

    /// A card of these fields, the others given as gathered by the decoder (nil when none was found).
    init(displayNames: [LocalizedText], emails: [String], urls: [TypedURI], photos: [Photo], rare: Rare?) {
        self.displayNames = displayNames
        self.emails = emails
        self.urls = urls
        self.photos = photos
        self.rare = rare.flatMap(Optional.init(keeping:))
    }
}

/// The `calendarData` category data ([MS-PRES] §2.2.2.7.8, schema §7.8).
public struct CalendarData: Hashable, Sendable {
    /// Required by the schema, missing in some spec examples (parsed leniently).
    public var mailboxID: Optional<String>
    public var majorVersion: Optional<String>
    public var minorVersion: Optional<String>
    /// Exchange `WorkingHours`, kept verbatim (Exchange types namespace).
    ///
    /// A decoded document keeps it as the recorded parse events it came from
    /// (the gateway passes it through or drops it, and never looks inside);
    /// reading this property builds the tree.
    public var workingHours: XMLElement? {
        get { workingHoursContent?.tree }
        set { workingHoursContent = newValue.map(VerbatimElement.tree) }
    }
    /// `WorkingHours` as held: a tree, or recorded events.
    var workingHoursContent: Optional<VerbatimElement>
    /// True when the data holds a `WorkingHours` element (without building its tree).
    public var hasWorkingHours: Bool { workingHoursContent != nil }
    public var freeBusy: Optional<FreeBusy>
    public var extensions: [XMLElement]

    /// `freeBusy` ([MS-PRES] lines 4472-4547): base64 slots from `startTime`,
    /// each `granularity` (xs:duration, e.g. PT15M) long.
    public struct FreeBusy: Hashable, Sendable {
        public var startTime: Optional<String>
        public var granularity: Optional<String>
        public var encodingVersion: Optional<String>
        /// The base64 text as written (often empty in the spec's examples).
        public var data: String
        public init(startTime: String? = nil, granularity: String? = nil, encodingVersion: String? = nil, data: String = "") {
            self.startTime = startTime
            self.granularity = granularity
            self.encodingVersion = encodingVersion
            self.data = data
        }
    }

    public init(
        mailboxID: String? = nil, majorVersion: String? = nil, minorVersion: String? = nil,
        workingHours: XMLElement? = nil, freeBusy: FreeBusy? = nil, extensions: [XMLElement] = []
    ) {
        self.mailboxID = mailboxID
        self.majorVersion = majorVersion
        self.minorVersion = minorVersion
        self.workingHoursContent = workingHours.map(VerbatimElement.tree)
        self.freeBusy = freeBusy
        self.extensions = extensions
    }

    /// The same with `WorkingHours` as held (the decoder keeps it as recorded events).
    init(
        mailboxID: String?, majorVersion: String?, minorVersion: String?, workingHoursContent: VerbatimElement?,
        freeBusy: FreeBusy?, extensions: [XMLElement]
    ) {
        self.mailboxID = mailboxID
        self.majorVersion = majorVersion
        self.minorVersion = minorVersion
        self.workingHoursContent = workingHoursContent
        self.freeBusy = freeBusy
        self.extensions = extensions
    }

    /// Equal when every field is, `WorkingHours` compared as an element
    /// (``XMLElement`` equality: names, attributes in any order, content).
    public static func == (a: CalendarData, b: CalendarData) -> Bool {
        a.mailboxID == b.mailboxID && a.majorVersion == b.majorVersion && a.minorVersion == b.minorVersion
            && a.freeBusy == b.freeBusy && a.extensions == b.extensions && a.workingHours == b.workingHours
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(mailboxID)
        hasher.combine(majorVersion)
        hasher.combine(minorVersion)
        hasher.combine(freeBusy)
        hasher.combine(extensions)
        hasher.combine(workingHours)
    }
}

/// An element kept verbatim: a value tree, or the recorded parse events of a
/// decoded document (``XMLCursor/detached``), whose tree is built only when
/// asked for and which writes the same bytes the tree would.
enum VerbatimElement: Sendable {
    case tree(XMLElement)
    case recorded(XMLCursor)

    var tree: XMLElement {
        switch self {
        case .tree(let e): e
        case .recorded(let c): c.subtree
        }
    }

    func write(to w: inout XMLStreamWriter) {
        switch self {
        case .tree(let e): w.element(e)
        case .recorded(let c): w.element(c)
        }
    }
}

/// A capability element of `services` or `device` (`<text render="true" capture="true"/>`).
public struct MSCapability: Hashable, Sendable {
    /// The element's local name: text, voice, video, calendar, gifInk, isfInk, applicationSharing, ...
    public var name: String
    /// The attributes sorted by key, each key once: how they are held and written. A capability
    /// has a few attributes; a dictionary cost a hash per attribute and a table per element.
    public internal(set) var sortedAttributes: [Attribute]

    /// One attribute: keyed by its local name, or `{namespace}local` when it has a namespace.
    public struct Attribute: Hashable, Sendable {
        public var key: String
        public var value: String
        public init(_ key: String, _ value: String) {
            self.key = key
            self.value = value
        }
    }

    public init(name: String, attributes: [String: String] = [:]) {
        self.name = name
        self.sortedAttributes = attributes.map { Attribute($0.key, $0.value) }.sorted { $0.key < $1.key }
    }

    /// A capability with attributes already sorted by key, each key once (checked in debug builds).
    public init(name: String, sortedAttributes: [Attribute]) {
        assert(zip(sortedAttributes, sortedAttributes.dropFirst()).allSatisfy { $0.key < $1.key })
        self.name = name
        self.sortedAttributes = sortedAttributes
    }

    /// The attributes by key.
    public var attributes: [String: String] {
        get { Dictionary(uniqueKeysWithValues: sortedAttributes.lazy.map { ($0.key, $0.value) }) }
        set { sortedAttributes = newValue.map { Attribute($0.key, $0.value) }.sorted { $0.key < $1.key } }
    }

    /// The value of the attribute keyed `key`.
    @inlinable
    public subscript(attribute key: String) -> String? {
        sortedAttributes.first { $0.key == key }?.value
    }

    /// Sets the attribute keyed `key`, in its place in key order (replacing one with that key).
    public mutating func setAttribute(_ key: String, _ value: String) {
        var i = sortedAttributes.endIndex
        while i > 0, key < sortedAttributes[i - 1].key { i -= 1 }
        if i > 0, sortedAttributes[i - 1].key == key {
            sortedAttributes[i - 1].value = value
        } else {
            sortedAttributes.insert(Attribute(key, value), at: i)
        }
    }

    // Inlinable: called from another module (the mapper) on a capability in its array, a
    // getter took a copy of the whole capability; inlined, it reads the attributes in place.
    @inlinable
    public var render: Bool? { self[attribute: "render"].flatMap(Bool.init(xsd:)) }
    @inlinable
    public var capture: Bool? { self[attribute: "capture"].flatMap(Bool.init(xsd:)) }
}

/// The `services` category data ([MS-PRES] §2.2.2.7.3, schema §7.5).
public struct MSServices: Hashable, Sendable {
    public var services: [Service]
    public var extensions: [XMLElement]

    public struct Service: Hashable, Sendable {
        public var uri: String
        public var capabilities: [MSCapability]
        /// Elements after the capabilities (e.g. `preferredEndpointId`), kept verbatim.
        public var extensions: [XMLElement]
        public init(uri: String, capabilities: [MSCapability] = [], extensions: [XMLElement] = []) {
            self.uri = uri
            self.capabilities = capabilities
            self.extensions = extensions
        }
    }

    public init(services: [Service] = [], extensions: [XMLElement] = []) {
        self.services = services
        self.extensions = extensions
    }
}

/// The `device` category data ([MS-PRES] §2.2.2.7.2, schema §7.4).
public struct MSDevice: Hashable, Sendable {
    public var endpointID: Optional<String>
    public var capabilities: [Capabilities]
    public var timezone: Optional<String>
    public var machineName: Optional<String>
    public var extensions: [XMLElement]

    public struct Capabilities: Hashable, Sendable {
        public var uri: Optional<String>
        public var preferred: Optional<Bool>
        public var items: [MSCapability]
        public init(uri: String?, preferred: Bool? = nil, items: [MSCapability] = []) {
            self.uri = uri
            self.preferred = preferred
            self.items = items
        }
    }

    public init(endpointID: String? = nil, capabilities: [Capabilities] = [], timezone: String? = nil, machineName: String? = nil, extensions: [XMLElement] = []) {
        self.endpointID = endpointID
        self.capabilities = capabilities
        self.timezone = timezone
        self.machineName = machineName
        self.extensions = extensions
    }
}

/// The `userProperties` category data ([MS-PRES] §2.2.2.7.4, schema §7.6),
/// in the categories namespace. Server-published, self-only.
public struct UserProperties: Hashable, Sendable {
    public var lines: [Line]
    /// Simple text fields in document order (telephonyMode, facsimileTelephoneNumber,
    /// streetAddress, l, st, countryCode, postalCode, wWWHomePage, ...).
    public var fields: [Field]
    /// Structured children not modelled above (acpInformation, ...), kept verbatim.
    public var extensions: [XMLElement]

    public struct Line: Hashable, Sendable {
        /// Uc, UcPrivate, Rcc, Dual.
        public var lineType: Optional<String>
        public var lineServer: Optional<String>
        public var uri: String
        public init(lineType: String?, lineServer: String? = nil, uri: String) {
            self.lineType = lineType
            self.lineServer = lineServer
            self.uri = uri
        }
    }

    public struct Field: Hashable, Sendable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    public init(lines: [Line] = [], fields: [Field] = [], extensions: [XMLElement] = []) {
        self.lines = lines
        self.fields = fields
        self.extensions = extensions
    }
}

extension Bool {
    /// Parses xs:boolean ("true", "false", "1", "0", surrounding white space allowed).
    public init?(xsd text: String) {
        // The usual value, without white space, compared before a trimmed copy is made.
        switch text {
        case "true", "1": self = true; return
        case "false", "0": self = false; return
        default: break
        }
        switch text.trimmingXMLWhitespace() {
        case "true", "1": self = true
        case "false", "0": self = false
        default: return nil
        }
    }
}
