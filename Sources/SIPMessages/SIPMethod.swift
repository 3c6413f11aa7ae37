/// A SIP method: an open vocabulary (RFC 3261 §7.1, §27.4), compared case-sensitively.
///
/// ```
/// Method            =  INVITEm / ACKm / OPTIONSm / BYEm / CANCELm / REGISTERm / extension-method
/// extension-method  =  token
/// ```
///
/// RFC 4475 §3.1.1.5: `RE%47IST%45R` is an unknown method, not REGISTER (`%` is no escape here).
public struct SIPMethod: RawRepresentable, Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    public static let invite = SIPMethod("INVITE")
    public static let ack = SIPMethod("ACK")
    public static let bye = SIPMethod("BYE")
    public static let cancel = SIPMethod("CANCEL")
    public static let options = SIPMethod("OPTIONS")
    public static let register = SIPMethod("REGISTER")
    /// RFC 3262.
    public static let prack = SIPMethod("PRACK")
    /// RFC 6665 (was RFC 3265).
    public static let subscribe = SIPMethod("SUBSCRIBE")
    public static let notify = SIPMethod("NOTIFY")
    /// RFC 3903.
    public static let publish = SIPMethod("PUBLISH")
    /// RFC 3428.
    public static let message = SIPMethod("MESSAGE")
    /// RFC 6086.
    public static let info = SIPMethod("INFO")
    /// RFC 3311.
    public static let update = SIPMethod("UPDATE")
    /// RFC 3515.
    public static let refer = SIPMethod("REFER")
    /// Microsoft [MS-SIP] / [MS-PRES]: container and category service requests.
    public static let service = SIPMethod("SERVICE")
    /// Microsoft [MS-SIP] 3.5: best-effort NOTIFY that takes no response.
    public static let benotify = SIPMethod("BENOTIFY")

    static func known(_ bytes: ArraySlice<UInt8>) -> SIPMethod {
        switch bytes.count {
        case 3 where SIPByte.equals(bytes, "ACK"): return .ack
        case 3 where SIPByte.equals(bytes, "BYE"): return .bye
        case 4 where SIPByte.equals(bytes, "INFO"): return .info
        case 5 where SIPByte.equals(bytes, "PRACK"): return .prack
        case 5 where SIPByte.equals(bytes, "REFER"): return .refer
        case 6 where SIPByte.equals(bytes, "INVITE"): return .invite
        case 6 where SIPByte.equals(bytes, "CANCEL"): return .cancel
        case 6 where SIPByte.equals(bytes, "NOTIFY"): return .notify
        case 6 where SIPByte.equals(bytes, "UPDATE"): return .update
        case 7 where SIPByte.equals(bytes, "OPTIONS"): return .options
        case 7 where SIPByte.equals(bytes, "PUBLISH"): return .publish
        case 7 where SIPByte.equals(bytes, "MESSAGE"): return .message
        case 7 where SIPByte.equals(bytes, "SERVICE"): return .service
        case 8 where SIPByte.equals(bytes, "REGISTER"): return .register
        case 8 where SIPByte.equals(bytes, "BENOTIFY"): return .benotify
        case 9 where SIPByte.equals(bytes, "SUBSCRIBE"): return .subscribe
        default: return SIPMethod(SIPByte.string(bytes))
        }
    }
}
