/// The one error type of the SIPMessages module.
///
/// Every error carries a stable ``Code`` (its `rawValue` never changes and may be logged, counted
/// or mapped to a response such as 400 or 505), a sentence saying what was expected, and where:
/// the byte offset into the parsed input and, for whole messages, the 1-based line.
public struct SIPParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code. Open vocabulary: compare with the static members.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // Limits (see ``SIPParserLimits``).
        /// The input is larger than ``SIPParserLimits/maxMessageSize``.
        public static let messageTooLarge = Code(rawValue: "message-too-large")
        /// More header fields than ``SIPParserLimits/maxHeaderCount``.
        public static let tooManyHeaders = Code(rawValue: "too-many-headers")
        /// A line longer than ``SIPParserLimits/maxLineLength``.
        public static let lineTooLong = Code(rawValue: "line-too-long")
        /// More Via values than ``SIPParserLimits/maxViaCount``.
        public static let tooManyVias = Code(rawValue: "too-many-vias")

        // Framing and start line.
        /// No bytes, or only CRLF keep-alives.
        public static let emptyMessage = Code(rawValue: "empty-message")
        /// The start line is not `Method SP Request-URI SP SIP-Version` or
        /// `SIP-Version SP Status-Code SP Reason-Phrase` (RFC 3261 §7.1, §7.2).
        public static let invalidStartLine = Code(rawValue: "start-line")
        /// The Request-URI does not parse (RFC 3261 §19.1, §25.1).
        public static let invalidRequestURI = Code(rawValue: "request-uri")
        /// The Request-URI carries `?headers`, which RFC 3261 §19.1.1 (Table 1) forbids there.
        public static let requestURIHeaders = Code(rawValue: "request-uri-headers")
        /// The SIP-Version is well formed but is not `SIP/2.0` (answer 505, RFC 3261 §21.5.6; RFC 4475 §3.1.2.16).
        public static let unsupportedVersion = Code(rawValue: "unsupported-version")
        /// The status code is not three digits from 100 to 699 (RFC 3261 §7.2, §21).
        // swift-format-ignore: DontRepeatTypeInStaticProperties
        public static let invalidStatusCode = Code(rawValue: "status-code")
        /// A header line has no colon, an empty or non-token name, or folds without a preceding field.
        public static let invalidHeaderLine = Code(rawValue: "header-line")
        /// The input ended before the empty line that closes the header section.
        public static let headersIncomplete = Code(rawValue: "headers-incomplete")
        /// Content-Length is not `1*DIGIT` or does not fit (RFC 3261 §20.14).
        public static let invalidContentLength = Code(rawValue: "content-length")
        /// More than one Content-Length field: the framing is ambiguous (RFC 4475 §3.3.9).
        public static let duplicateContentLength = Code(rawValue: "content-length-duplicate")
        /// The body is shorter than Content-Length (RFC 3261 §18.3; RFC 4475 §3.1.2.2).
        public static let bodyTruncated = Code(rawValue: "body-truncated")
        /// A message on a stream (TCP, TLS) has no Content-Length, so its end cannot be found
        /// (RFC 3261 §18.3, §20.14: mandatory on streams). The connection must be closed.
        public static let missingContentLength = Code(rawValue: "content-length-missing")
        /// A stream connection buffered more unframed bytes than allowed (``SIPStreamFramer``).
        public static let streamBufferFull = Code(rawValue: "stream-buffer-full")

        // Header semantics checked at message level.
        /// A mandatory header (Via, From, To, Call-ID, CSeq) is missing (RFC 3261 §8.1.1).
        public static let missingHeader = Code(rawValue: "missing-header")
        /// A header that takes one value appears more than once (RFC 3261 §7.3.1; RFC 4475 §3.3.8).
        public static let duplicateHeader = Code(rawValue: "duplicate-header")
        /// The CSeq method differs from the request method (RFC 3261 §8.1.1.5; RFC 4475 §3.1.2.17).
        public static let cseqMethodMismatch = Code(rawValue: "cseq-method-mismatch")

        // Header value syntax.
        /// A Via value does not parse (RFC 3261 §20.42).
        public static let invalidVia = Code(rawValue: "via")
        /// A name-addr or addr-spec (From, To, Contact, Route, ...) does not parse (RFC 3261 §20.10).
        public static let invalidAddress = Code(rawValue: "address")
        /// A quoted-string is not closed (RFC 3261 §25.1).
        public static let unterminatedQuotedString = Code(rawValue: "quoted-string")
        /// A URI does not parse (RFC 3261 §19.1, §25.1; RFC 3966).
        public static let invalidURI = Code(rawValue: "uri")
        /// CSeq is not `1*DIGIT LWS Method` (RFC 3261 §20.16).
        public static let invalidCSeq = Code(rawValue: "cseq")
        /// Call-ID is not `word [ "@" word ]` (RFC 3261 §20.8).
        public static let invalidCallID = Code(rawValue: "call-id")
        /// A number is larger than its field allows (CSeq, Expires, Max-Forwards, ports, ...).
        public static let valueOutOfRange = Code(rawValue: "value-out-of-range")
        /// Any other header value that does not match its grammar.
        public static let invalidHeaderValue = Code(rawValue: "header-value")
        /// The multipart body does not parse (RFC 2046 §5.1).
        public static let invalidMultipart = Code(rawValue: "multipart")
    }

    /// The stable code.
    public var code: Code
    /// What the parser expected to find, as a sentence fragment ("token after ';'").
    public var expected: String
    /// Byte offset into the parsed input, when known.
    public var offset: Int?
    /// 1-based line of the message, when known.
    public var line: Int?
    /// The header (as written or canonical) being parsed, when known.
    public var header: String?

    public init(_ code: Code, expected: String, offset: Int? = nil, line: Int? = nil, header: String? = nil) {
        self.code = code
        self.expected = expected
        self.offset = offset
        self.line = line
        self.header = header
    }

    public var description: String {
        var places: [String] = []
        if let line { places.append("line \(line)") }
        if let offset { places.append("byte \(offset)") }
        if let header { places.append("header \(header)") }
        let at = places.isEmpty ? "" : " at " + places.joined(separator: ", ")
        return "SIP parse error [\(code.rawValue)]\(at): expected \(expected)"
    }

    /// Fills in the line number from the message bytes the offset points into.
    func located(in bytes: [UInt8], header: String? = nil) -> SIPParseError {
        var copy = self
        if copy.header == nil { copy.header = header }
        if copy.line == nil, let offset, offset >= 0 {
            var line = 1
            var i = 0
            let end = min(offset, bytes.count)
            while i < end {
                if bytes[i] == 0x0A { line += 1 }
                i += 1
            }
            copy.line = line
        }
        return copy
    }
}
