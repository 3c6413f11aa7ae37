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
    /// Index into ``Known/names`` (1...) for a well-known name; 0 for an extension name.
    let id: UInt8
    /// Canonical and display text of an extension name; nil for well-known names, so copying a
    /// well-known name costs no reference counting.
    let ext: Extension?

    final class Extension: Sendable {
        let canonical: String
        let displayName: String
        init(canonical: String, displayName: String) {
            self.canonical = canonical
            self.displayName = displayName
        }
    }

    private init(known id: UInt8) {
        self.id = id
        self.ext = nil
    }

    private init(canonical: String, displayName: String) {
        self.id = 0
        self.ext = Extension(canonical: canonical, displayName: displayName)
    }

    /// The long name, lowercased: the identity used for comparison.
    public var canonical: String { ext?.canonical ?? Known.names[Int(id)].canonical }
    /// How the name is written when a field is generated (`Call-ID`, or the name as first given).
    public var displayName: String { ext?.displayName ?? Known.names[Int(id)].display }

    /// A name from text; compact forms become their long form.
    public init(_ name: String) {
        var bytes = Array(name.utf8)
        if let known = SIPHeaderName.known(bytes[...]) {
            self = known
        } else {
            for k in bytes.indices { bytes[k] = SIPByte.lower(bytes[k]) }
            self.init(canonical: String(decoding: bytes, as: UTF8.self), displayName: name)
        }
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// Builds a name from header bytes: well-known long and compact names are matched
    /// case-insensitively byte by byte, without allocating.
    static func from(_ bytes: ArraySlice<UInt8>) -> SIPHeaderName {
        if let known = known(bytes) { return known }
        var lowered = [UInt8](repeating: 0, count: bytes.count)
        var i = 0
        for b in bytes {
            lowered[i] = SIPByte.lower(b)
            i += 1
        }
        return SIPHeaderName(canonical: String(decoding: lowered, as: UTF8.self), displayName: SIPByte.string(bytes))
    }

    /// The well-known name (long or compact form) these bytes spell, compared case-insensitively
    /// by length, then byte by byte (no allocation). The cases list ``Known/names`` lowercased;
    /// `everyWellKnownNameIsFoundFromItsTextInAnyCase` checks they agree.
    static func known(_ bytes: ArraySlice<UInt8>) -> SIPHeaderName? {
        let count = bytes.count
        if count == 1 {
            let c = SIPByte.lower(bytes[bytes.startIndex])
            guard c >= 0x61, c <= 0x7A else { return nil }
            let id = Known.compact[Int(c - 0x61)]
            return id == 0 ? nil : SIPHeaderName(known: id)
        }
        switch count {
        case 2:
            if SIPByte.equalsIgnoringCase(bytes, "to") { return .to }
        case 3:
            if SIPByte.equalsIgnoringCase(bytes, "via") { return .via }
        case 4:
            if SIPByte.equalsIgnoringCase(bytes, "from") { return .from }
            if SIPByte.equalsIgnoringCase(bytes, "cseq") { return .cseq }
            if SIPByte.equalsIgnoringCase(bytes, "date") { return .date }
        case 5:
            if SIPByte.equalsIgnoringCase(bytes, "route") { return .route }
            if SIPByte.equalsIgnoringCase(bytes, "event") { return .event }
            if SIPByte.equalsIgnoringCase(bytes, "allow") { return .allow }
        case 6:
            if SIPByte.equalsIgnoringCase(bytes, "accept") { return .accept }
            if SIPByte.equalsIgnoringCase(bytes, "server") { return .server }
        case 7:
            if SIPByte.equalsIgnoringCase(bytes, "call-id") { return .callID }
            if SIPByte.equalsIgnoringCase(bytes, "contact") { return .contact }
            if SIPByte.equalsIgnoringCase(bytes, "expires") { return .expires }
            if SIPByte.equalsIgnoringCase(bytes, "require") { return .require }
            if SIPByte.equalsIgnoringCase(bytes, "subject") { return .subject }
            if SIPByte.equalsIgnoringCase(bytes, "warning") { return .warning }
        case 8:
            if SIPByte.equalsIgnoringCase(bytes, "sip-etag") { return .sipETag }
            if SIPByte.equalsIgnoringCase(bytes, "refer-to") { return .referTo }
            if SIPByte.equalsIgnoringCase(bytes, "identity") { return .identity }
        case 9:
            if SIPByte.equalsIgnoringCase(bytes, "supported") { return .supported }
        case 10:
            if SIPByte.equalsIgnoringCase(bytes, "user-agent") { return .userAgent }
        case 11:
            if SIPByte.equalsIgnoringCase(bytes, "min-expires") { return .minExpires }
            if SIPByte.equalsIgnoringCase(bytes, "unsupported") { return .unsupported }
            if SIPByte.equalsIgnoringCase(bytes, "retry-after") { return .retryAfter }
            if SIPByte.equalsIgnoringCase(bytes, "referred-by") { return .referredBy }
        case 12:
            if SIPByte.equalsIgnoringCase(bytes, "max-forwards") { return .maxForwards }
            if SIPByte.equalsIgnoringCase(bytes, "record-route") { return .recordRoute }
            if SIPByte.equalsIgnoringCase(bytes, "allow-events") { return .allowEvents }
            if SIPByte.equalsIgnoringCase(bytes, "content-type") { return .contentType }
            if SIPByte.equalsIgnoringCase(bytes, "sip-if-match") { return .sipIfMatch }
        case 13:
            if SIPByte.equalsIgnoringCase(bytes, "proxy-require") { return .proxyRequire }
            if SIPByte.equalsIgnoringCase(bytes, "authorization") { return .authorization }
            if SIPByte.equalsIgnoringCase(bytes, "identity-info") { return .identityInfo }
        case 14:
            if SIPByte.equalsIgnoringCase(bytes, "content-length") { return .contentLength }
            if SIPByte.equalsIgnoringCase(bytes, "accept-contact") { return .acceptContact }
            if SIPByte.equalsIgnoringCase(bytes, "reject-contact") { return .rejectContact }
        case 15:
            if SIPByte.equalsIgnoringCase(bytes, "session-expires") { return .sessionExpires }
        case 16:
            if SIPByte.equalsIgnoringCase(bytes, "content-encoding") { return .contentEncoding }
            if SIPByte.equalsIgnoringCase(bytes, "www-authenticate") { return .wwwAuthenticate }
        case 17:
            if SIPByte.equalsIgnoringCase(bytes, "ms-piggyback-cseq") { return .msPiggybackCSeq }
            if SIPByte.equalsIgnoringCase(bytes, "ms-source-network") { return .msSourceNetwork }
        case 18:
            if SIPByte.equalsIgnoringCase(bytes, "subscription-state") { return .subscriptionState }
            if SIPByte.equalsIgnoringCase(bytes, "proxy-authenticate") { return .proxyAuthenticate }
        case 19:
            if SIPByte.equalsIgnoringCase(bytes, "proxy-authorization") { return .proxyAuthorization }
            if SIPByte.equalsIgnoringCase(bytes, "request-disposition") { return .requestDisposition }
        case 27:
            if SIPByte.equalsIgnoringCase(bytes, "ms-edge-proxy-message-trust") { return .msEdgeProxyMessageTrust }
        default: break
        }
        return nil
    }

    public static func == (a: SIPHeaderName, b: SIPHeaderName) -> Bool {
        if a.id != 0 || b.id != 0 { return a.id == b.id }
        return a.canonical == b.canonical
    }
    public func hash(into hasher: inout Hasher) { hasher.combine(canonical) }
    public var description: String { displayName }

    /// The well-known names: display text, canonical text and lowercased bytes, indexed by id.
    enum Known {
        struct Entry: Sendable {
            let display: String
            let canonical: String
            init(_ display: String) {
                self.display = display
                self.canonical = String(decoding: display.utf8.map(SIPByte.lower), as: UTF8.self)
            }
        }

        static let names: [Entry] = [
            Entry(""),
            Entry("Via"),
            Entry("From"),
            Entry("To"),
            Entry("Call-ID"),
            Entry("CSeq"),
            Entry("Max-Forwards"),
            Entry("Contact"),
            Entry("Route"),
            Entry("Record-Route"),
            Entry("Expires"),
            Entry("Min-Expires"),
            Entry("Event"),
            Entry("Allow-Events"),
            Entry("Subscription-State"),
            Entry("Accept"),
            Entry("Allow"),
            Entry("Content-Type"),
            Entry("Content-Length"),
            Entry("Content-Encoding"),
            Entry("Supported"),
            Entry("Require"),
            Entry("Proxy-Require"),
            Entry("Unsupported"),
            Entry("SIP-ETag"),
            Entry("SIP-If-Match"),
            Entry("Retry-After"),
            Entry("Subject"),
            Entry("Date"),
            Entry("User-Agent"),
            Entry("Server"),
            Entry("Authorization"),
            Entry("WWW-Authenticate"),
            Entry("Proxy-Authenticate"),
            Entry("Proxy-Authorization"),
            Entry("Refer-To"),
            Entry("Referred-By"),
            Entry("Session-Expires"),
            Entry("Accept-Contact"),
            Entry("Reject-Contact"),
            Entry("Request-Disposition"),
            Entry("Identity"),
            Entry("Identity-Info"),
            Entry("Warning"),
            Entry("ms-piggyback-cseq"),
            Entry("ms-edge-proxy-message-trust"),
            Entry("ms-source-network"),
        ]

        /// Compact forms (RFC 3261 §7.3.3 and the RFCs above): id by letter `a`...`z`, 0 for none.
        static let compact: [UInt8] = {
            var t = [UInt8](repeating: 0, count: 26)
            t[8] = 4  // i: Call-ID
            t[12] = 7  // m: Contact
            t[4] = 19  // e: Content-Encoding
            t[11] = 18  // l: Content-Length
            t[2] = 17  // c: Content-Type
            t[5] = 2  // f: From
            t[18] = 27  // s: Subject
            t[10] = 20  // k: Supported
            t[19] = 3  // t: To
            t[21] = 1  // v: Via
            t[14] = 12  // o: Event
            t[20] = 13  // u: Allow-Events
            t[17] = 35  // r: Refer-To
            t[1] = 36  // b: Referred-By
            t[23] = 37  // x: Session-Expires
            t[0] = 38  // a: Accept-Contact
            t[9] = 39  // j: Reject-Contact
            t[3] = 40  // d: Request-Disposition
            t[24] = 41  // y: Identity
            t[13] = 42  // n: Identity-Info
            return t
        }()
    }

    public static let via = SIPHeaderName(known: 1)
    public static let from = SIPHeaderName(known: 2)
    public static let to = SIPHeaderName(known: 3)
    public static let callID = SIPHeaderName(known: 4)
    public static let cseq = SIPHeaderName(known: 5)
    public static let maxForwards = SIPHeaderName(known: 6)
    public static let contact = SIPHeaderName(known: 7)
    public static let route = SIPHeaderName(known: 8)
    public static let recordRoute = SIPHeaderName(known: 9)
    public static let expires = SIPHeaderName(known: 10)
    public static let minExpires = SIPHeaderName(known: 11)
    public static let event = SIPHeaderName(known: 12)
    public static let allowEvents = SIPHeaderName(known: 13)
    public static let subscriptionState = SIPHeaderName(known: 14)
    public static let accept = SIPHeaderName(known: 15)
    public static let allow = SIPHeaderName(known: 16)
    public static let contentType = SIPHeaderName(known: 17)
    public static let contentLength = SIPHeaderName(known: 18)
    public static let contentEncoding = SIPHeaderName(known: 19)
    public static let supported = SIPHeaderName(known: 20)
    public static let require = SIPHeaderName(known: 21)
    public static let proxyRequire = SIPHeaderName(known: 22)
    public static let unsupported = SIPHeaderName(known: 23)
    public static let sipETag = SIPHeaderName(known: 24)
    public static let sipIfMatch = SIPHeaderName(known: 25)
    public static let retryAfter = SIPHeaderName(known: 26)
    public static let subject = SIPHeaderName(known: 27)
    public static let date = SIPHeaderName(known: 28)
    public static let userAgent = SIPHeaderName(known: 29)
    public static let server = SIPHeaderName(known: 30)
    public static let authorization = SIPHeaderName(known: 31)
    public static let wwwAuthenticate = SIPHeaderName(known: 32)
    public static let proxyAuthenticate = SIPHeaderName(known: 33)
    public static let proxyAuthorization = SIPHeaderName(known: 34)
    public static let referTo = SIPHeaderName(known: 35)
    public static let referredBy = SIPHeaderName(known: 36)
    public static let sessionExpires = SIPHeaderName(known: 37)
    public static let acceptContact = SIPHeaderName(known: 38)
    public static let rejectContact = SIPHeaderName(known: 39)
    public static let requestDisposition = SIPHeaderName(known: 40)
    public static let identity = SIPHeaderName(known: 41)
    public static let identityInfo = SIPHeaderName(known: 42)
    public static let warning = SIPHeaderName(known: 43)
    /// Microsoft [MS-SIP]: the CSeq of the request a piggybacked notification answers.
    public static let msPiggybackCSeq = SIPHeaderName(known: 44)
    /// Microsoft [MS-SIPRE]: trust information added by the edge server.
    public static let msEdgeProxyMessageTrust = SIPHeaderName(known: 45)
    /// Microsoft [MS-SIPRE] 3.10.1.4: the network a message came from.
    public static let msSourceNetwork = SIPHeaderName(known: 46)
}
