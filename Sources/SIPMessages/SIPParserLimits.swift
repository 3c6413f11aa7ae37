/// Explicit resource limits for the SIP parser (in the spirit of NIO's
/// `NIOHTTPDecoderLimitConfiguration`). Exceeding one gives a ``SIPParseError`` with a
/// specific code, never a trap or unbounded work.
public struct SIPParserLimits: Sendable, Hashable {
    /// Largest accepted message (start line, headers and body), in bytes.
    /// Default 65,536 (64 KiB): a UDP datagram cannot be larger, and RFC 3261 §18.1.1 moves
    /// anything near the path MTU to TCP. Exceeding it: ``SIPParseError/Code/messageTooLarge``.
    public var maxMessageSize: Int
    /// Most header fields (physical field lines, after unfolding). Default 256.
    /// Exceeding it: ``SIPParseError/Code/tooManyHeaders``.
    public var maxHeaderCount: Int
    /// Longest single line of the start line or header section, CRLF excluded. Default 8,192
    /// (8 KiB). Folded fields count per physical line. Exceeding it: ``SIPParseError/Code/lineTooLong``.
    public var maxLineLength: Int
    /// Most Via values (across all Via fields and comma-separated values). Default 64:
    /// RFC 4475 §3.1.1.7 (`longreq.dat`) is a valid request with 34. Exceeding it:
    /// ``SIPParseError/Code/tooManyVias``.
    public var maxViaCount: Int
    /// Deepest nesting of comments `( ... )` in values such as Retry-After. Default 8.
    public var maxCommentDepth: Int

    public init(
        maxMessageSize: Int = 65_536,
        maxHeaderCount: Int = 256,
        maxLineLength: Int = 8_192,
        maxViaCount: Int = 64,
        maxCommentDepth: Int = 8
    ) {
        self.maxMessageSize = maxMessageSize
        self.maxHeaderCount = maxHeaderCount
        self.maxLineLength = maxLineLength
        self.maxViaCount = maxViaCount
        self.maxCommentDepth = maxCommentDepth
    }

    /// The documented defaults.
    public static let `default` = SIPParserLimits()
}
