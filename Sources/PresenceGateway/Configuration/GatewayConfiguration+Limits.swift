public import SIPMessages

extension GatewayConfiguration {
    /// What one peer or watcher may make the gateway hold and send (docs/security.md). Every
    /// limit answers with the status RFC 3261 §21 gives for it: 413 for a batch with more
    /// resources than allowed, 503 with Retry-After for a full table or a rate exceeded.
    public struct Limits: Sendable, Hashable {
        /// Subscriptions one watcher may hold through the gateway, over all its dialogs (the Lync
        /// Edge default is 1,000 watched URIs per federated watcher). Resources past it are
        /// refused in the batch's RLMI part (`terminated;reason=rejected`).
        public var subscriptionsPerWatcher = 1_000
        /// Enterprise watchers one OMA presentity may have through the gateway ("The server
        /// SHOULD enforce a limit on incoming subscriptions per user", [MS-PRES] §3.4.5.1.3).
        /// Past it a new watcher's resource is refused in the RLMI part with
        /// `terminated;reason=quotaExceeded;statusCode=413` and the presentity as `cid`.
        public var subscriptionsPerPresentity = 10_000
        /// Resources one batched category SUBSCRIBE may name ([MS-PRES] §3.4.5.1.1): more get 413.
        /// It also bounds what one request can make the gateway send (one SUBSCRIBE a resource).
        public var resourcesPerBatch = 1_000
        /// Subscriptions one peer that is not configured may make the gateway hold: its dialogs
        /// and every subscription they fan out to (each leg of a batch, each member of a list),
        /// charged to it until they end (a configured peer's own `max-subscriptions` applies to
        /// it, unlimited when not set). A fortieth of `dialogs` by default, so that one address
        /// cannot take the table from everyone else; past it, 503 with Retry-After.
        public var subscriptionsPerPeer = 10_000
        /// Dialogs held in total (both sides); new subscriptions past it get 503 with Retry-After.
        public var dialogs = 400_000
        /// Requests per second from one source address that is not a configured peer (in and out
        /// of dialogs); configured peers use their own `rate-limit`.
        public var unconfiguredPeerRate = 200.0
        /// Subscriptions the gateway starts at once for one sender's requests (a batch's legs, a
        /// list's members, a dissolved list's members, a linked identity's stand-ins); past it
        /// they are paced at ``fanOutRate`` per second, so that one sender's fan-out neither
        /// floods the other side nor queues everyone else's behind it. As large as a batch may be
        /// by default: one request of the largest allowed size goes out at once.
        public var fanOutBurst = 1_000
        /// Per second, per sender, past ``fanOutBurst``.
        public var fanOutRate = 500.0
        /// SIP transactions each side's transaction layer holds at once, server and client each.
        /// A non-INVITE server transaction stays 32 s after its answer over UDP (RFC 3261 §17.2.2,
        /// Timer J = 64·T1) to absorb the request's retransmissions, so a side sustains
        /// `transactions` / 32 requests a second over UDP (500,000: 15,625/s, what one loop
        /// relays); past it new requests get 503 with Retry-After (counted as `transactions_full`
        /// refusals). Each answered transaction held costs about 1 KB (docs/performance.md,
        /// "Transactions").
        public var transactions = 500_000

        public init() {}
    }

    static func limits(_ node: ConfigurationNode) throws(ConfigurationError) -> Limits {
        let m = try node.mapping(known: [
            "subscriptions-per-watcher", "subscriptions-per-presentity", "subscriptions-per-peer",
            "resources-per-batch", "dialogs", "unconfigured-peer-rate", "fan-out-burst", "fan-out-rate",
            "transactions",
        ])
        var limits = Limits()
        if let v = m["subscriptions-per-watcher"] { limits.subscriptionsPerWatcher = try v.integer(in: 1...1_000_000) }
        if let v = m["subscriptions-per-presentity"] {
            limits.subscriptionsPerPresentity = try v.integer(in: 1...10_000_000)
        }
        if let v = m["subscriptions-per-peer"] { limits.subscriptionsPerPeer = try v.integer(in: 1...100_000_000) }
        if let v = m["resources-per-batch"] { limits.resourcesPerBatch = try v.integer(in: 1...100_000) }
        if let v = m["dialogs"] { limits.dialogs = try v.integer(in: 1...100_000_000) }
        if let v = m["unconfigured-peer-rate"] { limits.unconfiguredPeerRate = try v.number(in: 0.1...1_000_000) }
        if let v = m["fan-out-burst"] { limits.fanOutBurst = try v.integer(in: 1...1_000_000) }
        if let v = m["fan-out-rate"] { limits.fanOutRate = try v.number(in: 1...1_000_000) }
        if let v = m["transactions"] { limits.transactions = try v.integer(in: 100...100_000_000) }
        return limits
    }

    /// The side serving `host` (a domain of its list or a host inside one), if any. The host is
    /// compared in its canonical form: lower case, without the root's trailing dot (RFC 1034
    /// §3.1: `contoso.com.` and `contoso.com` name the same domain).
    public func servingSide(of host: String) -> Side? {
        let host = Self.canonicalHost(host)
        guard !host.isEmpty else { return nil }
        if enterprise.domains.contains(where: { domain($0, covers: host) }) { return .enterprise }
        if oma.domains.contains(where: { domain($0, covers: host) }) { return .oma }
        return nil
    }

    /// Whether the gateway may act on `uri` as a resource or target on `side`: a `sip`/`sips`
    /// URI with a user part whose host is a domain that side serves. An IP literal, a host of the
    /// other side or of no side, and an `maddr` (RFC 3261 §19.1.1, which would override the
    /// host) are refused, so nothing a peer writes can steer the gateway to an arbitrary address.
    public func admits(_ uri: SIPURI, on side: Side) -> Bool {
        guard uri.isSIP, uri.user?.isEmpty == false, uri.parameters.value("maddr") == nil else { return false }
        return servingSide(of: uri.host) == side
    }

    /// Whether `host` belongs to the enterprise side: one of its domains, a configured
    /// enterprise peer's address, or its fixed next hop ([MS-PRES] §3.4.5.1.3.1: a `poolFqdn` or
    /// GRUU names a pool of the deployment, never a host outside it).
    public func isEnterpriseHost(_ host: String) -> Bool {
        let host = Self.canonicalHost(host)
        if servingSide(of: host) == .enterprise { return true }
        if peers.contains(where: { $0.side == .enterprise && $0.host == host }) { return true }
        if case .uri(let hop) = enterprise.nextHop, Self.canonicalHost(hop.host) == host { return true }
        return false
    }

    /// `host` lower-cased, without brackets around an IPv6 literal and without a trailing dot.
    public static func canonicalHost(_ host: String) -> String {
        // Trimmed on the UTF-8 bytes (the delimiters are ASCII), not on Characters.
        let lower = host.lowercased()
        var text = lower.utf8[...]
        if text.first == UInt8(ascii: "["), text.last == UInt8(ascii: "]") { text = text.dropFirst().dropLast() }
        if text.last == UInt8(ascii: ".") { text = text.dropLast() }
        return text.count == lower.utf8.count ? lower : String(Substring(text))
    }
}
