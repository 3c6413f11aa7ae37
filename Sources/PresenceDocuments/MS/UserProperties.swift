public import XMLBridge

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
        public var lineType: String?
        public var lineServer: String?
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
