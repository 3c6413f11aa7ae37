public import SIPMessages
import SIPTransport

/// What the core enforces so that no peer can make the gateway hold or send more than its
/// configuration allows (docs/security.md), and the peer each dialog belongs to.
extension GatewayCore {
    /// Counts of what the core refused, by reason (exported as
    /// `gateway_security_refusals_total{reason}`).
    public struct Refusals: Sendable, Hashable {
        /// A resource outside the OMA domains (refused in a batch; 404 for a single subscription).
        public var resourceOutsideOMA = 0
        /// A resource past the watcher's `subscriptions-per-watcher`.
        public var watcherQuota = 0
        /// A batch naming more than `resources-per-batch` resources (413).
        public var batchTooLarge = 0
        /// A new subscription while `limits.dialogs` are held (503).
        public var dialogsFull = 0
        /// A `poolFqdn` naming a host outside the enterprise side, not followed.
        public var foreignPool = 0
        /// A new subscription past its peer's `subscriptions-per-peer` or `max-subscriptions` (503).
        public var peerQuota = 0
        /// A watcher URI in a watcher information document that does not parse: left out.
        public var watcherURI = 0
        /// A `presence.winfo` SUBSCRIBE past ``GatewayCore/watcherInfoPerPresentity`` (503).
        public var winfoPerPresentity = 0
        /// A category SUBSCRIBE whose form [MS-PRES] §3.4.5.3 refuses (400 or 403).
        public var categoryForm = 0
        /// A resource past its presentity's `subscriptions-per-presentity` (RLMI `quotaExceeded`).
        public var presentityQuota = 0
        /// A new subscription from a peer the operator drained (503, GatewayCore+Draining.swift).
        public var peerDrained = 0
        /// A UPnP RegisterForContactPresence past `upnp.max-registrations` (UPnP error 501).
        public var upnpRegistrations = 0

        public var byReason: [(String, Int)] {
            [
                ("batch_resource", resourceOutsideOMA), ("watcher_quota", watcherQuota), ("batch_size", batchTooLarge),
                ("dialogs_full", dialogsFull), ("pool_fqdn", foreignPool), ("peer_quota", peerQuota),
                ("watcher_uri", watcherURI), ("winfo_presentity", winfoPerPresentity),
                ("category_form", categoryForm), ("presentity_quota", presentityQuota),
                ("peer_drained", peerDrained), ("upnp_registrations", upnpRegistrations),
            ]
        }
    }

    /// Takes one subscription of `watcher`'s quota; false (nothing taken) when it is used up.
    mutating func takeQuota(_ watcher: String) -> Bool {
        quotas.takeWatcher(watcher, limit: configuration.limits.subscriptionsPerWatcher)
    }

    /// Takes what an OMA watcher's new subscription holds: one of `watcher`'s subscriptions and
    /// one of `peer`'s dialogs; false (nothing taken) when either is used up.
    mutating func takeQuotas(_ watcher: String, peer: DialogPeer?) -> Bool {
        guard takeQuota(watcher) else {
            quotas.refusals.watcherQuota += 1
            return false
        }
        guard takePeerQuota(peer) else {
            releaseQuota(watcher)
            return false
        }
        return true
    }

    /// Gives back what ``takeQuotas(_:peer:)`` took.
    mutating func releaseQuotas(_ watcher: String, peer: DialogPeer?) {
        releaseQuota(watcher)
        releasePeerQuota(peer)
    }

    /// Who a subscription the gateway makes on a sender's behalf (a leg of a batch, a member of a
    /// list) is charged to: a number standing for the sender's load key (``Quotas``) while the
    /// sender holds anything; 0 for nobody.
    typealias Charge = UInt32

    /// The charge of a subscription made for a request from `peer`.
    mutating func charge(_ peer: DialogPeer?) -> Charge {
        guard let peer else { return 0 }
        return quotas.charge(loadKey(peer))
    }

    /// The charge `peer` was given already (``charge(_:)``); 0, nobody, when it has none.
    func knownCharge(_ peer: DialogPeer?) -> Charge {
        peer.flatMap { quotas.knownCharge(loadKey($0)) } ?? 0
    }

    /// The load key a charge stands for.
    func sender(of charge: Charge) -> String? { quotas.sender(of: charge) }

    /// Whether `presentity` may have one more enterprise watcher's leg.
    func presentityHasRoom(_ presentity: String) -> Bool {
        quotas.presentityHasRoom(presentity, limit: configuration.limits.subscriptionsPerPresentity)
    }

    /// Takes one subscription dialog of `peer`'s quota (``GatewayConfiguration/Limits/subscriptionsPerPeer``,
    /// or a configured peer's `max-subscriptions`); false when it is used up. A dialog without a
    /// recorded peer counts against nobody.
    mutating func takePeerQuota(_ peer: DialogPeer?) -> Bool {
        guard let peer else { return true }
        let limit: Int?
        if let index = peer.peer {
            limit = Int(index) < configuration.peers.count ? configuration.peers[Int(index)].maxSubscriptions : nil
        } else {
            limit = configuration.limits.subscriptionsPerPeer
        }
        return quotas.takePeer(loadKey(peer), limit: limit)
    }

    mutating func releasePeerQuota(_ peer: DialogPeer?) {
        guard let peer else { return }
        quotas.releasePeer(loadKey(peer))
    }

    /// What a peer's load (and its fan-outs' pace) is counted under: a configured peer by name
    /// (so that a reload that moves it in the list keeps its count), another by address.
    /// Strings the state already holds, so that counting allocates nothing (a peer named as an
    /// address shares that address's count).
    func loadKey(_ peer: DialogPeer) -> String {
        if let index = peer.peer, Int(index) < configuration.peers.count {
            return configuration.peers[Int(index)].name
        }
        return peer.host
    }

    /// 503 with Retry-After for a subscription over a quota.
    mutating func overQuota(_ request: SIPRequest, id: ServerRequestID) -> [Action] {
        [
            .respond(
                id,
                SIPResponse(
                    replyingTo: request, statusCode: 503, reasonPhrase: "Too Many Subscriptions", toTag: ids.tag(),
                    headers: [(.retryAfter, "60")]))
        ]
    }

    /// Removes an enterprise watch: its dialog closed, and given back to its peer's quota.
    @discardableResult
    mutating func forgetEnterpriseWatch(_ key: Int) -> EnterpriseWatch? {
        let (watch, output) = bridge.closeWatch(key)
        _ = apply(output)
        return watch
    }

    mutating func releaseQuota(_ watcher: String) {
        quotas.releaseWatcher(watcher)
    }

    /// Removes an OMA watch, giving its subscription back to the watcher's quota.
    @discardableResult
    mutating func forgetOMAWatch(_ key: Int) -> RemovedOMAWatch? {
        guard let current = notifier[key] else { return nil }
        let held = held(of: key, current)
        let list = lists.remove(key)
        let (watch, output) = notifier.close(key, held: held)
        _ = apply(output)
        return watch.map { RemovedOMAWatch(watch: $0, list: list) }
    }

    /// An OMA watch removed, with the list it subscribed to when it was a list subscription
    /// (whose member watches the caller ends: ``detachOMAWatch(_:now:)``).
    struct RemovedOMAWatch {
        var watch: OMAWatch
        var list: ResourceList?
    }

    /// What the OMA watch `key` holds of the quotas: a watcher's own subscription counts against
    /// its peer's quota, and against its watcher's unless it is a list's (whose members count
    /// instead); a linked identity's source and a stand-in for a watcher at the OMA presence
    /// server are the gateway's own, charged to nobody.
    func held(of key: Int, _ watch: OMAWatch) -> HeldQuota {
        guard isWatchersOwn(key, watch) else { return HeldQuota() }
        return HeldQuota(watcher: lists.isList(key) ? nil : watch.watcher.uri, peer: watch.peer)
    }

    /// Whether the OMA watch `key` is a watcher's own subscription (a list's included): not a
    /// linked identity's source, a stand-in nor a UPnP registration's (flow 5 caps those itself).
    func isWatchersOwn(_ key: Int, _ watch: OMAWatch) -> Bool {
        watch.linked == nil && notifier.standsIn(key) == nil && upnp.registration(ofWatch: key) == nil
    }

    /// The Contact of the gateway's notifier dialog with `peer` on `side`: the one of the
    /// transport the peer came over, else the side's (nil: `fallback`).
    func contact(_ side: GatewayConfiguration.Side, for peer: DialogPeer?, fallback: SIPURI) -> SIPAddress {
        peer.flatMap { transportContacts[side]?[$0.transport] } ?? contacts[side] ?? SIPAddress(uri: fallback)
    }

    /// The context of the dialog an in-dialog request names, and the peer that dialog belongs to
    /// (nil: not recorded, and then no request is admitted into it). nil when no dialog matches
    /// (the core answers such a request 481).
    public func dialogOwner(of request: SIPRequest) -> (context: Context, peer: DialogPeer?)? {
        guard let tag = (try? request.headers.to)?.tag else { return nil }
        return dialogOwner(of: request, toTag: tag)
    }

    /// ``dialogOwner(of:)`` for a request whose To tag the caller has read.
    public func dialogOwner(of request: SIPRequest, toTag: String) -> (context: Context, peer: DialogPeer?)? {
        guard let callID = request.headers.callID, let context = dialogContext(callID: callID, localTag: toTag)
        else { return nil }
        return (context, peer(of: context))
    }

    /// The peer the dialog of `context` belongs to, if recorded. Every kind of dialog the core
    /// holds names one here: the runtime admits no request into a dialog without a peer and
    /// sends its own in-dialog requests only where that peer may be reached
    /// (docs/security.md, "Requests inside a dialog").
    public func peer(of context: Context) -> DialogPeer? {
        switch context {
        case .enterpriseWatch(let key): bridge[watch: key]?.peer
        case .omaWatch(let key): notifier[key]?.peer
        case .winfoWatch(let key): watcherInfo[key]?.peer
        case .omaLeg(let key): bridge[leg: key]?.peer
        case .omaList(let key): bridge[list: key].flatMap(\.peer)
        case .enterpriseLeg(let key): legPool[key]?.peer
        case .serverWatch(let key): serverWatches[key]?.peer
        case .upnpContact(let key): upnp[key]?.peer
        // Publications make no dialog (RFC 3903 §4): nothing is admitted in their name.
        case .linkedPublication, .servicePublish, .upnpUser: nil
        }
    }

    /// The runtime sent a dialog-creating SUBSCRIBE of the gateway's (a leg's, a list's, a server
    /// watch's) to `peer` (the configured next hop or what DNS gave for it): the dialog belongs
    /// to that peer. After a failover to another target the last one tried is the peer.
    public mutating func reached(_ peer: DialogPeer, for context: Context) {
        switch context {
        case .omaLeg(let key): bridge.modifyLeg(key) { $0.peer = peer }
        case .omaList(let key): bridge.modifyList(key) { $0.peer = peer }
        case .enterpriseLeg(let key): legPool.modify(key) { $0.peer = peer }
        case .serverWatch(let key): serverWatches.reached(peer, key: key)
        case .upnpContact(let key): upnp.modify(key) { $0.peer = peer }
        case .enterpriseWatch, .omaWatch, .winfoWatch, .linkedPublication, .servicePublish, .upnpUser: break
        }
    }

    /// The marking a Microsoft Access Edge gives federated traffic ([MS-PRES] §3.4.5.1.3: the
    /// server learns a watcher's network from the request's source-network information; the
    /// §4.6 and §4.3 examples carry it as `ms-source-network=federation` among the parameters of
    /// `ms-edge-proxy-message-trust`), for the requests the gateway sends into the enterprise on
    /// behalf of an OMA watcher, so the enterprise resolves the watcher as federated (or public
    /// cloud), never as one of its own:
    ///
    ///     ms-edge-proxy-message-trust: ms-source-network=federation|publiccloud;ms-source-verified-user=verified|unverified
    ///
    /// `verified` only when the watcher's request came from a configured peer or over mutual
    /// TLS. The examples' other parameters (`ms-source-type`, `ms-ep-fqdn`, `ms-remote-fqdn`) are
    /// left out: the enterprise's decision does not depend on them, and a batched category
    /// SUBSCRIBE must stay within the 1300 bytes RFC 3261 §18.1.1 allows over UDP.
    static func edgeTrust(network: SourceNetwork, verified: Bool) -> String {
        "ms-source-network=\(network == .publicCloud ? "publiccloud" : "federation");ms-source-verified-user=\(verified ? "verified" : "unverified")"
    }
}
