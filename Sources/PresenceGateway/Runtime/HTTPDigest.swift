import Crypto
import Foundation

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

        /// The lowercase hex digest of `text`'s UTF-8 bytes: `H(data)` of RFC 7616 §3.4.
        func hash(_ text: String) -> String {
            let bytes = Array(text.utf8)
            switch self {
            case .md5, .md5Session: return Self.hex(Insecure.MD5.hash(data: bytes))
            case .sha256, .sha256Session: return Self.hex(SHA256.hash(data: bytes))
            }
        }

        private static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
            digest.map { byte in
                let text = String(byte, radix: 16)
                return byte < 16 ? "0" + text : text
            }.joined()
        }
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
        let h = challenge.algorithm.hash
        var ha1 = h("\(credentials.username):\(challenge.realm):\(credentials.password)")
        if challenge.algorithm.isSession { ha1 = h("\(ha1):\(challenge.nonce):\(use.cnonce)") }
        let ha2 = h("\(use.method):\(use.uri)")
        guard challenge.qopAuth else { return h("\(ha1):\(challenge.nonce):\(ha2)") }
        return h("\(ha1):\(challenge.nonce):\(nc(use.nonceCount)):\(use.cnonce):auth:\(ha2)")
    }

    /// `nc`: 8 hex digits (RFC 7616 §3.4).
    static func nc(_ count: UInt32) -> String {
        let text = String(count, radix: 16)
        return String(repeating: "0", count: max(0, 8 - text.count)) + text
    }

    /// The `Authorization` field's value for `use` (RFC 7616 §3.4): the username hashed when the
    /// challenge asked for `userhash` (§3.4.4).
    static func authorization(_ challenge: Challenge, _ credentials: Credentials, _ use: Use) -> String {
        let username =
            challenge.userhash
            ? challenge.algorithm.hash("\(credentials.username):\(challenge.realm)") : credentials.username
        var fields = [
            "username=\(quoted(username))", "realm=\(quoted(challenge.realm))", "uri=\(quoted(use.uri))",
            "algorithm=\(challenge.algorithm.rawValue)", "nonce=\(quoted(challenge.nonce))",
        ]
        if challenge.qopAuth {
            fields += ["nc=\(nc(use.nonceCount))", "cnonce=\(quoted(use.cnonce))", "qop=auth"]
        }
        fields.append("response=\(quoted(response(challenge, credentials, use)))")
        if let opaque = challenge.opaque { fields.append("opaque=\(quoted(opaque))") }
        if challenge.userhash { fields.append("userhash=true") }
        return "Digest " + fields.joined(separator: ", ")
    }

    /// An RFC 7230 §3.2.6 quoted-string.
    static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// A fresh client nonce: 16 random bytes, base64 (RFC 7616 §3.4: opaque to the server).
    static func makeCnonce() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }
}
