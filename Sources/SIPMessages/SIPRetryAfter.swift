/// The Retry-After header (RFC 3261 §20.33).
///
/// ```
/// Retry-After  =  "Retry-After" HCOLON delta-seconds [ comment ] *( SEMI retry-param )
/// retry-param  =  ("duration" EQUAL delta-seconds) / generic-param
/// ```
public struct SIPRetryAfter: Sendable, Hashable {
    public var seconds: UInt32
    /// The comment without its parentheses.
    public var comment: String?
    public var parameters: SIPParameters

    public init(seconds: UInt32, comment: String? = nil, parameters: SIPParameters = []) {
        self.seconds = seconds
        self.comment = comment
        self.parameters = parameters
    }

    public var duration: UInt32? { parameters.value("duration").flatMap { UInt32($0) } }

    static func parse(_ bytes: ArraySlice<UInt8>, header: String?, limits: SIPParserLimits) throws(SIPParseError)
        -> SIPRetryAfter
    {
        var s = SIPScanner(bytes, header: header, code: .invalidHeaderValue)
        s.skipLWS()
        let digits = s.run(while: SIPByte.isDigit)
        guard !digits.isEmpty else { throw s.error("delta-seconds (1*DIGIT)") }
        let n = try SIPByte.parseNumber(digits, max: UInt64(UInt32.max), what: "Retry-After seconds", header: header)
        var r = SIPRetryAfter(seconds: UInt32(n))
        s.skipLWS()
        if s.peek == 0x28 { r.comment = try s.comment(maxDepth: limits.maxCommentDepth) }
        try s.parameters(into: &r.parameters)
        try s.expectEnd("';' parameter or end of Retry-After")
        if let d = r.parameters.value("duration") {
            _ = try SIPByte.parseNumber(ArraySlice(d.utf8), max: UInt64(UInt32.max), what: "duration", header: header)
        }
        return r
    }
}
