/// The Content-Type header (RFC 3261 §20.15; multipart parameters: RFC 2046 §5.1.1,
/// RFC 2387 §3).
///
/// ```
/// Content-Type     =  ( "Content-Type" / "c" ) HCOLON media-type
/// media-type       =  m-type SLASH m-subtype *(SEMI m-parameter)
/// m-parameter      =  m-attribute EQUAL m-value
/// m-value          =  token / quoted-string
/// ```
public struct SIPContentType: Sendable, Hashable, CustomStringConvertible {
    /// Lowercased.
    public var type: String
    /// Lowercased.
    public var subtype: String
    public var parameters: SIPParameters

    public init(type: String, subtype: String, parameters: SIPParameters = []) {
        self.type = type.lowercased()
        self.subtype = subtype.lowercased()
        self.parameters = parameters
    }

    public init(_ text: String) throws(SIPParseError) {
        let bytes = Array(text.utf8)
        self = try SIPContentType.parse(bytes[...], header: "Content-Type")
    }

    /// `type/subtype`, lowercased.
    public var mediaType: String { "\(type)/\(subtype)" }
    public var isMultipart: Bool { type == "multipart" }
    /// The multipart `boundary` parameter (RFC 2046 §5.1.1).
    public var boundary: String? { parameters.value("boundary") }
    /// multipart/related `type` parameter (RFC 2387 §3.1), e.g. `application/rlmi+xml`.
    public var typeParameter: String? { parameters.value("type") }
    /// multipart/related `start` parameter (RFC 2387 §3.2).
    public var start: String? { parameters.value("start") }
    public var charset: String? { parameters.value("charset") }

    public var description: String {
        var out = Array("\(type)/\(subtype)".utf8)
        parameters.write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func parse(_ bytes: ArraySlice<UInt8>, header: String?) throws(SIPParseError) -> SIPContentType {
        var s = SIPScanner(bytes, header: header, code: .invalidHeaderValue)
        let r = try SIPMediaRange.parse(&s)
        try s.expectEnd("';' parameter or end of Content-Type")
        for p in r.parameters where p.value == nil {
            throw SIPParseError(
                .invalidHeaderValue, expected: "'=' value for media-type parameter \(p.name)",
                offset: bytes.startIndex, header: header)
        }
        return SIPContentType(type: r.type, subtype: r.subtype, parameters: r.parameters)
    }
}
