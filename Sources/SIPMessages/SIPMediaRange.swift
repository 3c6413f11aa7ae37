/// One Accept value (RFC 3261 §20.1).
///
/// ```
/// Accept         =  "Accept" HCOLON [ accept-range *(COMMA accept-range) ]
/// accept-range   =  media-range *(SEMI accept-param)
/// media-range    =  ( "*/*" / ( m-type SLASH "*" ) / ( m-type SLASH m-subtype ) ) *( SEMI m-parameter )
/// accept-param   =  ("q" EQUAL qvalue) / generic-param
/// qvalue         =  ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
/// ```
///
/// Type and subtype compare case-insensitively and are stored lowercased.
public struct SIPMediaRange: Sendable, Hashable, CustomStringConvertible {
    public var type: String
    public var subtype: String
    /// m-parameters and accept-params in order (including `q`).
    public var parameters: SIPParameters

    public init(type: String, subtype: String, parameters: SIPParameters = []) {
        self.type = type.lowercased()
        self.subtype = subtype.lowercased()
        self.parameters = parameters
    }

    /// The q-value in thousandths (1000 when absent, RFC 3261 §20.1 / RFC 2616 §14.1).
    public var q: Int { parameters.value("q").flatMap(Self.parseQValue) ?? 1000 }

    /// Whether this range accepts the given media type (wildcards honoured).
    public func matches(type t: String, subtype st: String) -> Bool {
        (type == "*" || type == t.lowercased()) && (subtype == "*" || subtype == st.lowercased())
    }

    public var description: String {
        var out = Array("\(type)/\(subtype)".utf8)
        parameters.write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `qvalue` → thousandths, nil when it does not match the grammar.
    static func parseQValue(_ text: String) -> Int? {
        let u = Array(text.utf8)
        guard let first = u.first, first == 0x30 || first == 0x31 else { return nil }
        var value = Int(first - 0x30) * 1000
        if u.count == 1 { return value }
        guard u.count >= 2, u.count <= 5, u[1] == 0x2E else { return nil }
        var scale = 100
        for d in u[2...] {
            guard SIPByte.isDigit(d) else { return nil }
            value += Int(d - 0x30) * scale
            scale /= 10
        }
        return value <= 1000 ? value : nil
    }

    /// `m-type SLASH m-subtype` followed by parameters.
    static func parse(_ s: inout SIPScanner) throws(SIPParseError) -> SIPMediaRange {
        s.skipLWS()
        let t = try s.token("media type (token or '*')")
        guard s.consumeSeparator(0x2F) else { throw s.error("'/' between type and subtype") }
        let st = try s.token("media subtype (token or '*')")
        var range = SIPMediaRange(type: SIPByte.string(t), subtype: SIPByte.string(st))
        try s.parameters(into: &range.parameters)
        return range
    }

    /// Accept: possibly empty list.
    static func parseList(_ s: inout SIPScanner) throws(SIPParseError) -> [SIPMediaRange] {
        s.skipLWS()
        if s.isAtEnd { return [] }
        var out: [SIPMediaRange] = []
        repeat {
            out.append(try parse(&s))
        } while s.consumeSeparator(0x2C)
        try s.expectEnd("',' or ';' or end of the Accept value")
        return out
    }
}
