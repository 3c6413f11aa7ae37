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
        case 3 where bytes.elementsEqual("ACK".utf8): return .ack
        case 3 where bytes.elementsEqual("BYE".utf8): return .bye
        case 4 where bytes.elementsEqual("INFO".utf8): return .info
        case 5 where bytes.elementsEqual("PRACK".utf8): return .prack
        case 5 where bytes.elementsEqual("REFER".utf8): return .refer
        case 6 where bytes.elementsEqual("INVITE".utf8): return .invite
        case 6 where bytes.elementsEqual("CANCEL".utf8): return .cancel
        case 6 where bytes.elementsEqual("NOTIFY".utf8): return .notify
        case 6 where bytes.elementsEqual("UPDATE".utf8): return .update
        case 7 where bytes.elementsEqual("OPTIONS".utf8): return .options
        case 7 where bytes.elementsEqual("PUBLISH".utf8): return .publish
        case 7 where bytes.elementsEqual("MESSAGE".utf8): return .message
        case 7 where bytes.elementsEqual("SERVICE".utf8): return .service
        case 8 where bytes.elementsEqual("REGISTER".utf8): return .register
        case 8 where bytes.elementsEqual("BENOTIFY".utf8): return .benotify
        case 9 where bytes.elementsEqual("SUBSCRIBE".utf8): return .subscribe
        default: return SIPMethod(SIPByte.string(bytes))
        }
    }
}
