/// A header field name: an open vocabulary compared case-insensitively, with the compact forms
/// of RFC 3261 §7.3.3 and §20 mapped to their long names.
///
/// ```
/// header-name  =  token
/// ```
///
/// Compact forms: `i` Call-ID, `m` Contact, `e` Content-Encoding, `l` Content-Length,
/// `c` Content-Type, `f` From, `s` Subject, `k` Supported, `t` To, `v` Via (RFC 3261 §20);
/// `o` Event, `u` Allow-Events (RFC 6665 §8.2 / RFC 3265 §7.2); `r` Refer-To (RFC 3515);
/// `b` Referred-By (RFC 3892); `x` Session-Expires (RFC 4028); `a` Accept-Contact,
/// `j` Reject-Contact, `d` Request-Disposition (RFC 3841); `y` Identity (RFC 8224);
/// `n` Identity-Info (RFC 4474).
public struct SIPHeaderName: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The long name, lowercased: the identity used for comparison.
    public let canonical: String
    /// How the name is written when a field is generated (`Call-ID`, or the name as first given).
    public let displayName: String

    init(canonical: String, displayName: String) {
        self.canonical = canonical
        self.displayName = displayName
    }

    /// A name from text; compact forms become their long form.
    public init(_ name: String) {
        let lower = String(decoding: name.utf8.map(SIPByte.lower), as: UTF8.self)
        if let known = SIPHeaderName.table[lower] {
            self = known
        } else {
            self.init(canonical: lower, displayName: name)
        }
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// Builds a name from header bytes, sharing the storage of known names.
    static func from(_ bytes: ArraySlice<UInt8>) -> SIPHeaderName {
        if bytes.count == 1 {
            switch SIPByte.lower(bytes[bytes.startIndex]) {
            case 0x76: return .via
            case 0x66: return .from
            case 0x74: return .to
            case 0x69: return .callID
            case 0x6D: return .contact
            case 0x6C: return .contentLength
            case 0x63: return .contentType
            default: break
            }
        }
        var lowered = [UInt8](repeating: 0, count: bytes.count)
        var i = 0
        for b in bytes {
            lowered[i] = SIPByte.lower(b)
            i += 1
        }
        let lower = String(decoding: lowered, as: UTF8.self)
        if let known = table[lower] { return known }
        return SIPHeaderName(canonical: lower, displayName: SIPByte.string(bytes))
    }

    public static func == (a: SIPHeaderName, b: SIPHeaderName) -> Bool { a.canonical == b.canonical }
    public func hash(into hasher: inout Hasher) { hasher.combine(canonical) }
    public var description: String { displayName }

    private static func n(_ display: String) -> SIPHeaderName {
        SIPHeaderName(canonical: String(decoding: display.utf8.map(SIPByte.lower), as: UTF8.self), displayName: display)
    }

    public static let via = n("Via")
    public static let from = n("From")
    public static let to = n("To")
    public static let callID = n("Call-ID")
    public static let cseq = n("CSeq")
    public static let maxForwards = n("Max-Forwards")
    public static let contact = n("Contact")
    public static let route = n("Route")
    public static let recordRoute = n("Record-Route")
    public static let expires = n("Expires")
    public static let minExpires = n("Min-Expires")
    public static let event = n("Event")
    public static let allowEvents = n("Allow-Events")
    public static let subscriptionState = n("Subscription-State")
    public static let accept = n("Accept")
    public static let allow = n("Allow")
    public static let contentType = n("Content-Type")
    public static let contentLength = n("Content-Length")
    public static let contentEncoding = n("Content-Encoding")
    public static let supported = n("Supported")
    public static let require = n("Require")
    public static let proxyRequire = n("Proxy-Require")
    public static let unsupported = n("Unsupported")
    public static let sipETag = n("SIP-ETag")
    public static let sipIfMatch = n("SIP-If-Match")
    public static let retryAfter = n("Retry-After")
    public static let subject = n("Subject")
    public static let date = n("Date")
    public static let userAgent = n("User-Agent")
    public static let server = n("Server")
    public static let authorization = n("Authorization")
    public static let wwwAuthenticate = n("WWW-Authenticate")
    public static let proxyAuthenticate = n("Proxy-Authenticate")
    public static let proxyAuthorization = n("Proxy-Authorization")
    public static let referTo = n("Refer-To")
    public static let referredBy = n("Referred-By")
    public static let sessionExpires = n("Session-Expires")
    public static let acceptContact = n("Accept-Contact")
    public static let rejectContact = n("Reject-Contact")
    public static let requestDisposition = n("Request-Disposition")
    public static let identity = n("Identity")
    public static let identityInfo = n("Identity-Info")
    public static let warning = n("Warning")
    /// Microsoft [MS-SIP]: the CSeq of the request a piggybacked notification answers.
    public static let msPiggybackCSeq = n("ms-piggyback-cseq")
    /// Microsoft [MS-SIPRE]: trust information added by the edge server.
    public static let msEdgeProxyMessageTrust = n("ms-edge-proxy-message-trust")
    /// Microsoft [MS-SIPRE] 3.10.1.4: the network a message came from.
    public static let msSourceNetwork = n("ms-source-network")

    /// Lowercased long and compact names → known name.
    static let table: [String: SIPHeaderName] = {
        var t: [String: SIPHeaderName] = [:]
        let all: [SIPHeaderName] = [
            via, from, to, callID, cseq, maxForwards, contact, route, recordRoute, expires, minExpires, event,
            allowEvents, subscriptionState, accept, allow, contentType, contentLength, contentEncoding, supported,
            require, proxyRequire, unsupported, sipETag, sipIfMatch, retryAfter, subject, date, userAgent, server,
            authorization, wwwAuthenticate, proxyAuthenticate, proxyAuthorization, referTo, referredBy,
            sessionExpires, acceptContact, rejectContact, requestDisposition, identity, identityInfo, warning,
            msPiggybackCSeq, msEdgeProxyMessageTrust, msSourceNetwork,
        ]
        for name in all { t[name.canonical] = name }
        let compact: [(String, SIPHeaderName)] = [
            ("i", callID), ("m", contact), ("e", contentEncoding), ("l", contentLength), ("c", contentType),
            ("f", from), ("s", subject), ("k", supported), ("t", to), ("v", via), ("o", event), ("u", allowEvents),
            ("r", referTo), ("b", referredBy), ("x", sessionExpires), ("a", acceptContact), ("j", rejectContact),
            ("d", requestDisposition), ("y", identity), ("n", identityInfo),
        ]
        for (c, name) in compact { t[c] = name }
        return t
    }()
}
