/// A URI as SIP carries it: `sip:` and `sips:` (RFC 3261 §19.1), `tel:` (RFC 3966), or any
/// other absoluteURI kept opaque (RFC 3261 §25.1; RFC 4475 §3.3.2–§3.3.4).
///
/// ```
/// SIP-URI          =  "sip:" [ userinfo ] hostport uri-parameters [ headers ]
/// SIPS-URI         =  "sips:" [ userinfo ] hostport uri-parameters [ headers ]
/// userinfo         =  ( user / telephone-subscriber ) [ ":" password ] "@"
/// hostport         =  host [ ":" port ]
/// uri-parameters   =  *( ";" uri-parameter)
/// headers          =  "?" header *( "&" header )
/// telephone-uri    =  "tel:" telephone-subscriber *par        ; RFC 3966 §3
/// absoluteURI      =  scheme ":" ( hier-part / opaque-part )
/// ```
///
/// User, password, parameter and header components are stored with %-escapes resolved once
/// (RFC 4475 §3.1.1.3: `value%25%34%31` is `value%41`, not `valueA`) and are escaped again when
/// written. A URI that has not been modified since it was parsed is written back byte for byte.
public struct SIPURI: Sendable, Hashable, CustomStringConvertible {
    /// A URI scheme, compared case-insensitively (stored lowercased). Open vocabulary.
    public struct Scheme: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue.lowercased() }
        public var description: String { rawValue }
        public static let sip = Scheme(rawValue: "sip")
        public static let sips = Scheme(rawValue: "sips")
        public static let tel = Scheme(rawValue: "tel")

        /// sip, sips or tel spelled in any case, without building a string.
        static func known(_ bytes: ArraySlice<UInt8>) -> Scheme? {
            if SIPByte.equalsIgnoringCase(bytes, "sip") { return .sip }
            if SIPByte.equalsIgnoringCase(bytes, "sips") { return .sips }
            if SIPByte.equalsIgnoringCase(bytes, "tel") { return .tel }
            return nil
        }
    }

    public var scheme: Scheme { didSet { verbatim = nil } }
    /// The user part (sip/sips), or the telephone-subscriber number (tel). Unescaped.
    public var user: String? { didSet { verbatim = nil } }
    /// The password part of userinfo (RFC 3261 §19.1.1 says not to use it). Unescaped.
    public var password: String? { didSet { verbatim = nil } }
    /// The host as written: a hostname, an IPv4 address, or an IPv6 reference with brackets.
    /// Empty for tel and opaque URIs.
    public var host: String { didSet { verbatim = nil } }
    public var port: UInt16? { didSet { verbatim = nil } }
    /// uri-parameters in order (tel: the `par` list). Names and values unescaped.
    public var parameters: SIPParameters { didSet { verbatim = nil } }
    /// `?name=value&...` headers in order. Names and values unescaped.
    public var headers: SIPParameters { didSet { verbatim = nil } }
    /// For a scheme other than sip, sips and tel: everything after `scheme:`, as written.
    public var opaque: String? { didSet { verbatim = nil } }

    /// The bytes the URI was parsed from (always ASCII: the parser admits nothing else), while
    /// unmodified. A slice of the parsed message, not a copy.
    var verbatim: ArraySlice<UInt8>?

    public init(
        scheme: Scheme = .sip, user: String? = nil, password: String? = nil, host: String,
        port: UInt16? = nil, parameters: SIPParameters = [], headers: SIPParameters = []
    ) {
        self.scheme = scheme
        self.user = user
        self.password = password
        self.host = host
        self.port = port
        self.parameters = parameters
        self.headers = headers
        self.opaque = nil
        self.verbatim = nil
    }

    /// An absoluteURI of another scheme, kept opaque.
    public init(scheme: Scheme, opaque: String) {
        self.init(scheme: scheme, host: "")
        self.opaque = opaque
    }

    /// Parses a URI from its text.
    public init(_ text: String) throws(SIPParseError) {
        let bytes = Array(text.utf8)
        self = try SIPURI.parse(bytes[...], header: nil, code: .invalidURI)
    }

    /// Whether this is a sip: or sips: URI.
    public var isSIP: Bool { scheme == .sip || scheme == .sips }

    /// The `transport` uri-parameter, `user`, `maddr`, `lr` and friends are all in ``parameters``;
    /// these are shortcuts.
    public var transport: String? { parameters.value("transport") }
    public var maddr: String? { parameters.value("maddr") }
    public var isLooseRouting: Bool { parameters.contains("lr") }
    /// Microsoft's `;gruu` URI parameter ([MS-SIPRE] GRUU, also RFC 5627 §5.1 `gr`).
    public var isGRUU: Bool { parameters.contains("gruu") || parameters.contains("gr") }
    /// Microsoft's `;opaque=` URI parameter (e.g. `user:epid:...`).
    public var opaqueParameter: String? { parameters.value("opaque") }

    public static func == (a: SIPURI, b: SIPURI) -> Bool {
        a.scheme == b.scheme && a.user == b.user && a.password == b.password && a.host == b.host
            && a.port == b.port && a.parameters == b.parameters && a.headers == b.headers && a.opaque == b.opaque
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(scheme)
        hasher.combine(user)
        hasher.combine(host)
        hasher.combine(port)
        hasher.combine(opaque)
    }

    public var description: String {
        if let verbatim { return SIPByte.string(verbatim) }
        var out: [UInt8] = []
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

extension SIPURI {
    /// The same URI holding its own copy of the bytes it was parsed from, so that keeping it (in
    /// a dialog, for hours) does not keep the whole received message alive.
    public var detached: SIPURI {
        var copy = self
        copy.verbatim = verbatim.map { ArraySlice(Array($0)) }
        return copy
    }
}
