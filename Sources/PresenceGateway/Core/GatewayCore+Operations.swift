import MSPresenceEvents
public import NIOCore
import PresenceDocuments
public import PresenceMapping
import SIPMessages
import SIPStack

/// What the operator sees and does through the admin API (README, "Runtime control"): the
/// bridged subscriptions with both legs, ending one, and a new configuration applied to the
/// live dialogs.
extension GatewayCore {
    /// One watcher's subscription through the gateway with the gateway's subscriptions on the
    /// other side that serve it.
    public struct BridgedSubscription: Sendable, Codable, Equatable {
        /// `e<n>` for an enterprise watcher, `o<n>` for an OMA watcher; stable while the
        /// watcher's dialog lives.
        public var id: String
        /// The side the watcher is on.
        public var side: String
        public var watcher: String
        /// How the watcher was classified ([MS-PRES] §3.4.5.1.3 source networks).
        public var network: String
        /// The watcher's dialog: `waiting` (not answered yet), `pending`, `active`, `terminated`.
        public var state: String
        /// The body type of the watcher's notifications.
        public var format: String?
        /// Seconds until the watcher's subscription expires unless refreshed.
        public var expiresIn: Int?
        /// The configured peer (or address) the watcher's dialog belongs to.
        public var peer: String?
        public var resources: [Resource]

        public struct Resource: Sendable, Codable, Equatable {
            public var uri: String
            /// For an enterprise watcher of an OMA presentity, what the presentity's policy
            /// decided for the watcher (`allow`, `polite-block`; the containers then choose the
            /// categories); nil for OMA watchers, whose view the enterprise server decides.
            public var decision: String?
            /// The gateway's subscription toward the presentity's side; nil while none serves it.
            public var leg: Leg?
        }

        public struct Leg: Sendable, Codable, Equatable {
            /// `subscribing`, `pending`, `active`, `unsubscribing`, `terminated`; for a list
            /// toward an OMA RLS whose document is being written, `writing-list`.
            public var state: String
            public var expiresIn: Int?
            /// None before a list's SUBSCRIBE was sent.
            public var callID: String?
            public var peer: String?
            /// Resources the leg carries (a batch dialog toward the enterprise carries several).
            public var resources: Int
        }
    }

    /// The bridged subscriptions, by id, optionally only those whose watcher or a resource is
    /// `uri` (compared as addresses of record) and whose watcher is on `side`.
    public func bridgedSubscriptions(
        uri: String? = nil, side: GatewayConfiguration.Side? = nil,
        now: NIODeadline
    ) -> [BridgedSubscription] {
        bridgedSubscriptions(uri: uri, side: side, now: now, offset: 0, limit: .max).page
    }

    /// One page of ``bridgedSubscriptions(uri:side:now:)`` and how many there are in all: only
    /// the page's are described (without `uri`; with it, each is, to be matched), so that the
    /// admin API and the status page cost the relay's loop a page, not the whole table.
    public func bridgedSubscriptions(
        uri: String?, side: GatewayConfiguration.Side?, now: NIODeadline, offset: Int, limit: Int
    ) -> (total: Int, page: [BridgedSubscription]) {
        let wanted = uri.map { WatcherIdentity.addressOfRecord($0) ?? $0 }
        func matches(_ subscription: BridgedSubscription) -> Bool {
            guard let wanted else { return true }
            let names = [subscription.watcher] + subscription.resources.map(\.uri)
            return names.contains { (WatcherIdentity.addressOfRecord($0) ?? $0) == wanted }
        }
        var total = 0
        var out: [BridgedSubscription] = []
        func add(_ describe: () -> BridgedSubscription?) {
            let inPage = total >= offset && out.count < limit
            if wanted == nil, !inPage {
                total += 1
                return
            }
            guard let subscription = describe(), matches(subscription) else { return }
            if total >= offset, out.count < limit { out.append(subscription) }
            total += 1
        }
        if side != .oma {
            for key in bridge.watchKeys.sorted() {
                guard let watch = bridge[watch: key] else { continue }
                add { describe(enterpriseWatch: key, watch, now: now) }
            }
        }
        if side != .enterprise {
            for key in notifier.keys.sorted() {
                // A list member's watch is shown as a resource of its list; a mirror is no watcher's.
                guard let watch = notifier[key], isWatchersOwn(key, watch), lists.owner(of: key) == nil else {
                    continue
                }
                add { describe(omaWatch: key, watch, now: now) }
            }
        }
        return (total, out)
    }

    /// Ends the bridged subscription `id` as a shutdown would, with `reason` (`deactivated` or
    /// `rejected`, RFC 6665 §4.2.2): a final NOTIFY to the watcher and the legs toward the other
    /// side unsubscribed (a leg of a batch dialog that serves other watchers keeps serving them).
    /// nil when there is no such subscription.
    public mutating func endSubscription(_ id: String, reason: String, now: NIODeadline) -> [Action]? {
        guard let kind = id.first, let key = Int(id.dropFirst()) else { return nil }
        switch kind {
        case "e" where bridge[watch: key] != nil: return endWatcher(.enterpriseWatch(key), reason: reason, now: now)
        case "o" where notifier[key].map({ isWatchersOwn(key, $0) && lists.owner(of: key) == nil }) == true:
            return endWatcher(.omaWatch(key), reason: reason, now: now)
        default: return nil
        }
    }

    /// Ends a watcher's dialog: a waiting watcher is answered (503 with Retry-After when
    /// `deactivated`, else 403), an answered one gets its final NOTIFY, and its legs are
    /// unsubscribed.
    mutating func endWatcher(_ context: Context, reason: String, now: NIODeadline) -> [Action] {
        func refusal(_ request: SIPRequest, _ id: ServerRequestID) -> Action {
            reason == "deactivated"
                ? .respond(
                    id,
                    SIPResponse(replyingTo: request, statusCode: 503, toTag: ids.tag(), headers: [(.retryAfter, "30")]))
                : .respond(id, SIPResponse(replyingTo: request, statusCode: 403, toTag: ids.tag()))
        }
        switch context {
        case .enterpriseWatch(let key):
            guard let watch = bridge[watch: key] else { return [] }
            if let pending = watch.pending {
                forgetEnterpriseWatch(key)
                return [.cancel(.firstAnswer(context)), refusal(pending.request, pending.id)]
                    + endOMALegs(watch.legs.values, now: now)
            }
            let actions = bridge.modifyWatch(key) { $0.terminate(reason: reason, now: now) }
            return apply(actions ?? [], context: context, now: now)
        case .omaWatch(let key):
            guard let watch = notifier[key] else { return [] }
            if let pending = watch.pending {
                let gone = forgetOMAWatch(key)
                return [refusal(pending.request, pending.id), .cancel(.firstAnswer(context))]
                    + (gone.map { detachOMAWatch($0, now: now) } ?? [])
            }
            if lists.isList(key) { return terminateList(key, reason: reason, now: now) }
            guard watch.subscription != nil else {
                // A linked identity's source subscription or a stand-in: unsubscribed with the rest.
                guard !isWatchersOwn(key, watch), let gone = forgetOMAWatch(key) else { return [] }
                return detachOMAWatch(gone, now: now)
            }
            return apply(notifier.terminate(key, reason: reason, now: now), context: context, now: now)
        case .winfoWatch(let key):
            return applyWatcherInfo(watcherInfo.terminate(key, reason: reason, now: now))
        default:
            return []
        }
    }

    /// Applies a new configuration to the running gateway without dropping a dialog: the
    /// dialogs keep their peers (carried over by name; a peer no longer configured becomes an
    /// address), and every enterprise watcher of an OMA presentity is resolved again under the
    /// presentity's new policy and containers. It is notified only when the body rendered for it
    /// changed, so a politely blocked watcher still cannot tell ([MS-PRES] §3.2.5.3); a watcher
    /// the new policy blocks loses the resource with reason `rejected` (RFC 6665 §4.2.2) and the
    /// OMA leg is unsubscribed; a resource that waited for its owner (`confirm`) is decided
    /// (``resolveAwaitingAuthorization(now:)``). New mapping tables apply from the next notification each side
    /// sends. Listeners and the SIP transports' TLS material are the runtime's to apply. With
    /// several shards, `board` is the new configuration's (``share(_:)``).
    public mutating func reconfigure(
        _ new: GatewayConfiguration, mapper: PresenceMapper, board: PeerBoard? = nil, now: NIODeadline
    ) -> [Action] {
        let old = configuration
        configuration = new
        self.mapper = mapper
        if let board { share(board) }
        followMovedPeers(from: old, to: new)

        // A list whose domain no longer has its RLS there (or an XCAP root of another) is given
        // up for subscriptions of its members' own.
        var out: [Action] = []
        for key in bridge.listKeys.sorted() {
            guard let list = bridge[list: key], !list.closing,
                listDocumentURI(watcher: list.watcher, domain: list.domain) != list.document
            else { continue }
            out += dissolveList(key, now: now)
        }
        let spheres = bridge.spheres
        out += resolveLegsAgain(
            bridge.legKeys.sorted(),
            previous: { [upnp] in Self.policy(for: $0, in: old, spheres: spheres, decisions: upnp) }, now: now)
        out += resolveAwaitingAuthorization(now: now)
        if new.resourceLists != old.resourceLists { out += resourceListsChanged(now: now) }
        out += watchXCAPDocuments(now: now)
        // A presentity the gateway no longer decides for has no watcher information here.
        for key in watcherInfo.keys where !new.servesWatcherInfo(of: watcherInfo[key]?.presentity ?? "") {
            out += endWatcher(.winfoWatch(key), reason: "noresource", now: now)
        }
        refileWatchers()
        return out + watcherInfoChanges(now: now, everyWatch: true)
    }

    /// A peer that moved to another address is followed there: the dialog's requests come from,
    /// and the gateway's go to, where the configuration now says it is. A peer no longer
    /// configured stays with the address the dialog was made with. `positions`: the new
    /// configuration's peers by name.
    private static func carried(
        _ peer: DialogPeer?, from old: GatewayConfiguration, to new: GatewayConfiguration,
        positions: [String: UInt16]
    ) -> DialogPeer? {
        guard var peer, let index = peer.peer else { return peer }
        let before = Int(index) < old.peers.count ? old.peers[Int(index)] : nil
        guard let moved = before.flatMap({ positions[$0.name] }) else {
            peer.peer = nil
            return peer
        }
        let after = new.peers[Int(moved)]
        peer.peer = moved
        if !after.certificateNames.isEmpty { peer.certificateNames = after.certificateNames }
        if let before, after.host != before.host || after.port != before.port {
            peer.host = after.host
            if let port = after.port { peer.port = port }
        }
        return peer
    }

    /// Every dialog's peer after a reload (``reconfigure(_:mapper:now:)``): a configured peer is
    /// found again by name, and the subscriptions each peer holds are counted again.
    private mutating func followMovedPeers(from old: GatewayConfiguration, to new: GatewayConfiguration) {
        let positions = Dictionary(
            new.peers.enumerated().map { ($1.name, UInt16($0)) }, uniquingKeysWith: { first, _ in first })
        func carried(_ peer: DialogPeer?) -> DialogPeer? {
            Self.carried(peer, from: old, to: new, positions: positions)
        }
        quotas.resetPeers()
        // Written only where a peer moved: every write is a record for the durable store.
        for key in bridge.watchKeys {
            let current = bridge[watch: key]?.peer
            let peer = carried(current)
            if peer != current { bridge.modifyWatch(key) { $0.peer = peer } }
            if let peer { quotas.countPeer(loadKey(peer)) }
        }
        for key in notifier.keys {
            guard let watch = notifier[key] else { continue }
            let peer = carried(watch.peer)
            if peer != watch.peer { notifier.modify(key) { $0.peer = peer } }
            if watch.linked == nil, let peer { quotas.countPeer(loadKey(peer)) }
        }
        for key in bridge.legKeys {
            guard let leg = bridge[leg: key] else { continue }
            let peer = carried(leg.peer)
            if peer != leg.peer { bridge.modifyLeg(key) { $0.peer = peer } }
            // Charged by name or address, which a reload does not change.
            if let sender = sender(of: leg.charged) { quotas.countPeer(sender) }
        }
        for key in legPool.keys {
            let current = legPool[key]?.peer
            let peer = carried(current)
            if peer != current { legPool.modify(key) { $0.peer = peer } }
        }
        for key in bridge.listKeys {
            let current = bridge[list: key]?.peer
            let peer = carried(current)
            if peer != current { bridge.modifyList(key) { $0.peer = peer } }
        }
        watcherInfo.carryPeers(carried)
        serverWatches.carryPeers(carried)
    }

    /// Applies `presentity`'s new pres-rules (its document fetched again from its XCAP server,
    /// GatewayConfiguration+XCAP.swift, or a validity interval that began or ended) as ``reconfigure(_:mapper:now:)`` applies a new
    /// configuration, to that presentity's watchers only: each enterprise watcher of it is
    /// resolved again and notified only when its view changed, one waiting for the owner is
    /// decided, and the owner's watcher information follows.
    public mutating func replacePresRules(_ rules: PresRules, of presentity: String, now: NIODeadline) -> [Action] {
        guard configuration.policies[presentity] != nil, configuration.policies[presentity]?.rules != rules else {
            return []
        }
        let previous = configuration
        let spheres = bridge.spheres
        configuration.policies[presentity]?.rules = rules
        return resolveLegsAgain(
            legs(of: presentity),
            previous: { [upnp] in Self.policy(for: $0, in: previous, spheres: spheres, decisions: upnp) }, now: now)
            + resolveAwaitingAuthorization(now: now)
            + watcherInfoChanges(now: now, everyWatch: true)
    }

    /// The OMA legs to `presentity` (an address of record), in key order.
    func legs(of presentity: String) -> [Int] {
        bridge.legKeys.filter { key in
            bridge[leg: key].map { (WatcherIdentity.addressOfRecord($0.resource) ?? $0.resource) == presentity }
                ?? false
        }.sorted()
    }

    /// Resolves the enterprise watcher of each OMA leg in `keys` again under its presentity's
    /// policy (RFC 5025 §3.2.1): a blocked one loses the resource with reason `rejected` (RFC
    /// 6665 §4.2.2), the others are notified only when their view changed. A leg whose watcher's
    /// permissions (RFC 5025 §3.3) differ from those of its `previous` policy is refreshed: the
    /// full state its NOTIFY then brings is shown as they now grant.
    /// `shown` is a leg whose state was just shown under the new rules: it is not refreshed.
    mutating func resolveLegsAgain(
        _ keys: [Int], previous: (String) -> PresentityPolicy, shown: Int? = nil, now: NIODeadline
    ) -> [Action] {
        var out: [Action] = []
        var refreshed: Set<Int> = []
        for key in keys {
            guard let leg = bridge[leg: key], !leg.closing, let watch = bridge[watch: leg.watch] else { continue }
            let policy = policy(for: leg.resource)
            let handling = policy.subHandling(for: watch.watcher)
            switch handling {
            case .allow, .politeBlock:
                if handling != leg.handling { bridge.modifyLeg(key) { $0.handling = handling } }
            case .confirm:
                // A live dialog has no authorization step to go back to: it sees what a watcher
                // waiting for one would, the never-published view.
                if leg.handling != .politeBlock { bridge.modifyLeg(key) { $0.handling = .politeBlock } }
            case .block:
                out += endOMALegs([key], now: now)
                out += resourceEnded(leg, reason: "rejected", statusCode: nil, now: now)
                continue
            }
            if key != shown,
                policy.rules.permissions(for: watch.watcher)
                    != previous(leg.resource).rules.permissions(for: watch.watcher),
                leg.categories != nil, !leg.pending
            {
                if leg.subscription != nil {
                    out += bridge.refreshLeg(key, now: now)
                } else if let list = leg.list, refreshed.insert(list).inserted {
                    // A member's state comes with its list's: the refresh brings all of it.
                    out += bridge.refreshList(list, now: now)
                }
            }
            if let leg = bridge[leg: key] { out += viewMayHaveChanged(leg, now: now) }
        }
        return out
    }

    /// Notifies the enterprise watcher of `leg` when the body rendered for it differs from the
    /// last one sent.
    private mutating func viewMayHaveChanged(_ leg: OMALeg, now: NIODeadline) -> [Action] {
        guard let watch = bridge[watch: leg.watch] else { return [] }
        if watch.documentResource != nil {
            guard watch.document != nil else { return [] }
            return apply(bridge.documentLegChanged(leg.watch, leg: leg, changed: true, views, ids: &ids, now: now))
        }
        return viewChanged(leg, now: now)
    }

    // MARK: - Descriptions

    private func name(of peer: DialogPeer?) -> String? {
        guard let peer else { return nil }
        if let index = peer.peer, Int(index) < configuration.peers.count { return configuration.peers[Int(index)].name }
        return peer.target.description
    }

    private static func seconds(until deadline: NIODeadline?, now: NIODeadline) -> Int? {
        guard let deadline else { return nil }
        return max(0, Int((deadline - now).nanoseconds / 1_000_000_000))
    }

    private static func state(_ status: NotifierSubscription.Status) -> String {
        switch status {
        case .pending: "pending"
        case .active: "active"
        case .terminated: "terminated"
        }
    }

    private func describe(enterpriseWatch key: Int, _ watch: EnterpriseWatch, now: NIODeadline) -> BridgedSubscription?
    {
        let dialog = watch.document ?? watch.subscription?.subscription
        let resources: [String]
        if let resource = watch.documentResource {
            resources = [resource]
        } else if let subscription = watch.subscription {
            resources = Array(subscription.resources.keys)
        } else if let pending = watch.pending {
            resources = pending.batch.actions.flatMap { $0.resources.map(\.uri) }
        } else {
            resources = Array(watch.legs.keys)
        }
        return BridgedSubscription(
            id: "e\(key)", side: GatewayConfiguration.Side.enterprise.rawValue, watcher: watch.watcher.uri,
            network: watch.watcher.network.rawValue, state: dialog.map { Self.state($0.status) } ?? "waiting",
            format: dialog?.terms.bodyType ?? watch.pending?.terms.bodyType,
            expiresIn: dialog.flatMap { Self.seconds(until: $0.expiresAt, now: now) }, peer: name(of: watch.peer),
            resources: resources.map { uri in
                let leg = watch.legs[uri].flatMap { bridge[leg: $0] }
                return .init(
                    uri: uri, decision: watch.refused.contains(uri) ? "refused" : leg?.handling.token,
                    leg: leg.flatMap { describe($0, now: now) })
            })
    }

    private func describe(omaWatch key: Int, _ watch: OMAWatch, now: NIODeadline) -> BridgedSubscription {
        func resource(_ uri: String, leg key: Int?) -> BridgedSubscription.Resource {
            .init(
                uri: uri, decision: nil,
                leg: key.flatMap { legPool[$0] }.map {
                    describe($0.subscriber.subscription, peer: $0.peer, resources: $0.watches.count, now: now)
                })
        }
        // A resource list (RFC 4662): each member with the leg that carries it.
        let resources =
            lists[key]?.members.map { resource($0.uri, leg: $0.watch.flatMap { notifier[$0]?.leg }) }
            ?? [resource(watch.resource, leg: watch.leg)]
        return BridgedSubscription(
            id: "o\(key)", side: GatewayConfiguration.Side.oma.rawValue, watcher: watch.watcher.uri,
            network: watch.watcher.network.rawValue,
            state: watch.subscription.map { Self.state($0.status) } ?? "waiting",
            format: watch.subscription?.terms.bodyType ?? watch.pending?.terms.bodyType,
            expiresIn: watch.subscription.flatMap { Self.seconds(until: $0.expiresAt, now: now) },
            peer: name(of: watch.peer), resources: resources)
    }

    /// The subscription behind an OMA leg: its own, or its list's (with the list's member count).
    private func describe(_ leg: OMALeg, now: NIODeadline) -> BridgedSubscription.Leg? {
        if let subscription = leg.subscription {
            return describe(subscription, peer: leg.peer, resources: 1, now: now)
        }
        guard let list = leg.list.flatMap({ bridge[list: $0] }) else { return nil }
        return list.subscription.map { describe($0, peer: list.peer, resources: list.members.count, now: now) }
            ?? .init(state: "writing-list", expiresIn: nil, callID: nil, peer: nil, resources: list.members.count)
    }

    private func describe(
        _ subscription: SubscriberSubscription, peer: DialogPeer?, resources: Int,
        now: NIODeadline
    ) -> BridgedSubscription.Leg {
        let state =
            switch subscription.status {
            case .subscribing: "subscribing"
            case .pending: "pending"
            case .active: "active"
            case .unsubscribing: "unsubscribing"
            case .terminated: "terminated"
            }
        return .init(
            state: state, expiresIn: Self.seconds(until: subscription.expiresAt, now: now), callID: subscription.callID,
            peer: name(of: peer), resources: resources)
    }
}
