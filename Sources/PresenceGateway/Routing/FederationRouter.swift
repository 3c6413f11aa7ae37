public import NIOCore
public import SIPMessages
public import SIPTransport

/// Decides what to do with each request that arrives from a peer (issue 5 §3): who sent it, how
/// much of what it says to believe, whether it may cross, and where it goes.
///
/// The gateway is a back-to-back user agent: it ends every dialog on each side and uses its own
/// Contact there, so in-dialog requests come back to it without Record-Route (RFC 3261 §12.1.1:
/// the remote target is the Contact).
public struct FederationRouter: Sendable {
    public var configuration: GatewayConfiguration
    /// Addresses (host:port) this gateway listens on, for loop detection.
    public var localAddresses: Set<String>
    private var buckets: [String: TokenBucket] = [:]

    public init(configuration: GatewayConfiguration, localAddresses: Set<String>) {
        self.configuration = configuration
        self.localAddresses = localAddresses
    }

    /// Where a request came from.
    public struct Arrival: Sendable, Hashable {
        public var side: GatewayConfiguration.Side
        public var source: SIPTarget
        /// Names from the peer's TLS certificate (empty over UDP/TCP).
        public var certificateNames: [String]

        public init(side: GatewayConfiguration.Side, source: SIPTarget, certificateNames: [String] = []) {
            self.side = side
            self.source = source
            self.certificateNames = certificateNames
        }
    }

    public enum Decision: Sendable {
        /// Cross to `side`: the watcher (From) classified, the request with untrusted headers
        /// removed and Max-Forwards decremented, and the configured next hop.
        case forward(to: GatewayConfiguration.Side, watcher: WatcherIdentity, request: SIPRequest,
                     nextHop: GatewayConfiguration.NextHop)
        /// Handle here: a PUBLISH for a linked identity the gateway is the presence server of.
        case local(watcher: WatcherIdentity, request: SIPRequest)
        /// Answer with this status and these extra headers.
        case reject(status: Int, reason: String, headers: SIPHeaders)
    }

    /// The configured peer a request came from: same side, same address, and the configured port
    /// if one is set. nil for unknown peers.
    public func peer(for arrival: Arrival) -> GatewayConfiguration.Peer? {
        configuration.peers.first {
            $0.side == arrival.side && $0.host == arrival.source.host && ($0.port == nil || $0.port == arrival.source.port)
        }
    }

    /// The decision for an out-of-dialog request (in-dialog requests are matched to their
    /// dialog before this). `now` drives the per-peer rate limits.
    public mutating func route(_ request: SIPRequest, arrival: Arrival, now: NIODeadline) -> Decision {
        let peer = peer(for: arrival)
        if let peer, let limit = peer.rateLimit {
            var bucket = buckets[peer.name] ?? TokenBucket(rate: limit, burst: max(limit, 1), now: now)
            let allowed = bucket.take(now: now)
            buckets[peer.name] = bucket
            if !allowed {
                // RFC 3261 §21.5.4: 503 with Retry-After; one second covers the bucket's refill.
                return .reject(status: 503, reason: "Service Unavailable", headers: [(.retryAfter, "1")])
            }
        }
        var request = request
        // RFC 3261 §16.3 item 3 / §8.2: Max-Forwards 0 may not be forwarded (483); absent → 70.
        let maxForwards = (try? request.headers.maxForwards) ?? 70
        guard maxForwards > 0 else { return .reject(status: 483, reason: "Too Many Hops", headers: []) }
        request.headers.set(.maxForwards, String(maxForwards - 1))
        // RFC 3261 §16.3 item 4: a request that already passed through us is a loop.
        if let vias = try? request.headers.via,
           vias.contains(where: { localAddresses.contains("\($0.host.lowercased()):\($0.port ?? 5060)") }) {
            return .reject(status: 482, reason: "Loop Detected", headers: [])
        }
        guard let fromURI = (try? request.headers.from)?.uri, let fromHost = Self.host(fromURI) else {
            return .reject(status: 400, reason: "Bad From", headers: [])
        }
        guard let targetHost = Self.host(request.uri) else {
            return .reject(status: 416, reason: "Unsupported URI Scheme", headers: [])
        }
        // Mutual TLS (issue 5 §3): a configured peer must present one of its configured names;
        // any other peer's certificate must name the domain it speaks for (the From domain).
        if arrival.source.kind == .tls, configuration.tls?.requireClientCertificate == true {
            if let peer, !peer.certificateNames.isEmpty {
                let known = Set(peer.certificateNames.map { $0.lowercased() })
                guard arrival.certificateNames.contains(where: { known.contains($0.lowercased()) }) else {
                    return .reject(status: 403, reason: "Unknown Certificate", headers: [])
                }
            } else if !Self.certificate(arrival.certificateNames, speaksFor: fromHost) {
                return .reject(status: 403, reason: "Certificate Does Not Match Domain", headers: [])
            }
        }
        let network = classify(request, peer: peer, side: arrival.side)
        if !(peer?.trusted ?? false) {
            // Such headers from an untrusted peer are removed, never believed.
            request.headers.remove(.msEdgeProxyMessageTrust)
            request.headers.remove(.msSourceNetwork)
        }
        guard let watcher = WatcherIdentity(uri: fromURI.description, network: network) else {
            return .reject(status: 400, reason: "Bad From", headers: [])
        }
        if isBlocked(fromHost) { return .reject(status: 403, reason: "Domain Blocked", headers: []) }
        if request.method == .publish {
            // RFC 3903 §6 step 1: the gateway is the compositor only of the OMA identities it
            // serves (linked identities with publish-to-enterprise); anything else is 404.
            let target = WatcherIdentity.addressOfRecord(request.uri.description)
            guard arrival.side == .oma, let target,
                  configuration.linkedIdentities.contains(where: { $0.publishToEnterprise && $0.oma == target }) else {
                return .reject(status: 404, reason: "Not Found", headers: [])
            }
            return .local(watcher: watcher, request: request)
        }
        var served = servingSide(of: targetHost)
        if arrival.side == .enterprise, served == .enterprise, Self.isBatchedCategorySubscribe(request, from: fromURI) {
            // [MS-PRES] §3.4.5.1.1 and the §4.5 example: a batched category SUBSCRIBE is addressed
            // to the subscriber itself (Request-URI = To = From, Require: adhoclist) and names its
            // resources in the body; it is meant for the OMA resources it lists, not relayed.
            served = .oma
        }
        guard let served, served != arrival.side else {
            // No open relay: only domains served on the other side are reachable.
            return .reject(status: 403, reason: "Relaying Denied", headers: [])
        }
        let fromSide = servingSide(of: fromHost)
        if fromSide == served {
            // A request into a side claiming to come from that same side, through the other face.
            return .reject(status: 403, reason: "Spoofed Origin", headers: [])
        }
        if fromSide == nil, let allowed = configuration.allowedPartners, !allowed.contains(where: { domain($0, covers: fromHost) }) {
            return .reject(status: 403, reason: "Partner Not Allowed", headers: [])
        }
        let nextHop = served == .enterprise ? configuration.enterprise.nextHop : configuration.oma.nextHop
        return .forward(to: served, watcher: watcher, request: request, nextHop: nextHop)
    }

    /// Whether `request` is a batched category SUBSCRIBE ([MS-PRES] §3.4.5.1.1): `Require:
    /// adhoclist` and addressed to the subscriber itself (the Request-URI names the From identity).
    static func isBatchedCategorySubscribe(_ request: SIPRequest, from: SIPURI) -> Bool {
        guard request.method == .subscribe, (try? request.headers.require)?.contains(where: { $0.lowercased() == "adhoclist" }) == true else {
            return false
        }
        return WatcherIdentity.addressOfRecord(request.uri.description) == WatcherIdentity.addressOfRecord(from.description)
    }

    /// The watcher's network: from the peer's configuration, refined by the source-network
    /// information only when the peer is trusted (guide Q4: `ms-source-network` as its own header
    /// or as a parameter of `ms-edge-proxy-message-trust`, values `federation`, `publiccloud`).
    func classify(_ request: SIPRequest, peer: GatewayConfiguration.Peer?, side: GatewayConfiguration.Side) -> SourceNetwork {
        // Unknown peers are federated on either side: never sameEnterprise by default (guide §5).
        let base = peer?.network ?? .federated
        guard let peer, peer.trusted else { return base }
        let stated = (try? request.headers.msEdgeProxyMessageTrust)??.sourceNetwork ?? request.headers[.msSourceNetwork]
        switch stated?.lowercased() {
        case "federation", "federated": return .federated
        case "publiccloud", "public-cloud": return .publicCloud
        case "sameenterprise", "internal": return .sameEnterprise
        default: return base
        }
    }

    /// The side serving `host`, if any.
    public func servingSide(of host: String) -> GatewayConfiguration.Side? {
        if configuration.enterprise.domains.contains(where: { domain($0, covers: host) }) { return .enterprise }
        if configuration.oma.domains.contains(where: { domain($0, covers: host) }) { return .oma }
        return nil
    }

    func isBlocked(_ host: String) -> Bool {
        configuration.blockedPartners.contains { domain($0, covers: host) }
    }

    static func host(_ uri: SIPURI) -> String? {
        guard uri.isSIP, !uri.host.isEmpty else { return nil }
        return uri.host.lowercased()
    }

    /// Whether a certificate with `names` may speak for `domain`: a name equal to the domain, a
    /// host inside it (`sip.fabrikam.com` for `fabrikam.com`, as Microsoft federation edges are
    /// named), or a wildcard `*.domain` (RFC 6125 §6.4.3, left-most label only).
    static func certificate(_ names: [String], speaksFor domain: String) -> Bool {
        guard domain.contains(".") else { return false }
        return names.contains { raw in
            let name = raw.lowercased()
            if name.hasPrefix("*.") { return domain == String(name.dropFirst(2)) || domain.hasSuffix(String(name.dropFirst(1))) }
            return name == domain || name.hasSuffix("." + domain)
        }
    }
}

/// A token bucket: `rate` tokens a second up to `burst`; a request takes one.
struct TokenBucket: Sendable {
    let rate: Double
    let burst: Double
    var tokens: Double
    var last: NIODeadline

    init(rate: Double, burst: Double, now: NIODeadline) {
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.last = now
    }

    mutating func take(now: NIODeadline) -> Bool {
        let elapsed = Double(max(0, (now - last).nanoseconds)) / 1e9
        tokens = min(burst, tokens + elapsed * rate)
        last = max(last, now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
