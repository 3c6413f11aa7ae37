/// A name-addr or addr-spec with header parameters: the value of From, To, Contact, Route,
/// Record-Route, Reply-To and similar headers (RFC 3261 §20.10, §20.20, §20.39).
///
/// ```
/// from-spec    =  ( name-addr / addr-spec ) *( SEMI from-param )
/// name-addr    =  [ display-name ] LAQUOT addr-spec RAQUOT
/// addr-spec    =  SIP-URI / SIPS-URI / absoluteURI
/// display-name =  *(token LWS)/ quoted-string
/// from-param   =  tag-param / generic-param
/// ```
///
/// Without `<>`, parameters after the URI belong to the header, not the URI (RFC 3261 §20;
/// RFC 4475 §3.3.12 `cparam01`).
public struct SIPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The display name with quoted-pairs resolved, or nil when absent.
    public var displayName: String?
    public var uri: SIPURI
    /// Header parameters (tag, epid, expires, q, +sip.instance, ...), in order.
    public var parameters: SIPParameters
    /// Whether the URI was written in angle brackets. It is always written in brackets when a
    /// display name is present or the URI contains `;`, `,` or `?`.
    public var usesAngleBrackets: Bool

    public init(displayName: String? = nil, uri: SIPURI, parameters: SIPParameters = [], usesAngleBrackets: Bool = true)
    {
        self.displayName = displayName
        self.uri = uri
        self.parameters = parameters
        self.usesAngleBrackets = usesAngleBrackets
    }

    /// Parses one value occupying the whole text.
    public init(_ text: String) throws(SIPParseError) {
        let bytes = Array(text.utf8)
        var scanner = SIPScanner(bytes[...], header: nil, code: .invalidAddress)
        self = try SIPAddress.parse(&scanner)
        try scanner.expectEnd("end of the address")
    }

    /// The `tag` parameter (RFC 3261 §19.3).
    public var tag: String? {
        get { parameters.value("tag") }
        set {
            if let newValue { parameters.set("tag", newValue) } else { parameters.remove("tag") }
        }
    }

    /// Microsoft's `epid` parameter on From/To ([MS-SIPRE] 2.2.x: endpoint identifier).
    public var epid: String? {
        get { parameters.value("epid") }
        set {
            if let newValue { parameters.set("epid", newValue) } else { parameters.remove("epid") }
        }
    }

    public var description: String {
        var out: [UInt8] = []
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func write(to out: inout [UInt8]) {
        var uriBytes: [UInt8] = []
        uri.write(to: &uriBytes)
        let brackets =
            usesAngleBrackets || displayName != nil
            || uriBytes.contains { $0 == 0x3B || $0 == 0x2C || $0 == 0x3F }
        if let displayName {
            SIPWriter.quoted(displayName, to: &out)
            out.append(0x20)
        }
        if brackets { out.append(0x3C) }
        out.append(contentsOf: uriBytes)
        if brackets { out.append(0x3E) }
        parameters.write(to: &out)
    }

    /// Parses `( name-addr / addr-spec ) *( SEMI generic-param )` at the scanner, stopping before a
    /// COMMA or the end.
    static func parse(_ s: inout SIPScanner) throws(SIPParseError) -> SIPAddress {
        s.skipLWS()
        var display: String? = nil
        var bracketed = false
        if s.peek == 0x22 {
            display = try s.quotedString()
            s.skipLWS()
            guard s.consume(0x3C) else { throw s.error("'<' after the quoted display name", code: .invalidAddress) }
            bracketed = true
        } else if s.consume(0x3C) {
            bracketed = true
        } else {
            // display-name = *(token LWS): a run of tokens followed by '<'. RFC 4475 §3.1.1.6
            // (lwsdisp) has no LWS before '<' and must be accepted.
            let save = s.index
            var lastTokenEnd = save
            while let b = s.peek, SIPByte.isToken(b) || SIPByte.isLWS(b) {
                s.index += 1
                if SIPByte.isToken(b) { lastTokenEnd = s.index }
            }
            if s.peek == 0x3C, lastTokenEnd > save {
                display = s.build ? SIPByte.unfolded(s.bytes[save..<lastTokenEnd]) : ""
                s.index += 1
                bracketed = true
            } else {
                s.index = save
            }
        }
        let uri: SIPURI
        if bracketed {
            let start = s.index
            guard let b = s.peek, !SIPByte.isLWS(b) else {
                throw s.error(
                    "URI right after '<' (RFC 3261 LAQUOT allows no whitespace after '<')", code: .invalidAddress)
            }
            _ = b
            var close = start
            while close < s.bytes.endIndex, s.bytes[close] != 0x3E { close += 1 }
            guard close < s.bytes.endIndex else {
                throw SIPParseError(
                    .invalidAddress, expected: "'>' closing the '<' here", offset: start - 1, header: s.header)
            }
            guard close > start, !SIPByte.isLWS(s.bytes[close - 1]) else {
                throw SIPParseError(
                    .invalidAddress, expected: "'>' right after the URI (RAQUOT allows no whitespace before '>')",
                    offset: close - 1, header: s.header)
            }
            uri = try SIPURI.parse(s.bytes[start..<close], header: s.header, code: .invalidURI, build: s.build)
            s.index = close + 1
        } else {
            let start = s.index
            while let b = s.peek, b != 0x3B, b != 0x2C, !SIPByte.isLWS(b) { s.index += 1 }
            guard s.index > start else { throw s.error("name-addr or addr-spec", code: .invalidAddress) }
            let spec = s.bytes[start..<s.index]
            if let q = spec.firstIndex(of: 0x3F) {
                throw SIPParseError(
                    .invalidAddress,
                    expected: "'<' '>' around a URI with headers ('?'): RFC 3261 §20 requires name-addr form",
                    offset: q, header: s.header)
            }
            do {
                uri = try SIPURI.parse(spec, header: s.header, code: .invalidURI, build: s.build)
            } catch {
                // Not a URI at all: report as an address error (e.g. RFC 4475 baddn, "Bell, Alexander").
                throw SIPParseError(
                    .invalidAddress, expected: "name-addr or addr-spec (\(error.expected))",
                    offset: error.offset, header: s.header)
            }
        }
        var params = SIPParameters()
        do {
            try s.parameters(into: &params)
        }
        return SIPAddress(displayName: display, uri: uri, parameters: params, usesAngleBrackets: bracketed)
    }

    /// Parses `value *(COMMA value)` of a list header (Contact, Route, Record-Route).
    static func parseList(_ s: inout SIPScanner) throws(SIPParseError) -> [SIPAddress] {
        var out: [SIPAddress] = []
        repeat {
            out.append(try parse(&s))
        } while s.consumeSeparator(0x2C)
        try s.expectEnd("',' or end of value after the address")
        return out
    }
}

extension SIPAddress {
    /// The same address with a ``SIPURI/detached`` URI.
    public var detached: SIPAddress {
        var copy = self
        copy.uri = uri.detached
        return copy
    }
}
