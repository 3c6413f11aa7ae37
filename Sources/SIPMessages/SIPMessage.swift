/// A SIP request or response (RFC 3261 §7).
///
/// ```
/// SIP-message  =  Request / Response
/// ```
///
/// Parse with ``init(parsing:limits:)`` (one datagram or one complete message) and write with
/// ``serialized(contentLength:)``. Both are pure functions of their input: no I/O.
public enum SIPMessage: Sendable, Hashable {
    case request(SIPRequest)
    case response(SIPResponse)

    /// Parses one message from a datagram (or a complete, already framed message).
    ///
    /// The body is framed by Content-Length; bytes after it are ignored (RFC 3261 §18.3 for
    /// UDP; RFC 4475 §3.1.1.8). A body shorter than Content-Length is an error
    /// (``SIPParseError/Code/bodyTruncated``). Without Content-Length the body runs to the end of
    /// the datagram (RFC 3261 §18.3; RFC 4475 §3.4.1).
    public init(parsing bytes: [UInt8], limits: SIPParserLimits = .default) throws(SIPParseError) {
        self = try SIPMessageParser.parse(bytes, limits: limits)
    }

    public var isRequest: Bool {
        if case .request = self { return true }
        return false
    }

    public var request: SIPRequest? {
        if case .request(let r) = self { return r }
        return nil
    }

    public var response: SIPResponse? {
        if case .response(let r) = self { return r }
        return nil
    }

    public var headers: SIPHeaders {
        get {
            switch self {
            case .request(let r): return r.headers
            case .response(let r): return r.headers
            }
        }
        set {
            switch self {
            case .request(var r):
                r.headers = newValue
                self = .request(r)
            case .response(var r):
                r.headers = newValue
                self = .response(r)
            }
        }
    }

    public var body: [UInt8] {
        get {
            switch self {
            case .request(let r): return r.body
            case .response(let r): return r.body
            }
        }
        set {
            switch self {
            case .request(var r):
                r.body = newValue
                self = .request(r)
            case .response(var r):
                r.body = newValue
                self = .response(r)
            }
        }
    }
}
