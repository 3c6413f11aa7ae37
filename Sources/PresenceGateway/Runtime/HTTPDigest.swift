import Foundation
import SIPStack

/// HTTP Digest access authentication, the client's part (RFC 7616, which keeps RFC 2617's
/// messages): what the XCAP client answers an Aggregation Proxy's 401 with (PacketCable Presence
/// §6.7: HTTP Digest is the default authentication of an XDM client at the Aggregation Proxy,
/// §6.2.18; docs/security.md, "XCAP credentials").
///
/// Supported: `MD5`, `SHA-256` and their `-sess` forms (RFC 7616 §3.4.2), `qop=auth` and no qop
/// at all (RFC 2069, as RFC 7616 §3.4.1 still describes), `userhash` (§3.4.4), `opaque` returned
/// as received. Not supported, so a challenge asking only for them is refused: `auth-int`
/// (a hash of the body) and `SHA-512-256`, which swift-crypto does not offer.
enum HTTPDigest {
    /// RFC 7616 §3.3, `algorithm`: the hash and whether A1 is per session.
    enum Algorithm: String, Sendable, CaseIterable {
        case md5 = "MD5"
        case md5Session = "MD5-sess"
        case sha256 = "SHA-256"
        case sha256Session = "SHA-256-sess"

        /// The algorithm named `token`, compared without case (RFC 7616 §3.3 names them as
        /// tokens; Apache writes `MD5`).
        init?(token: String) {
            guard let known = Self.allCases.first(where: { $0.rawValue.lowercased() == token.lowercased() }) else {
                return nil
            }
            self = known
        }

        var isSession: Bool { self == .md5Session || self == .sha256Session }

        /// `H(data)` of RFC 7616 §3.4: the lowercase hex digest of `text`'s UTF-8 bytes.
        func hash(_ text: String) -> String { DigestHash.hex(text, function) }

        var function: DigestHash.Function { self == .md5 || self == .md5Session ? .md5 : .sha256 }
    }

    /// One `Digest` challenge of a `WWW-Authenticate` field (RFC 7616 §3.3).
    struct Challenge: Sendable, Equatable {
        var realm: String
        var nonce: String
        var opaque: String?
        var algorithm: Algorithm
        /// Whether `qop="auth"` was offered; false: no `qop` at all (RFC 2069 compatibility).
        var qopAuth: Bool
        /// The nonce was refused only for being too old: the credentials were right (§3.3).
        var stale: Bool
        var userhash: Bool
    }

    /// The user's secret and name; never logged.
    struct Credentials: Sendable, Hashable {
        var username: String
        var password: String
    }

    /// What one request's `Authorization` carries besides the challenge.
    struct Use: Sendable, Equatable {
        var method: String
        /// The request-target as sent (RFC 7616 §3.4: `uri`), e.g. `/xcap-root/...`.
        var uri: String
        /// `nc`, counted by the client from 1 for each nonce (§3.4).
        var nonceCount: UInt32
        var cnonce: String
    }

    /// `response` of RFC 7616 §3.4.1: with `qop=auth`,
    /// `KD(H(A1), nonce ":" nc ":" cnonce ":" qop ":" H(A2))`, else `KD(H(A1), nonce ":" H(A2))`,
    /// where `A1 = username ":" realm ":" password` (for `-sess`, `H(A1) ":" nonce ":" cnonce`,
    /// §3.4.2) and `A2 = method ":" uri` (§3.4.3).
    static func response(_ challenge: Challenge, _ credentials: Credentials, _ use: Use) -> String {
        let algorithm = challenge.algorithm
        var ha1 = algorithm.hash("\(credentials.username):\(challenge.realm):\(credentials.password)")
        if algorithm.isSession { ha1 = algorithm.hash("\(ha1):\(challenge.nonce):\(use.cnonce)") }
        return DigestHash.response(
            ha1: ha1, nonce: challenge.nonce, method: use.method, uri: use.uri, qopAuth: challenge.qopAuth,
            nonceCount: use.nonceCount, cnonce: use.cnonce, algorithm.function)
    }

    /// The `Authorization` field's value for `use` (RFC 7616 §3.4): the username hashed when the
    /// challenge asked for `userhash` (§3.4.4).
    static func authorization(_ challenge: Challenge, _ credentials: Credentials, _ use: Use) -> String {
        let username =
            challenge.userhash
            ? challenge.algorithm.hash("\(credentials.username):\(challenge.realm)") : credentials.username
        var fields = [
            "username=\(DigestHash.quoted(username))", "realm=\(DigestHash.quoted(challenge.realm))",
            "uri=\(DigestHash.quoted(use.uri))",
            "algorithm=\(challenge.algorithm.rawValue)", "nonce=\(DigestHash.quoted(challenge.nonce))",
        ]
        if challenge.qopAuth {
            fields += ["nc=\(DigestHash.nc(use.nonceCount))", "cnonce=\(DigestHash.quoted(use.cnonce))", "qop=auth"]
        }
        fields.append("response=\(DigestHash.quoted(response(challenge, credentials, use)))")
        if let opaque = challenge.opaque { fields.append("opaque=\(DigestHash.quoted(opaque))") }
        if challenge.userhash { fields.append("userhash=true") }
        return "Digest " + fields.joined(separator: ", ")
    }

    /// A fresh client nonce: 16 random bytes, base64 (RFC 7616 §3.4: opaque to the server).
    static func makeCnonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }
}
