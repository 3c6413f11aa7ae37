/// A SIP response (RFC 3261 §7.2).
///
/// ```
/// Response     =  Status-Line *( message-header ) CRLF [ message-body ]
/// Status-Line  =  SIP-Version SP Status-Code SP Reason-Phrase CRLF
/// Status-Code  =  3DIGIT  (100 to 699)
/// Reason-Phrase =  *(reserved / unreserved / escaped / UTF8-NONASCII / UTF8-CONT / SP / HTAB)
/// ```
public struct SIPResponse: Sendable, Hashable {
    /// 100...699.
    public var statusCode: Int
    /// May be empty (RFC 4475 §3.1.1.13) or non-ASCII UTF-8 (§3.1.1.12).
    public var reasonPhrase: String
    public var headers: SIPHeaders
    public var body: [UInt8]

    public init(statusCode: Int, reasonPhrase: String, headers: SIPHeaders = [], body: [UInt8] = []) {
        self.statusCode = statusCode
        self.reasonPhrase = reasonPhrase
        self.headers = headers
        self.body = body
    }
}
