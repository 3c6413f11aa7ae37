import Crypto

/// The Digest computation the gateway's two clients share, its SIP one (RFC 3261 §22.4) and its
/// HTTP one toward XCAP servers (RFC 7616): the hash as lowercase hex, `nc`, the quoted-string,
/// and the `response` of RFC 7616 §3.4.1, which RFC 3261 §22.4 computes the same way.
package enum DigestHash {
    /// The hash functions both offer (RFC 7616 §3.3; RFC 8760 §2.3 for SIP's SHA-256).
    package enum Function: Sendable {
        case md5, sha256
    }

    /// `H(text)`: the lowercase hex digest of `text`'s UTF-8 bytes (RFC 7616 §3.4.1).
    package static func hex(_ text: String, _ function: Function) -> String {
        let bytes = Array(text.utf8)
        switch function {
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

    /// `response` from `ha1` (`H(A1)`, already the session form where the algorithm asks for
    /// it, RFC 7616 §3.4.2) and `A2 = method ":" uri` (§3.4.3): with `qop=auth`
    /// `H(H(A1) ":" nonce ":" nc ":" cnonce ":" qop ":" H(A2))`, else `H(H(A1) ":" nonce ":" H(A2))`.
    package static func response(
        ha1: String, nonce: String, method: String, uri: String, qopAuth: Bool, nonceCount: UInt32, cnonce: String,
        _ function: Function
    ) -> String {
        let ha2 = hex("\(method):\(uri)", function)
        guard qopAuth else { return hex("\(ha1):\(nonce):\(ha2)", function) }
        return hex("\(ha1):\(nonce):\(nc(nonceCount)):\(cnonce):auth:\(ha2)", function)
    }

    /// `nc`: eight lowercase hex digits (RFC 7616 §3.4).
    package static func nc(_ count: UInt32) -> String {
        let digits = String(count, radix: 16)
        return String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }

    /// A quoted-string, `"` and `\` escaped (RFC 3261 §25.1 and RFC 7230 §3.2.6 alike).
    package static func quoted(_ text: String) -> String {
        var out = "\""
        for character in text {
            if character == "\"" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out + "\""
    }
}
