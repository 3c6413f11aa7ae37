public import XMLBridge

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
    private var rare: SharedFields<Rare>?

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

    public var addresses: [Address] {
        get { rare?.value.addresses ?? [] }
        set { rare.update(emptying: newValue.isEmpty) { $0.addresses = newValue } }
    }
    public var company: [LocalizedText] {
        get { rare?.value.company ?? [] }
        set { rare.update(emptying: newValue.isEmpty) { $0.company = newValue } }
    }
    public var department: [LocalizedText] {
        get { rare?.value.department ?? [] }
        set { rare.update(emptying: newValue.isEmpty) { $0.department = newValue } }
    }
    public var title: [LocalizedText] {
        get { rare?.value.title ?? [] }
        set { rare.update(emptying: newValue.isEmpty) { $0.title = newValue } }
    }
    public var office: [LocalizedText] {
        get { rare?.value.office ?? [] }
        set { rare.update(emptying: newValue.isEmpty) { $0.office = newValue } }
    }
    public var phones: [Phone] {
        get { rare?.value.phones ?? [] }
        set { rare.update(emptying: newValue.isEmpty) { $0.phones = newValue } }
    }
    public var automaton: Bool? {
        get { rare?.value.automaton }
        set { rare.update(emptying: newValue == nil) { $0.automaton = newValue } }
    }
    /// After the first `ct:delimiter`: person, huntgroup, autoattendant, automaton.
    public var type: String? {
        get { rare?.value.type }
        set { rare.update(emptying: newValue == nil) { $0.type = newValue } }
    }
    public var descriptionText: String? {
        get { rare?.value.descriptionText }
        set { rare.update(emptying: newValue == nil) { $0.descriptionText = newValue } }
    }
    /// After a second `ct:delimiter`.
    public var displayADPhoto: Bool? {
        get { rare?.value.displayADPhoto }
        set { rare.update(emptying: newValue == nil) { $0.displayADPhoto = newValue } }
    }
    public var majorVersion: String? {
        get { rare?.value.majorVersion }
        set { rare.update(emptying: newValue == nil) { $0.majorVersion = newValue } }
    }
    public var minorVersion: String? {
        get { rare?.value.minorVersion }
        set { rare.update(emptying: newValue == nil) { $0.minorVersion = newValue } }
    }
    /// Prose-only attribute ([MS-PRES] §2.2.2.7.5), not in the schema.
    public var isUCEnabled: Bool? {
        get { rare?.value.isUCEnabled }
        set { rare.update(emptying: newValue == nil) { $0.isUCEnabled = newValue } }
    }
    /// Elements not modelled above, kept verbatim.
    public var extensions: [XMLElement] {
        get { rare?.value.extensions ?? [] }
        set { rare.update(emptying: newValue.isEmpty) { $0.extensions = newValue } }
    }

    public struct LocalizedText: Hashable, Sendable {
        public var text: String
        public var lcid: String?
        public init(_ text: String, lcid: String? = nil) {
            self.text = text
            self.lcid = lcid
        }
    }

    public struct Address: Hashable, Sendable {
        public var type: String?
        public var street: [LocalizedText]
        public var city: [LocalizedText]
        public var state: [LocalizedText]
        public var zipcode: [LocalizedText]
        public var countryCode: String?
        public init(
            type: String? = nil, street: [LocalizedText] = [], city: [LocalizedText] = [], state: [LocalizedText] = [],
            zipcode: [LocalizedText] = [], countryCode: String? = nil
        ) {
            self.type = type
            self.street = street
            self.city = city
            self.state = state
            self.zipcode = zipcode
            self.countryCode = countryCode
        }
    }

    public struct TypedURI: Hashable, Sendable {
        public var type: String?
        public var uri: String
        public init(type: String?, uri: String) {
            self.type = type
            self.uri = uri
        }
    }

    public struct Phone: Hashable, Sendable {
        /// work, home, mobile, other, custom1.
        public var type: String?
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
        public var type: String?
        public var uri: String?
        /// CRC or Exchange ChangeKey (required by the schema).
        public var hash: String?
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
