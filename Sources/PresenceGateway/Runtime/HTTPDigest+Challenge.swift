import Foundation

extension HTTPDigest {
    /// Why a 401's challenges cannot be answered: said in the log and `/health`, never holding a
    /// secret (the fields come from the server).
    struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        var description: String
    }

    /// The `WWW-Authenticate` field values (or `Authentication-Info`'s) read at most: a server
    /// that sends more is refused rather than parsed.
    static let maximumFieldBytes = 8192
    /// Parameters read in one field at most.
    static let maximumParameters = 64

    /// The challenge to answer among a 401's `WWW-Authenticate` fields (RFC 7235 §4.1): the first
    /// `Digest` one this client supports, as a server lists them in its order of preference
    /// (RFC 7616 §3.7).
    ///
    ///     challenge   = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
    ///     auth-param  = token BWS "=" BWS ( token / quoted-string )
    static func challenge(in fields: [String]) -> Result<Challenge, Refusal> {
        guard fields.reduce(0, { $0 + $1.utf8.count }) <= maximumFieldBytes else {
            return .failure(Refusal(description: "WWW-Authenticate over \(maximumFieldBytes) bytes"))
        }
        var refusal = Refusal(description: "no Digest challenge")
        for field in fields {
            guard let challenges = AuthParameters.challenges(field) else {
                return .failure(Refusal(description: "an unreadable WWW-Authenticate field"))
            }
            for (scheme, parameters) in challenges where scheme.lowercased() == "digest" {
                switch Challenge.read(parameters) {
                case .success(let challenge): return .success(challenge)
                case .failure(let why): refusal = why
                }
            }
        }
        return .failure(refusal)
    }

    /// The `nextnonce` of an `Authentication-Info` field (RFC 7616 §3.5), if it has one.
    static func nextNonce(in field: String) -> String? {
        guard field.utf8.count <= maximumFieldBytes else { return nil }
        // The field is a list of auth-params without a scheme: read it as one behind a dummy scheme.
        return AuthParameters.challenges("Info " + field)?.first?.parameters["nextnonce"]
    }
}

extension HTTPDigest.Challenge {
    /// The challenge of a `Digest` scheme's parameters (names lowercased): `realm` and `nonce`
    /// needed, `algorithm` MD5 when absent, `qop` listing `auth` or absent (RFC 7616 §3.3).
    static func read(_ p: [String: String]) -> Result<Self, HTTPDigest.Refusal> {
        guard let realm = p["realm"], let nonce = p["nonce"], !nonce.isEmpty else {
            return .failure(HTTPDigest.Refusal(description: "a Digest challenge without realm or nonce"))
        }
        let name = p["algorithm"] ?? "MD5"
        guard let algorithm = HTTPDigest.Algorithm(token: name) else {
            return .failure(HTTPDigest.Refusal(description: "Digest algorithm \(name.prefix(32)) is not supported"))
        }
        var qopAuth = false
        if let qop = p["qop"] {
            let offered = qop.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard offered.contains("auth") else {
                return .failure(HTTPDigest.Refusal(description: "Digest qop \(qop.prefix(32)) without auth"))
            }
            qopAuth = true
        }
        return .success(
            Self(
                realm: realm, nonce: nonce, opaque: p["opaque"], algorithm: algorithm, qopAuth: qopAuth,
                stale: p["stale"]?.lowercased() == "true", userhash: p["userhash"]?.lowercased() == "true"))
    }
}

/// The auth-param lists of RFC 7235 §2.1 and §4.1, read from one field value: the challenges in
/// order, each with its parameters (names lowercased, quoted values unquoted). A token68 (of
/// another scheme: Basic, Negotiate) is skipped. Nil when the field does not follow the grammar.
enum AuthParameters {
    static func challenges(_ field: String) -> [(scheme: String, parameters: [String: String])]? {
        var reader = Reader(bytes: Array(field.utf8))
        var result: [(scheme: String, parameters: [String: String])] = []
        var count = 0
        reader.skip(while: { $0 == UInt8(ascii: ",") || isSpace($0) })
        while !reader.atEnd {
            guard let scheme = reader.token() else { return nil }
            var parameters: [String: String] = [:]
            reader.skip(while: isSpace)
            reader.skipToken68()
            // A scheme without parameters ends at a comma.
            reader.skip(while: { $0 == UInt8(ascii: ",") || isSpace($0) })
            while !reader.atEnd {
                reader.skip(while: isSpace)
                let mark = reader.index
                guard let name = reader.token() else { return nil }
                reader.skip(while: isSpace)
                guard reader.peek == UInt8(ascii: "=") else {
                    reader.index = mark  // the next challenge's scheme
                    break
                }
                reader.index += 1
                reader.skip(while: isSpace)
                guard let value = reader.peek == UInt8(ascii: "\"") ? reader.quoted() : reader.token() else {
                    return nil
                }
                count += 1
                guard count <= HTTPDigest.maximumParameters else { return nil }
                parameters[name.lowercased()] = value
                reader.skip(while: isSpace)
                guard reader.peek == UInt8(ascii: ",") || reader.atEnd else { return nil }
                reader.skip(while: { $0 == UInt8(ascii: ",") || isSpace($0) })
            }
            result.append((scheme, parameters))
        }
        return result
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

    /// RFC 7230 §3.2.6 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    struct Reader {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index >= bytes.count }
        var peek: UInt8? { atEnd ? nil : bytes[index] }

        mutating func skip(while condition: (UInt8) -> Bool) {
            while let byte = peek, condition(byte) { index += 1 }
        }

        mutating func token() -> String? {
            let start = index
            skip(while: AuthParameters.isTokenByte)
            return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
        }

        /// Skips a token68 (RFC 7235 §2.1: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" )
        /// *"="`) that stands alone up to a comma or the end; anything else is left.
        mutating func skipToken68() {
            var end = index
            while end < bytes.count, Self.isToken68Byte(bytes[end]) { end += 1 }
            guard end > index else { return }
            while end < bytes.count, bytes[end] == UInt8(ascii: "=") { end += 1 }
            while end < bytes.count, AuthParameters.isSpace(bytes[end]) { end += 1 }
            guard end == bytes.count || bytes[end] == UInt8(ascii: ",") else { return }
            index = end
            skip(while: { $0 == UInt8(ascii: ",") || AuthParameters.isSpace($0) })
        }

        static func isToken68Byte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            default:
                return Array("-._~+/".utf8).contains(byte)
            }
        }

        /// A quoted-string with its `\` escapes undone; nil when it does not end.
        mutating func quoted() -> String? {
            index += 1
            var text: [UInt8] = []
            while let byte = peek {
                index += 1
                switch byte {
                case UInt8(ascii: "\""): return String(decoding: text, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escaped = peek else { return nil }
                    text.append(escaped)
                    index += 1
                default: text.append(byte)
                }
            }
            return nil
        }
    }
}
