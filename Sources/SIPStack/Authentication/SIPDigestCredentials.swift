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

    /// The `response` value for `method` on `uri` (the Request-URI as sent, RFC 3261 §22.4).
    public func response(
        to challenge: SIPDigestChallenge, method: String, uri: String, nonceCount: UInt32, cnonce: String
    ) -> String {
        let function = challenge.algorithm.function
        return DigestHash.response(
            ha1: DigestHash.hex("\(username):\(challenge.realm):\(password)", function), nonce: challenge.nonce,
            method: method, uri: uri, qopAuth: challenge.qopAuth, nonceCount: nonceCount, cnonce: cnonce, function)
    }

    /// The `Authorization` / `Proxy-Authorization` value answering `challenge` (RFC 3261 §22.4,
    /// RFC 7616 §3.4): `cnonce`, `nc` and `qop` only with `qop=auth`; `opaque` returned as given.
    public func authorization(
        answering challenge: SIPDigestChallenge, method: String, uri: String, nonceCount: UInt32, cnonce: String
    ) -> String {
        let response = response(to: challenge, method: method, uri: uri, nonceCount: nonceCount, cnonce: cnonce)
        var parts = [
            "username=\(DigestHash.quoted(username))", "realm=\(DigestHash.quoted(challenge.realm))",
            "nonce=\(DigestHash.quoted(challenge.nonce))", "uri=\(DigestHash.quoted(uri))", "response=\"\(response)\"",
            "algorithm=\(challenge.algorithm.rawValue)",
        ]
        if let opaque = challenge.opaque { parts.append("opaque=\(DigestHash.quoted(opaque))") }
        if challenge.qopAuth {
            parts += ["qop=auth", "nc=\(DigestHash.nc(nonceCount))", "cnonce=\(DigestHash.quoted(cnonce))"]
        }
        return "Digest " + parts.joined(separator: ", ")
    }
}
