public import NIOCore
public import SIPMessages
public import SIPTransport

/// Decides what to do with each request that arrives from a peer: who sent it, how
/// much of what it says to believe, whether it may cross, and where it goes.
///
/// The gateway is a back-to-back user agent: it ends every dialog on each side and uses its own
/// Contact there, so in-dialog requests come back to it without Record-Route (RFC 3261 §12.1.1:
/// the remote target is the Contact).
public struct FederationRouter: Sendable {
    public var configuration: GatewayConfiguration
    /// Addresses (host:port) this gateway listens on.
    public var localAddresses: Set<String>
    /// The sent-by values the gateway puts in its Via headers, with their transport
    /// (`UDP 127.0.0.1:5060`), for loop detection (RFC 3261 §16.3 item 4): a peer's UDP socket
    /// may have the port number of the gateway's TCP listener on the same host.
    public var localSentBy: Set<String>
    private var buckets: [BucketKey: TokenBucket] = [:]
    /// With several shards: the configured peers' rate limits, which every shard's router takes
    /// from (docs/shards.md, "What is shared").
    public var board: PeerBoard?

    /// Whose rate limit a bucket holds: a configured peer's, or one source address's.
    enum BucketKey: Hashable {
        case peer(String)
        case address(String)
    }

    /// `localSentBy` defaults to every transport at each of `localAddresses`.
    public init(configuration: GatewayConfiguration, localAddresses: Set<String>, localSentBy: Set<String>? = nil) {
        self.configuration = configuration
        self.localAddresses = localAddresses
        self.localSentBy =
            localSentBy ?? Set(localAddresses.flatMap { address in ["UDP", "TCP", "TLS"].map { "\($0) \(address)" } })
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
        case forward(
            to: GatewayConfiguration.Side, watcher: WatcherIdentity, request: SIPRequest,
            nextHop: GatewayConfiguration.NextHop)
        /// Handle here: a PUBLISH for a linked identity the gateway is the presence server of, or a
        /// watcher information SUBSCRIBE from a presentity's owner.
        case local(watcher: WatcherIdentity, request: SIPRequest)
        /// Answer with this status and these extra headers.
        case reject(status: Int, reason: String, headers: SIPHeaders)
    }

    /// The configured peer a request came from: same side, same address, and the configured port
    /// if one is set. nil for unknown peers.
    public func peer(for arrival: Arrival) -> GatewayConfiguration.Peer? {
        peer(at: arrival.source, side: arrival.side)
    }

    func peer(at address: SIPTarget, side: GatewayConfiguration.Side) -> GatewayConfiguration.Peer? {
        peerIndex(at: address, side: side).map { configuration.peers[Int($0)] }
    }

    /// The position in ``GatewayConfiguration/peers`` of the peer at `address` on `side`.
    func peerIndex(at address: SIPTarget, side: GatewayConfiguration.Side) -> UInt16? {
        let host = GatewayConfiguration.canonicalHost(address.host)
        let index = configuration.peers.firstIndex {
            $0.side == side && $0.host == host && ($0.port == nil || $0.port == address.port)
        }
        return index.flatMap { UInt16(exactly: $0) }
    }

    /// A dialog peer's name for logs: the configured peer's, else its address.
    public func name(of owner: DialogPeer) -> String {
        if let index = owner.peer, Int(index) < configuration.peers.count {
            return configuration.peers[Int(index)].name
        }
        return owner.target.description
    }

    /// Takes one request of `arrival`'s sender from its rate limit: the configured peer's
    /// `rate-limit`, or for a sender that is no configured peer the per-address
    /// `limits.unconfigured-peer-rate`. False: the request is refused (503 with Retry-After,
    /// RFC 3261 §21.5.4) and not acted on.
    public mutating func allow(_ arrival: Arrival, now: NIODeadline) -> Bool {
        let key: BucketKey
        let limit: Double
        if let peer = peer(for: arrival) {
            guard let rate = peer.rateLimit else { return true }
            if let allowed = board?.takeRequest(peer.name, now: now) { return allowed }
            (key, limit) = (.peer(peer.name), rate)
        } else {
            (key, limit) = (
                .address(GatewayConfiguration.canonicalHost(arrival.source.host)),
                configuration.limits.unconfiguredPeerRate
            )
            if buckets[key] == nil, buckets.count >= Self.maxBuckets {
                // Bounded: buckets that refilled completely say nothing a new one would not.
                buckets = buckets.filter { !$0.value.isFull(now: now) }
                if buckets.count >= Self.maxBuckets { return false }
            }
        }
        var bucket = buckets[key] ?? TokenBucket(rate: limit, burst: max(limit, 1), now: now)
        let allowed = bucket.take(now: now)
        buckets[key] = bucket
        return allowed
    }

    /// At most this many rate-limit buckets for unconfigured senders are kept at once.
    static let maxBuckets = 10_000

    /// The peer of a dialog made by a request that arrived as `arrival`.
    public func dialogPeer(for arrival: Arrival) -> DialogPeer {
        let index = peerIndex(at: arrival.source, side: arrival.side)
        let peer = index.map { configuration.peers[Int($0)] }
        let names =
            arrival.source.kind == .tls
            ? (peer.map(\.certificateNames).flatMap { $0.isEmpty ? nil : $0 } ?? arrival.certificateNames) : []
        return DialogPeer(
            side: arrival.side, transport: arrival.source.kind,
            host: GatewayConfiguration.canonicalHost(arrival.source.host),
            port: arrival.source.port, peer: index, certificateNames: names)
    }

    /// The peer of a dialog the gateway made by sending its SUBSCRIBE to `target` on `side`.
    public func dialogPeer(reached target: SIPTarget, side: GatewayConfiguration.Side) -> DialogPeer {
        let index = peerIndex(at: target, side: side)
        let peer = index.map { configuration.peers[Int($0)] }
        var names: [String] = []
        if target.kind == .tls {
            names = peer.map(\.certificateNames) ?? []
            if names.isEmpty, let server = target.serverName { names = [server] }
        }
        return DialogPeer(
            side: side, transport: target.kind, host: GatewayConfiguration.canonicalHost(target.host),
            port: target.port,
            peer: index, certificateNames: names)
    }

    /// Whether a request inside a dialog of `owner` may come as `arrival`: on the dialog's side,
    /// over TLS when it was made over TLS, from its configured peer (or, for a peer that is not
    /// configured, its host, and when both are UDP its port too), and over TLS with a
    /// certificate naming one of the dialog's identities. A message on a connection the gateway
    /// opened itself carries no client certificate; it is believed when it comes from the
    /// address the gateway connected to, whose certificate was verified when connecting (RFC 5922
    /// §4).
    public func admits(_ arrival: Arrival, into owner: DialogPeer) -> Bool {
        // The dialog is bound to its peer, not to a transport: a request too large for UDP comes
        // over TCP from the same peer (RFC 3261 §18.1.1). Only TLS is never left (RFC 5630 §3.1.1).
        guard arrival.side == owner.side, owner.transport != .tls || arrival.source.kind == .tls else { return false }
        let host = GatewayConfiguration.canonicalHost(arrival.source.host)
        if let index = owner.peer {
            guard peerIndex(at: arrival.source, side: arrival.side) == index else { return false }
        } else {
            // An unconfigured peer is its host, and over UDP its port.
            guard host == owner.host,
                owner.transport != .udp || arrival.source.kind != .udp || arrival.source.port == owner.port
            else { return false }
        }
        guard owner.transport == .tls, !owner.certificateNames.isEmpty else { return true }
        if arrival.certificateNames.isEmpty { return host == owner.host && arrival.source.port == owner.port }
        // The same certificate again (its names as presented, wildcards included), or one that
        // names an expected identity (RFC 6125 §6.4).
        return arrival.certificateNames.contains { presented in
            owner.certificateNames.contains {
                $0.lowercased() == presented.lowercased()
                    || SIPServerIdentity.matches(presented: presented, reference: $0)
            }
        }
    }

    /// Whether the gateway may send a request of `owner`'s dialog to `target` (its remote target
    /// or Route, RFC 3261 §12.2.1.1): never below the dialog's transport security (a TLS dialog
    /// stays on TLS whatever a Contact says, RFC 5630 §3.1.1), and only to the dialog's peer,
    /// a configured peer or the fixed next hop of that side. Anything else (an arbitrary Contact)
    /// would let a watcher aim the gateway's requests and retransmissions at any host.
    public func mayReach(_ target: SIPTarget, in owner: DialogPeer) -> Bool {
        if owner.transport == .tls, target.kind != .tls { return false }
        let host = GatewayConfiguration.canonicalHost(target.host)
        if peer(at: target, side: owner.side) != nil { return true }
        let hop = owner.side == .enterprise ? configuration.enterprise.nextHop : configuration.oma.nextHop
        if case .uri(let uri) = hop, GatewayConfiguration.canonicalHost(uri.host) == host { return true }
        // An unconfigured peer: its own address (over UDP its port too, RFC 3581's symmetric
        // response routing applied to requests).
        return owner.peer == nil && host == owner.host && (owner.transport != .udp || target.port == owner.port)
    }

    /// The decision for an out-of-dialog request (in-dialog requests are matched to their
    /// dialog before this). `now` drives the per-peer rate limits.
    public mutating func route(_ request: SIPRequest, arrival: Arrival, now: NIODeadline) -> Decision {
        let peer = peer(for: arrival)
        if !allow(arrival, now: now) {
            // RFC 3261 §21.5.4: 503 with Retry-After; one second covers the bucket's refill.
            return .reject(status: 503, reason: "Service Unavailable", headers: [(.retryAfter, "1")])
        }
        var request = request
        // RFC 3261 §16.3 item 3 / §8.2: Max-Forwards 0 may not be forwarded (483); absent → 70.
        let maxForwards = (try? request.headers.maxForwards) ?? 70
        guard maxForwards > 0 else { return .reject(status: 483, reason: "Too Many Hops", headers: []) }
        request.headers.set(.maxForwards, String(maxForwards - 1))
        // RFC 3261 §16.3 item 4: a request that already passed through us is a loop.
        if let vias = try? request.headers.via,
            vias.contains(where: {
                localSentBy.contains("\($0.transport.uppercased()) \($0.host.lowercased()):\($0.port ?? 5060)")
            })
        {
            return .reject(status: 482, reason: "Loop Detected", headers: [])
        }
        // RFC 3325 §9.1: a trusted peer's P-Asserted-Identity, else From (FederationRouter+AssertedIdentity).
        guard let fromURI = Self.identity(of: request, trusted: peer?.trusted ?? false),
            let fromHost = Self.host(fromURI)
        else {
            return .reject(status: 400, reason: "Bad From", headers: [])
        }
        guard let targetHost = Self.host(request.uri) else {
            return .reject(status: 416, reason: "Unsupported URI Scheme", headers: [])
        }
        if let rejection = certificateRejection(of: arrival, peer: peer, fromHost: fromHost) { return rejection }
        let network = classify(request, peer: peer, side: arrival.side)
        Self.removeUntrustedIdentity(from: &request, side: arrival.side, trusted: peer?.trusted ?? false)
        guard let watcher = WatcherIdentity(uri: fromURI.description, network: network) else {
            return .reject(status: 400, reason: "Bad From", headers: [])
        }
        if isBlocked(fromHost) { return .reject(status: 403, reason: "Domain Blocked", headers: []) }
        if let local = localDecision(for: request, watcher: watcher, arrival: arrival, peer: peer) { return local }
        return crossing(
            request, watcher: watcher, arrival: arrival, fromURI: fromURI, fromHost: fromHost, targetHost: targetHost)
    }

    /// Mutual TLS: a configured peer must present one of its configured names; any other peer's
    /// certificate must name the domain it speaks for (the From domain). nil: the request may go on.
    private func certificateRejection(of arrival: Arrival, peer: GatewayConfiguration.Peer?, fromHost: String)
        -> Decision?
    {
        guard arrival.source.kind == .tls, configuration.tls?.requireClientCertificate == true else { return nil }
        if let peer, !peer.certificateNames.isEmpty {
            let known = Set(peer.certificateNames.map { $0.lowercased() })
            guard arrival.certificateNames.contains(where: { known.contains($0.lowercased()) }) else {
                return .reject(status: 403, reason: "Unknown Certificate", headers: [])
            }
        } else if !Self.certificate(arrival.certificateNames, speaksFor: fromHost) {
            return .reject(status: 403, reason: "Certificate Does Not Match Domain", headers: [])
        }
        return nil
    }

    /// The decision for a request the gateway handles itself: a PUBLISH for a linked identity it
    /// is the presence server of, or a watcher information SUBSCRIBE from the OMA side. nil for
    /// any other request, which crosses.
    private func localDecision(
        for request: SIPRequest, watcher: WatcherIdentity, arrival: Arrival, peer: GatewayConfiguration.Peer?
    ) -> Decision? {
        if request.method == .publish {
            // RFC 3903 §6 step 1: the gateway is the compositor only of the OMA identities it
            // serves (linked identities with publish-to-enterprise); anything else is 404.
            let target = WatcherIdentity.addressOfRecord(request.uri.description)
            guard arrival.side == .oma, let target,
                configuration.linkedIdentities.contains(where: { $0.publishToEnterprise && $0.oma == target })
            else {
                return .reject(status: 404, reason: "Not Found", headers: [])
            }
            return .local(watcher: watcher, request: request)
        }
        if arrival.side == .oma, GatewayCore.isWatcherInfo(request) {
            // RFC 3857 §5.1.6: a presentity's watchers are shown to the presentity alone, so the
            // subscriber's identity must be one an OMA proxy vouches for: a configured peer,
            // which authenticated its user (an unknown sender may put any From).
            guard let target = WatcherIdentity.addressOfRecord(request.uri.description),
                configuration.servesWatcherInfo(of: target)
            else {
                return .reject(status: 404, reason: "Not Found", headers: [])
            }
            guard peer != nil, watcher.uri == target else {
                return .reject(status: 403, reason: "Not The Presentity", headers: [])
            }
            return .local(watcher: watcher, request: request)
        }
        return nil
    }

    /// Whether a request crosses to the other side, and to which next hop: only to a domain the
    /// other side serves, never back into the side it claims to come from, and from a partner
    /// that is allowed.
    private func crossing(
        _ request: SIPRequest, watcher: WatcherIdentity, arrival: Arrival, fromURI: SIPURI, fromHost: String,
        targetHost: String
    ) -> Decision {
        var served = servingSide(of: targetHost)
        if arrival.side == .enterprise, served == .enterprise, Self.isBatchedCategorySubscribe(request, from: fromURI) {
            // [MS-PRES] §3.4.5.1.1 and the §4.5 example: a batched category SUBSCRIBE is addressed
            // to the subscriber itself (Request-URI = To = From, Require: adhoclist) and names its
            // resources in the body; it is meant for the OMA resources it lists, not relayed.
            served = .oma
        }
        guard let served, served != arrival.side, request.uri.parameters.value("maddr") == nil else {
            // No open relay: only domains served on the other side are reachable (an `maddr`
            // would send the request elsewhere, RFC 3261 §19.1.1).
            return .reject(status: 403, reason: "Relaying Denied", headers: [])
        }
        let fromSide = servingSide(of: fromHost)
        if fromSide == served {
            // A request into a side claiming to come from that same side, through the other face.
            return .reject(status: 403, reason: "Spoofed Origin", headers: [])
        }
        if fromSide == nil, let allowed = configuration.allowedPartners,
            !allowed.contains(where: { domain($0, covers: fromHost) })
        {
            return .reject(status: 403, reason: "Partner Not Allowed", headers: [])
        }
        let nextHop = served == .enterprise ? configuration.enterprise.nextHop : configuration.oma.nextHop
        return .forward(to: served, watcher: watcher, request: request, nextHop: nextHop)
    }

    /// Whether `request` is a batched category SUBSCRIBE ([MS-PRES] §3.4.5.1.1): `Require:
    /// adhoclist` and addressed to the subscriber itself (the Request-URI names the From identity).
    static func isBatchedCategorySubscribe(_ request: SIPRequest, from: SIPURI) -> Bool {
        guard request.method == .subscribe,
            (try? request.headers.require)?.contains(where: { $0.lowercased() == "adhoclist" }) == true
        else {
            return false
        }
        return WatcherIdentity.addressOfRecord(request.uri.description)
            == WatcherIdentity.addressOfRecord(from.description)
    }

    /// The watcher's network: from the peer's configuration, refined by the source-network
    /// information only when the peer is trusted (docs/flows.md, "Source network":
    /// `ms-source-network` as its own header
    /// or as a parameter of `ms-edge-proxy-message-trust`, values `federation`, `publiccloud`).
    func classify(_ request: SIPRequest, peer: GatewayConfiguration.Peer?, side: GatewayConfiguration.Side)
        -> SourceNetwork
    {
        // Unknown peers are federated on either side: never sameEnterprise by default
        // (docs/flows.md, "Source network").
        let base = peer?.network ?? .federated
        // Only the enterprise's own edge marks federated traffic; the OMA side never does.
        guard let peer, peer.trusted, side == .enterprise else { return base }
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
        configuration.servingSide(of: host)
    }

    func isBlocked(_ host: String) -> Bool {
        configuration.blockedPartners.contains { domain($0, covers: host) }
    }

    /// A URI's host in canonical form (``GatewayConfiguration/canonicalHost(_:)``): `contoso.com.`
    /// is `contoso.com`, so a trailing dot cannot pass the domain checks.
    static func host(_ uri: SIPURI) -> String? {
        guard uri.isSIP else { return nil }
        let host = GatewayConfiguration.canonicalHost(uri.host)
        return host.isEmpty ? nil : host
    }

    /// Identity headers a peer could forge: believed only from a peer configured as `trusted`,
    /// else removed on the way through (RFC 3325 §5: P-Asserted-Identity only within a trust
    /// domain; RFC 3892 Referred-By likewise). The Microsoft edge markings ([MS-PRES] §3.4.5.1.3,
    /// `ms-edge-proxy-message-trust` and `ms-source-network`) never come from the OMA side: they
    /// are removed there even from a trusted peer, so only the gateway's own marking reaches the
    /// enterprise.
    static func removeUntrustedIdentity(from request: inout SIPRequest, side: GatewayConfiguration.Side, trusted: Bool)
    {
        if side == .oma || !trusted {
            request.headers.remove(.msEdgeProxyMessageTrust)
            request.headers.remove(.msSourceNetwork)
        }
        if !trusted {
            for name in untrustedIdentityHeaders { request.headers.remove(name) }
        }
    }

    static let untrustedIdentityHeaders: [SIPHeaderName] = ["P-Asserted-Identity", "P-Preferred-Identity", .referredBy]

    /// Whether a certificate with `names` may speak for `domain`: a name equal to the domain, a
    /// host inside it (`sip.fabrikam.com` for `fabrikam.com`, as Microsoft federation edges are
    /// named), or a wildcard `*.domain` (RFC 6125 §6.4.3, left-most label only).
    public static func certificate(_ names: [String], speaksFor domain: String) -> Bool {
        guard domain.contains(".") else { return false }
        return names.contains { raw in
            let name = raw.lowercased()
            if name.hasPrefix("*.") {
                return domain == String(name.dropFirst(2))
                    || SIPServerIdentity.matches(presented: name, reference: domain)
            }
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

    /// Whether the bucket has refilled completely by `now`.
    func isFull(now: NIODeadline) -> Bool {
        tokens + Double(max(0, (now - last).nanoseconds)) / 1e9 * rate >= burst
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
