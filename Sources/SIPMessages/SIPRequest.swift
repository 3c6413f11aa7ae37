/// A SIP request (RFC 3261 §7.1).
///
/// ```
/// Request       =  Request-Line *( message-header ) CRLF [ message-body ]
/// Request-Line  =  Method SP Request-URI SP SIP-Version CRLF
/// ```
public struct SIPRequest: Sendable, Hashable {
    public var method: SIPMethod
    public var uri: SIPURI
    public var headers: SIPHeaders
    public var body: [UInt8]

    public init(method: SIPMethod, uri: SIPURI, headers: SIPHeaders = [], body: [UInt8] = []) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
    }
}
