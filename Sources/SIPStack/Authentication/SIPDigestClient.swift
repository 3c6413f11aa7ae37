public import SIPMessages

/// A UAC's Digest state for the peers it has credentials for (RFC 3261 §22.2, §22.3): answers a
/// 401 or 407 once, and keeps the last challenge of each peer to send credentials with its later
/// requests at once (RFC 7616 §3.4: the same nonce, `nc` one higher each time), so that a refresh
/// does not cost a round trip.
///
/// Peers are keyed by the caller (the gateway uses its configured peer's position). A value;
/// the owner keeps it on its event loop.
public struct SIPDigestClient: Sendable {
    /// Which header pair a challenge came in: 401 `WWW-Authenticate` → `Authorization`, 407
    /// `Proxy-Authenticate` → `Proxy-Authorization` (RFC 3261 §22.2, §22.3).
    public enum Kind: Sendable, Hashable {
        case server
        case proxy

        public var challengeHeader: SIPHeaderName { self == .server ? "WWW-Authenticate" : "Proxy-Authenticate" }
        public var credentialsHeader: SIPHeaderName { self == .server ? "Authorization" : "Proxy-Authorization" }
    }

    /// A peer's challenges are kept per kind: a server's 401 and a proxy's 407 in the same realm
    /// are two nonces, and a request may need to answer both (RFC 3261 §22.3).
    struct Key: Sendable, Hashable {
        var peer: Int
        var kind: Kind
    }

    struct Remembered: Sendable {
        var challenge: SIPDigestChallenge
        var kind: Kind
        var nonceCount: UInt32
    }

    private var credentials: [Int: SIPDigestCredentials]
    private var remembered: [Key: Remembered] = [:]
    private let limits: SIPDigestChallenge.Limits
    /// Makes a client nonce (RFC 7616 §3.4: `cnonce`); injected so tests are repeatable.
    private let makeCnonce: @Sendable () -> String

    public init(
        credentials: [Int: SIPDigestCredentials], limits: SIPDigestChallenge.Limits = .init(),
        cnonce: @escaping @Sendable () -> String = { SIPDigestClient.randomCnonce() }
    ) {
        self.credentials = credentials
        self.limits = limits
        self.makeCnonce = cnonce
    }

    /// 128 random bits as 32 hex digits.
    public static func randomCnonce() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return String(high, radix: 16) + String(low, radix: 16)
    }

    /// Whether any peer has credentials: when none does, nothing here is ever asked.
    public var isEmpty: Bool { credentials.isEmpty }

    public func hasCredentials(_ peer: Int) -> Bool { credentials[peer] != nil }

    /// The realm `peer`'s credentials are for.
    public func realm(of peer: Int) -> String? { credentials[peer]?.realm }

    /// Adds credentials from `peer`'s last challenge of each kind to `request` (pre-emptive, RFC
    /// 7616 §3.4: `nc` one higher than last time); unchanged when there is none yet.
    public mutating func authorize(_ request: inout SIPRequest, peer: Int) {
        guard let credentials = credentials[peer] else { return }
        for kind in [Kind.server, .proxy] {
            let key = Key(peer: peer, kind: kind)
            guard var last = remembered[key] else { continue }
            last.nonceCount &+= 1
            remembered[key] = last
            Self.set(request: &request, credentials: credentials, remembered: last, cnonce: makeCnonce())
        }
    }

    /// `request` again for `response`'s challenge (401 or 407) to `peer`: the same request with
    /// CSeq one higher (RFC 3261 §22.2, §8.1.3.5) and without credentials, the challenge kept so
    /// that ``authorize(_:peer:)`` answers it (nc 1) when the request is sent. A failure says why
    /// the challenge is not answered (no credentials, no usable challenge for the configured
    /// realm); the caller then treats the response as any failure.
    public mutating func answer(_ response: SIPResponse, to request: SIPRequest, peer: Int)
        -> Result<SIPRequest, SIPDigestChallenge.Refusal>
    {
        guard let credentials = credentials[peer] else { return .failure(.init("no credentials")) }
        let kind: Kind
        switch response.statusCode {
        case 401: kind = .server
        case 407: kind = .proxy
        default: return .failure(.init("not a challenge"))
        }
        let values = response.headers.fields.filter { $0.name == kind.challengeHeader }.map(\.value)
        switch SIPDigestChallenge.first(in: values, realm: credentials.realm, limits: limits) {
        case .failure(let refusal):
            remembered[Key(peer: peer, kind: kind)] = nil
            return .failure(refusal)
        case .success(let challenge):
            guard let cseq = try? request.headers.cseq, cseq.sequence < UInt32.max else {
                return .failure(.init("no CSeq to increment"))
            }
            // Answered when the request is sent (``authorize(_:peer:)``): nc 1 for a new nonce.
            remembered[Key(peer: peer, kind: kind)] = Remembered(challenge: challenge, kind: kind, nonceCount: 0)
            var again = request
            again.headers.remove("Authorization")
            again.headers.remove("Proxy-Authorization")
            again.headers.set(.cseq, "\(cseq.sequence + 1) \(cseq.method.rawValue)")
            return .success(again)
        }
    }

    /// Forgets `peer`'s last challenge (its credentials were refused).
    public mutating func forget(_ peer: Int) {
        remembered[Key(peer: peer, kind: .server)] = nil
        remembered[Key(peer: peer, kind: .proxy)] = nil
    }

    private static func set(
        request: inout SIPRequest, credentials: SIPDigestCredentials, remembered: Remembered, cnonce: String
    ) {
        request.headers.remove(remembered.kind.credentialsHeader)
        let value = credentials.authorization(
            answering: remembered.challenge, method: request.method.rawValue, uri: request.uri.description,
            nonceCount: remembered.nonceCount, cnonce: cnonce)
        request.headers.append(remembered.kind.credentialsHeader, value)
    }
}
