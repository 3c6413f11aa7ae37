import SIPMessages

/// A Digest challenge from a `WWW-Authenticate` (401) or `Proxy-Authenticate` (407) header
/// (RFC 3261 §22.4, §25.1; RFC 7616 §3.3; RFC 8760 §2.2):
///
/// ```
/// challenge      = ("Digest" LWS digest-cln *(COMMA digest-cln)) / other-challenge
/// digest-cln     = realm / domain / nonce / opaque / stale / algorithm / qop-options / auth-param
/// realm          = "realm" EQUAL quoted-string
/// nonce          = "nonce" EQUAL quoted-string
/// opaque         = "opaque" EQUAL quoted-string
/// stale          = "stale" EQUAL ( "true" / "false" )
/// algorithm      = "algorithm" EQUAL ( "MD5" / "MD5-sess" / token )
/// qop-options    = "qop" EQUAL LDQUOT qop-value *("," qop-value) RDQUOT
/// ```
///
/// A challenge comes from the network: it is read within ``Limits`` and refused as a whole
/// (``init(_:limits:)`` throws) when it is malformed, too large, names an algorithm other than
/// MD5 and SHA-256 (RFC 8760 §2.1: the ones a SIP UAC must know), or offers only a quality of
/// protection other than `auth`. A refused challenge is never answered.
public struct SIPDigestChallenge: Sendable, Hashable {
    /// The hash of a Digest exchange (RFC 7616 §3.2, RFC 8760 §2.1).
    public enum Algorithm: String, Sendable, Hashable {
        case md5 = "MD5"
        case sha256 = "SHA-256"

        var function: DigestHash.Function { self == .md5 ? .md5 : .sha256 }
    }

    public var realm: String
    public var nonce: String
    public var opaque: String?
    /// RFC 7616 §3.3: the nonce was stale; the credentials were fine.
    public var stale: Bool
    /// Absent in the challenge: MD5 (RFC 3261 §22.4, RFC 7616 §3.3).
    public var algorithm: Algorithm
    /// Whether the server offered `qop=auth`; false: the RFC 2069 form without cnonce and nc
    /// (RFC 7616 §3.4.1, kept for RFC 3261 §22.4's compatibility).
    public var qopAuth: Bool

    /// Bounds on a challenge read from the network.
    public struct Limits: Sendable, Hashable {
        /// The whole header value, in bytes.
        public var maxLength = 2_048
        /// Each parameter value (nonce, realm, opaque), in bytes.
        public var maxValueLength = 512
        /// Parameters in one challenge.
        public var maxParameters = 16

        public init() {}
    }

    /// Why a challenge was refused.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Reads one challenge header value.
    public init(_ text: String, limits: Limits = Limits()) throws(Refusal) {
        guard text.utf8.count <= limits.maxLength else { throw Refusal("challenge over \(limits.maxLength) bytes") }
        var scanner = AuthParameterScanner(text.utf8)
        guard let scheme = scanner.token(), scheme.lowercased() == "digest" else {
            throw Refusal("not a Digest challenge")
        }
        var parameters: [String: String] = [:]
        var count = 0
        while !scanner.atEnd {
            count += 1
            guard count <= limits.maxParameters else { throw Refusal("over \(limits.maxParameters) parameters") }
            guard let (name, value) = scanner.parameter() else { throw Refusal("malformed parameter") }
            guard value.utf8.count <= limits.maxValueLength else { throw Refusal("\(name) too long") }
            guard parameters.updateValue(value, forKey: name.lowercased()) == nil else {
                throw Refusal("\(name) given twice")
            }
            guard scanner.comma() || scanner.atEnd else { throw Refusal("expected a comma after \(name)") }
        }
        guard let realm = parameters["realm"], let nonce = parameters["nonce"], !nonce.isEmpty else {
            throw Refusal("realm and nonce are required")
        }
        let algorithmName = parameters["algorithm"] ?? "MD5"
        guard let algorithm = Self.algorithms[algorithmName.uppercased()] else {
            throw Refusal("algorithm \(algorithmName) is not MD5 or SHA-256")
        }
        var qopAuth = false
        if let qop = parameters["qop"] {
            let options = qop.split(separator: ",").map { $0.filter { $0 != " " && $0 != "\t" }.lowercased() }
            guard options.contains("auth") else { throw Refusal("qop offers no auth") }
            qopAuth = true
        }
        self.realm = realm
        self.nonce = nonce
        self.opaque = parameters["opaque"]
        self.stale = parameters["stale"]?.lowercased() == "true"
        self.algorithm = algorithm
        self.qopAuth = qopAuth
    }

    public init(realm: String, nonce: String, opaque: String?, algorithm: Algorithm, qopAuth: Bool) {
        self.realm = realm
        self.nonce = nonce
        self.opaque = opaque
        self.stale = false
        self.algorithm = algorithm
        self.qopAuth = qopAuth
    }

    static let algorithms: [String: Algorithm] = ["MD5": .md5, "SHA-256": .sha256]

    /// The challenges of one response, topmost first, that name `realm`, as RFC 8760 §2.4 has a
    /// UAC choose: the first that it supports. Challenges of other schemes or realms, and refused
    /// ones, are skipped; the last refusal is given when none is usable.
    public static func first(in values: [String], realm: String, limits: Limits = Limits())
        -> Result<SIPDigestChallenge, Refusal>
    {
        var refusal = Refusal("no Digest challenge")
        // RFC 3261 §7.3.1: several challenges may share one header line only when the scheme's
        // own commas are inside quotes; each value here is one header line, as proxies send them.
        for value in values.prefix(8) {
            do {
                let challenge = try SIPDigestChallenge(value, limits: limits)
                guard challenge.realm == realm else {
                    refusal = Refusal("realm \"\(challenge.realm)\" is not the configured \"\(realm)\"")
                    continue
                }
                return .success(challenge)
            } catch {
                refusal = error
            }
        }
        return .failure(refusal)
    }
}

/// Reads `token`, `name=token` and `name="quoted string"` from an authentication header (RFC
/// 3261 §25.1: `quoted-string = SWS DQUOTE *(qdtext / quoted-pair) DQUOTE`).
struct AuthParameterScanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ utf8: String.UTF8View) { self.bytes = Array(utf8) }

    var atEnd: Bool {
        mutating get {
            skipSpace()
            return index == bytes.count
        }
    }

    private mutating func skipSpace() {
        while index < bytes.count,
            bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0D
                || bytes[index] == 0x0A
        {
            index += 1
        }
    }

    /// RFC 3261 §25.1 `token`: alphanumerics and `-.!%*_+`~'`.
    mutating func token() -> String? {
        skipSpace()
        let start = index
        while index < bytes.count, SIPByte.isToken(bytes[index]) { index += 1 }
        guard index > start else { return nil }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    mutating func comma() -> Bool {
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ",") else { return false }
        index += 1
        return true
    }

    /// `name = token / quoted-string`; nil when malformed (an unterminated quote, a control
    /// character, a missing value).
    mutating func parameter() -> (String, String)? {
        guard let name = token() else { return nil }
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { return nil }
        index += 1
        skipSpace()
        guard index < bytes.count else { return nil }
        if bytes[index] != UInt8(ascii: "\"") { return token().map { (name, $0) } }
        index += 1
        var value: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return (name, String(decoding: value, as: UTF8.self))
            case UInt8(ascii: "\\"):
                guard index < bytes.count, bytes[index] >= 0x20, bytes[index] != 0x7F else { return nil }
                value.append(bytes[index])
                index += 1
            case 0..<0x20 where byte != 0x09, 0x7F:
                return nil
            default:
                value.append(byte)
            }
        }
        return nil
    }
}
