import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// Watchers at the OMA presence server (docs/flows.md, "Watchers at the OMA presence server"): a
/// linked identity published to the OMA side (flow 4, `publish-to-oma`) is watched there by OMA
/// users the gateway never sees. With `mirror-watchers`, the gateway subscribes to the OMA
/// identity's watcher information (RFC 3857, as the identity itself: the presence server lets
/// a presentity see its own watchers) and stands in for each OMA watcher it lists as `active` or
/// `pending`: a category subscription into the enterprise from that watcher, carrying the
/// subscriber-list context, puts the watcher on the enterprise identity's subscriber list as an
/// OMA watcher through the gateway is put there ([MS-PRES] §2.2.2.4.1, §3.6). A watcher that
/// leaves the list (terminated, or missing from a full list) is unsubscribed. Watchers of the
/// enterprise's own domains, who can watch the enterprise identity themselves, are left out.
extension GatewayCore {
    /// Watchers at the OMA presence server stood in for, for metrics.
    public var mirroredWatcherCount: Int { notifier.standInCount }

    /// The most watchers mirrored for one identity: a presence server listing more does not
    /// make the gateway open more subscriptions into the enterprise.
    public static let mirroredWatchersLimit = 1_000
    /// The most rows kept of one identity's table: partial documents that keep adding watchers
    /// do not grow it without end.
    static let mirroredTableLimit = 4 * mirroredWatchersLimit

    /// Subscribes to the watcher information of every linked identity that mirrors its watchers,
    /// and ends the stand-ins restored from the durable store for an identity no longer mirrored
    /// (at start: linked identities change with a restart, not a reload).
    mutating func watchWatcherLists(now: NIODeadline) -> [Action] {
        let wanted = runsNodeWideWork ? configuration.linkedIdentities.filter(\.mirrorWatchers) : []
        var out: [Action] = []
        for key in notifier.standIns.values.flatMap(\.values).sorted() {
            guard let watch = notifier[key], let identity = notifier.standsIn(key),
                !wanted.contains(where: { $0.oma == identity && $0.enterprise == watch.resource }),
                let gone = forgetOMAWatch(key)
            else { continue }
            out += detachOMAWatch(gone, now: now)
        }
        for identity in wanted { out += startWatcherListWatch(identity) }
        return out
    }

    mutating func startWatcherListWatch(_ identity: GatewayConfiguration.LinkedIdentity) -> [Action] {
        guard let uri = try? SIPURI(identity.oma), let contact = contacts[.oma] else { return [] }
        // Versions count within one subscription (RFC 3858 §4.4): the new one's first document,
        // full state, is taken whatever its version. The mirrors stay until it says otherwise.
        serverWatches.setList(nil, of: identity.oma)
        let package = Self.watcherInfoPackage(configuration)
        let configuration = SubscriberSubscription.Configuration(
            target: uri, from: SIPAddress(uri: uri), to: SIPAddress(uri: uri), contact: contact, package: package,
            accept: [SIPBodyType.watcherInfo], expires: self.configuration.subscriptions.defaultExpires)
        return startServerWatch(.watcherList(identity), configuration)
    }

    /// A watcher information document of a watch, applied to its table
    /// (``OMAServerWatches/listed(_:key:limit:now:)``); then the mirrors follow the table.
    mutating func watchersListed(_ info: WatcherInfo, watch key: Int, now: NIODeadline) -> [Action] {
        let (refresh, identity) = serverWatches.listed(info, key: key, limit: Self.mirroredTableLimit, now: now)
        guard let identity else { return refresh }
        return refresh + mirror(identity, now: now)
    }

    /// Makes the mirrors of `identity` follow its table: one for each distinct watcher listed
    /// `active` or `pending` outside the enterprise, up to the limit (those already stood in for
    /// first, so that a full table does not trade one for another), none for others.
    private mutating func mirror(_ identity: GatewayConfiguration.LinkedIdentity, now: NIODeadline) -> [Action] {
        var listed: Set<String> = []
        let table = serverWatches.list(of: identity.oma)?.watchers ?? [:]
        for watcher in table.values
        where watcher.status == .active || watcher.status == .pending {
            // An identity is never guessed: a watcher URI that does not parse as a SIP URI is
            // left out and counted (docs/security.md).
            guard let id = WatcherIdentity(uri: watcher.uri, network: .federated), (try? SIPURI(id.uri)) != nil else {
                quotas.refusals.watcherURI += 1
                continue
            }
            guard id.uri != identity.oma, !configuration.isEnterpriseHost(id.domain) else { continue }
            listed.insert(id.uri)
        }
        let present = notifier.standIns[identity.oma] ?? [:]
        var wanted = listed.intersection(present.keys)
        for uri in listed.sorted() where wanted.count < Self.mirroredWatchersLimit { wanted.insert(uri) }
        var out: [Action] = []
        for (uri, key) in present.sorted(by: { $0.key < $1.key }) where !wanted.contains(uri) {
            if let gone = forgetOMAWatch(key) { out += detachOMAWatch(gone, now: now) }
        }
        for uri in wanted.sorted() where present[uri] == nil {
            guard let watcher = WatcherIdentity(uri: uri, network: .federated) else { continue }
            let key = takeKey()
            notifier.standIn(key, OMAWatch(watcher: watcher, resource: identity.enterprise), for: identity.oma)
            out += attach(key, now: now)
        }
        return out
    }

    /// Forgets what the OMA presence server listed for an identity and ends its mirrors.
    mutating func forgetMirroredList(_ identity: String, now: NIODeadline) -> [Action] {
        serverWatches.setList(nil, of: identity)
        var out: [Action] = []
        for key in (notifier.standIns[identity] ?? [:]).values.sorted() {
            if let gone = forgetOMAWatch(key) { out += detachOMAWatch(gone, now: now) }
        }
        return out
    }
}
