public import SIPMessages
import SIPTransport

/// What the core enforces so that no peer can make the gateway hold or send more than its
/// configuration allows (docs/security.md): the refusals, the quotas and the charges of
/// fan-outs. The peer each dialog belongs to is in `GatewayCore+Dialogs`.
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

    mutating func releaseQuota(_ watcher: String) {
        quotas.releaseWatcher(watcher)
    }

}
