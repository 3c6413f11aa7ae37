import Crypto

/// A user name and password for one realm, and the Digest responses computed from them (RFC
/// 3261 §22.4; RFC 7616 §3.4.1, the `qop=auth` form and the RFC 2069 form without it; RFC 8760
/// §2.3 for SIP's use of SHA-256).
///
/// ```
/// A1       = username ":" realm ":" password
/// A2       = Method ":" digest-uri
/// response = H( H(A1) ":" nonce ":" nc ":" cnonce ":" qop ":" H(A2) )   (qop=auth)
/// response = H( H(A1) ":" nonce ":" H(A2) )                               (no qop)
/// ```
///
/// `description` never shows the password.
public struct SIPDigestCredentials: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public var realm: String
    public var username: String
    private var password: String

    public init(realm: String, username: String, password: String) {
        self.realm = realm
        self.username = username
        self.password = password
    }

    public var description: String { "\(username)@\(realm)" }
    public var debugDescription: String { description }
    /// What `dump` and a containing value's description show: no password.
    public var customMirror: Mirror { Mirror(self, children: ["realm": realm, "username": username]) }

    /// The hex digest of `text` with `algorithm` (RFC 7616 §3.4.1: lowercase hex).
    static func hash(_ text: String, _ algorithm: SIPDigestChallenge.Algorithm) -> String {
        let bytes = Array(text.utf8)
        switch algorithm {
        case .md5: return hex(Insecure.MD5.hash(data: bytes))
        case .sha256: return hex(SHA256.hash(data: bytes))
        }
    }

    private static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in digest {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The `response` value for `method` on `uri` (the Request-URI as sent, RFC 3261 §22.4).
    public func response(
        to challenge: SIPDigestChallenge, method: String, uri: String, nonceCount: UInt32, cnonce: String
    ) -> String {
        let a = challenge.algorithm
        let ha1 = Self.hash("\(username):\(challenge.realm):\(password)", a)
        let ha2 = Self.hash("\(method):\(uri)", a)
        guard challenge.qopAuth else { return Self.hash("\(ha1):\(challenge.nonce):\(ha2)", a) }
        return Self.hash("\(ha1):\(challenge.nonce):\(Self.nc(nonceCount)):\(cnonce):auth:\(ha2)", a)
    }

    /// `nc`: eight lowercase hex digits (RFC 7616 §3.4).
    static func nc(_ count: UInt32) -> String {
        let digits = String(count, radix: 16)
        return String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }

    /// The `Authorization` / `Proxy-Authorization` value answering `challenge` (RFC 3261 §22.4,
    /// RFC 7616 §3.4): `cnonce`, `nc` and `qop` only with `qop=auth`; `opaque` returned as given.
    public func authorization(
        answering challenge: SIPDigestChallenge, method: String, uri: String, nonceCount: UInt32, cnonce: String
    ) -> String {
        let response = response(to: challenge, method: method, uri: uri, nonceCount: nonceCount, cnonce: cnonce)
        var parts = [
            "username=\(Self.quoted(username))", "realm=\(Self.quoted(challenge.realm))",
            "nonce=\(Self.quoted(challenge.nonce))", "uri=\(Self.quoted(uri))", "response=\"\(response)\"",
            "algorithm=\(challenge.algorithm.rawValue)",
        ]
        if let opaque = challenge.opaque { parts.append("opaque=\(Self.quoted(opaque))") }
        if challenge.qopAuth { parts += ["qop=auth", "nc=\(Self.nc(nonceCount))", "cnonce=\(Self.quoted(cnonce))"] }
        return "Digest " + parts.joined(separator: ", ")
    }

    /// A quoted-string (RFC 3261 §25.1): `"` and `\` escaped.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for character in text {
            if character == "\"" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out + "\""
    }
}
