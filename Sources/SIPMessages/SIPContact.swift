/// One Contact value: `*` or an address with contact-params (RFC 3261 §20.10; RFC 5627 GRUU;
/// RFC 5626 `+sip.instance`; Microsoft `proxy=replace`).
///
/// ```
/// Contact        =  ("Contact" / "m" ) HCOLON ( STAR / (contact-param *(COMMA contact-param)))
/// contact-param  =  (name-addr / addr-spec) *(SEMI contact-params)
/// contact-params =  c-p-q / c-p-expires / contact-extension
/// c-p-q          =  "q" EQUAL qvalue
/// c-p-expires    =  "expires" EQUAL delta-seconds
/// ```
public enum SIPContact: Sendable, Hashable, CustomStringConvertible {
    /// `Contact: *` (REGISTER removing all bindings, RFC 3261 §10.2.2).
    case wildcard
    case address(SIPAddress)

    public var address: SIPAddress? {
        if case .address(let a) = self { return a }
        return nil
    }

    public var parameters: SIPParameters { address?.parameters ?? [] }

    /// `q` in thousandths (0...1000), nil when absent or malformed.
    public var q: Int? { parameters.value("q").flatMap(SIPMediaRange.parseQValue) }
    /// The `expires` contact parameter in seconds, nil when absent or not a 32-bit number.
    public var expires: UInt32? { parameters.value("expires").flatMap { UInt32($0) } }
    /// `+sip.instance` (RFC 5626 §4.1), without the quotes.
    public var instance: String? { parameters.value("+sip.instance") }
    /// The `gruu` contact parameter (Microsoft and draft GRUU) or `pub-gruu` (RFC 5627).
    public var gruu: String? { parameters.value("gruu") ?? parameters.value("pub-gruu") }
    /// Microsoft's `proxy=replace` ([MS-SIPRE]).
    public var isProxyReplace: Bool { parameters.value("proxy")?.lowercased() == "replace" }

    public var description: String {
        switch self {
        case .wildcard: return "*"
        case .address(let a): return a.description
        }
    }

    static func parseList(_ s: inout SIPScanner) throws(SIPParseError) -> [SIPContact] {
        s.skipLWS()
        if s.peek == 0x2A {
            s.index += 1
            try s.expectEnd("nothing after '*' in Contact")
            return [.wildcard]
        }
        var out: [SIPContact] = []
        repeat {
            out.append(.address(try SIPAddress.parse(&s)))
        } while s.consumeSeparator(0x2C)
        try s.expectEnd("',' or end of value after the address")
        return out
    }
}
