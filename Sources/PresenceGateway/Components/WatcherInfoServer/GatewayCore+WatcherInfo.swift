import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// Watcher information (RFC 3857, RFC 3858) for the presentities the gateway decides for: the
/// OMA presentities with policy of their own (`presentities`) and the linked identities it is the
/// presence server of. Their owner subscribes to `presence.winfo` from the OMA side and learns who
/// watches, and how far each watcher got: a watcher waiting for the owner (`confirm`, RFC 5025
/// §3.2.1) shows `pending` until a new policy decides it (docs/flows.md, "Watcher information").
///
/// The watchers listed are the enterprise watchers that name the presentity (flow 1) and, for a
/// linked identity, the OMA watchers of its enterprise identity (flow 2). The first NOTIFY and
/// the one after each refresh carry the full list (RFC 3858 §4.4); between them a `partial` one
/// carries each watcher whose status changed, one that left as `terminated`.
///
/// This is the coordinator's part: who may subscribe and the quotas, the reports of the
/// components holding watchers' subscriptions filed in the roster (``WatcherRoster``), and the
/// policy lent to the server (``WatcherPolicy``). The subscriptions, lists and documents are the
/// ``WatcherInfoServer``'s (`WatcherInfoServer+Subscriptions`).
extension GatewayCore {
    /// Watcher information subscriptions, for metrics.
    public var winfoWatchCount: Int { watcherInfo.count }

    /// The `presence.winfo` package (RFC 3857 §5): `application/watcherinfo+xml` only (RFC 3858),
    /// with the presence package's durations.
    static func watcherInfoPackage(_ configuration: GatewayConfiguration) -> SIPEventPackage {
        SIPEventPackage(
            name: "presence.winfo", bodyTypes: [SIPBodyType.watcherInfo], defaultBodyType: SIPBodyType.watcherInfo,
            defaultExpires: configuration.subscriptions.defaultExpires,
            minimumExpires: configuration.subscriptions.minimumExpires,
            maximumExpires: configuration.subscriptions.maximumExpires)
    }

    /// Whether `request` is a SUBSCRIBE for watcher information (its Event package ends in `.winfo`).
    static func isWatcherInfo(_ request: SIPRequest) -> Bool {
        guard request.method == .subscribe, let event = try? request.headers.event else { return false }
        return event.package.lowercased().hasSuffix(".winfo")
    }

    /// The linked enterprise identity whose OMA watchers are listed for `presentity`, when the
    /// gateway is the presentity's presence server (flow 4).
    static func linkedEnterpriseIdentity(of presentity: String, in configuration: GatewayConfiguration) -> String? {
        configuration.linkedIdentities.first { $0.publishToEnterprise && $0.oma == presentity }?.enterprise
    }

    // MARK: - Subscriptions

    /// The most `presence.winfo` subscriptions one presentity may hold: each change of its
    /// watchers is sent to every one of them.
    public static let watcherInfoPerPresentity = 16

    /// A `presence.winfo` SUBSCRIBE from the OMA side. Only the presentity itself may see its
    /// watchers (RFC 3857 §5.1.6): another subscriber gets 403; a presentity the gateway does not
    /// decide for gets 404; the terms are checked as for presence (489, 423, 406, 400).
    mutating func newWinfoWatch(
        _ request: SIPRequest, id: ServerRequestID, subscriber: WatcherIdentity, peer: DialogPeer?,
        now: NIODeadline
    ) -> [Action] {
        let terms: SubscriptionTerms
        switch SubscriptionTerms.evaluate(request, registry: registry) {
        case .accept(let t): terms = t
        case .reject(let status, let reason, let headers):
            return refuseTerms(request, id: id, status, reason, headers, initial: true)
        }
        guard let presentity = WatcherIdentity.addressOfRecord(request.uri.description),
            configuration.servesWatcherInfo(of: presentity)
        else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 404, toTag: ids.tag()))]
        }
        guard subscriber.uri == presentity else {
            return [
                .respond(
                    id,
                    SIPResponse(
                        replyingTo: request, statusCode: 403, reasonPhrase: "Not The Presentity", toTag: ids.tag()))
            ]
        }
        // Every change of a presentity's watchers is a NOTIFY to each of its winfo subscribers: a
        // presentity has a few devices, not thousands (docs/security.md, "Watcher information").
        guard watcherInfo.count(of: presentity) < Self.watcherInfoPerPresentity else {
            quotas.refusals.winfoPerPresentity += 1
            return overQuota(request, id: id)
        }
        guard takePeerQuota(peer) else { return overQuota(request, id: id) }
        followWatcherInfoSubscribers(starting: true)
        do {
            let output = try watcherInfo.subscribe(
                request, id: id, presentity: presentity, terms: terms, tag: ids.tag(),
                contact: contact(.oma, for: peer, fallback: request.uri), peer: peer, key: takeKey(),
                policy: watcherPolicy, now: now)
            return applyWatcherInfo(output)
        } catch {
            releasePeerQuota(peer)
            followWatcherInfoSubscribers()
            return [
                .respond(
                    id,
                    SIPResponse(replyingTo: request, statusCode: 400, reasonPhrase: "\(error.code)", toTag: ids.tag()))
            ]
        }
    }

    /// A refresh or unsubscribe in a winfo dialog, its terms checked as for presence.
    mutating func refreshWinfoWatch(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline)
        -> [Action]
    {
        guard let watch = watcherInfo[key] else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
        switch SubscriptionTerms.evaluate(request, registry: registry, negotiated: watch.subscription.terms.bodyType) {
        case .reject(let status, let reason, let headers):
            return refuseTerms(request, id: id, status, reason, headers, initial: false)
        case .accept(let terms):
            return applyWatcherInfo(
                watcherInfo.refresh(key, request, id: id, terms: terms, policy: watcherPolicy, now: now))
        }
    }

    /// What a step of the watcher information server returned, applied; a subscription that
    /// ended may leave no one following watchers.
    mutating func applyWatcherInfo(_ output: ComponentOutput) -> [Action] {
        let actions = apply(output)
        if output.dialogs.contains(where: { $0.kind == .closed }) { followWatcherInfoSubscribers() }
        return actions
    }

    // MARK: - The watcher list

    /// How the policy in force decides each watcher, lent to the watcher information server:
    /// values of the coordinator's, not the coordinator itself, so that the server may change
    /// while it reads them.
    var watcherPolicy: WatcherPolicy {
        let configuration = configuration
        let spheres = bridge.spheres
        let decisions = upnp
        return WatcherPolicy(
            handling: { resource, watcher in
                Self.policy(for: resource, in: configuration, spheres: spheres, decisions: decisions)
                    .subHandling(for: watcher)
            },
            linkedIdentity: { Self.linkedEnterpriseIdentity(of: $0, in: configuration) })
    }

    // MARK: - Changes

    /// `actions`, followed by the watcher information a step's changes call for: nothing at all
    /// to do (the actions untouched) while no one subscribes to it.
    mutating func withWatcherInfo(_ actions: [Action], now: NIODeadline) -> [Action] {
        guard !watcherInfo.isEmpty || upnpFollowsWatchers || sharesWatchers else { return actions }
        var out = actions
        out += watcherInfoChanges(now: now)
        return out
    }

    /// After a step of the core: the watches' reports filed, and the watcher information and
    /// the UPnP user's watchers that changed with them sent
    /// (``WatcherInfoServer/changes(_:everyWatch:policy:now:)``). `everyWatch`: a new policy may
    /// have moved any watcher without a change to its subscription.
    mutating func watcherInfoChanges(now: NIODeadline, everyWatch: Bool = false) -> [Action] {
        guard !watcherInfo.isEmpty || upnpFollowsWatchers || sharesWatchers else { return [] }
        fileWatcherReports()
        let changed = watcherInfo.takeRosterChanges()
        guard !changed.isEmpty || everyWatch || watcherInfo.resyncing else { return [] }
        // The UPnP user's watchers (flow 5) are worked out from the same changes.
        return upnpWatchersChanged(changed, everyWatch: everyWatch)
            + applyWatcherInfo(watcherInfo.changes(changed, everyWatch: everyWatch, policy: watcherPolicy, now: now))
    }

    /// Files what the watches changed since the last step reported (``WatcherRoster``): the
    /// enterprise watchers, and the OMA watchers who are watchers of their own (not the UPnP
    /// user's contacts, flow 5). Only the presentities whose watchers anyone may be shown are
    /// kept of each report (``listsWatchers(of:)``), so the roster holds a few watchers, not
    /// every watcher of the gateway.
    mutating func fileWatcherReports() {
        var updates = bridge.takeWatcherReports()
        for (key, report) in notifier.takeWatcherReports() {
            let own = upnp.registration(ofWatch: key) == nil
            updates.append(WatcherReport.Update(id: WatcherReport.id(.oma, key: key), report: own ? report : nil))
        }
        let listed = updates.map { update in
            guard var report = update.report else { return update }
            report.named = report.named.filter { listsWatchers(of: $0.key) }
            return WatcherReport.Update(id: update.id, report: report.named.isEmpty ? nil : report)
        }
        watcherInfo.file(listed, share: sharesWatchers)
    }

    /// Whether anyone may be shown the watchers of `presentity` (an address of record): a
    /// presentity the gateway serves watcher information for, the enterprise identity whose OMA
    /// watchers a linked identity's list holds, or the UPnP user (flow 5).
    func listsWatchers(of presentity: String) -> Bool {
        configuration.servesWatcherInfo(of: presentity) || presentity == configuration.upnp?.user
            || configuration.linkedIdentities.contains { $0.publishToEnterprise && $0.enterprise == presentity }
    }

    /// After a new configuration: which presentities' watchers are listed may have changed, so
    /// the roster is made again from every watch.
    mutating func refileWatchers() {
        bridge.followWatchers(false)
        notifier.followWatchers(false)
        if settings.shardCount > 1 {
            // This shard's own watchers only: the other shards' are theirs to report.
            forgetWatchers(heldBy: settings.shard, share: true)
        } else {
            watcherInfo.forgetRoster()
        }
        followWatcherInfoSubscribers()
    }

    /// While anyone subscribes to watcher information (or a UPnP user follows their watchers),
    /// the components holding watchers' subscriptions report them to the roster; called
    /// wherever subscriptions come or go, and at start.
    /// `starting`: a first watcher information subscription is about to be answered.
    mutating func followWatcherInfoSubscribers(starting: Bool = false) {
        let following = starting || !watcherInfo.isEmpty || upnpFollowsWatchers || sharesWatchers
        bridge.followWatchers(following)
        notifier.followWatchers(following)
        if following { fileWatcherReports() } else { watcherInfo.forgetRoster() }
    }

    // MARK: - Several shards

    /// Whether this shard's watchers are reported to the other shards, and theirs to it
    /// (docs/shards.md, "Across shards"): with several shards, while anyone may be shown
    /// watchers. A presentity's watchers are spread over the shards by their own addresses of
    /// record; every shard's roster holds them all, so that the shard of a watcher information
    /// subscription (or of the UPnP user) lists every one.
    var sharesWatchers: Bool {
        settings.shardCount > 1 && (configuration.servesAnyWatcherInfo || upnpFollowsWatchers)
    }

    /// The shard of `count` holding the watch a roster id names (``WatcherReport/id(_:key:)``):
    /// the one its key says, as the restore places it.
    static func shard(ofWatcher id: String, of count: Int) -> Int {
        guard let key = Int(id.dropFirst()) else { return 0 }
        return IdentifierSource.shard(ofKey: key) % count
    }

    /// What this shard's watches reported since the last call, for the other shards
    /// (``receiveWatcherReports(_:reset:fromShard:now:)``); nil when nothing.
    mutating func takeWatcherReportsForOtherShards() -> (reset: Bool, updates: [WatcherReport.Update])? {
        watcherInfo.takeShared()
    }

    /// Another shard's watchers as its watches reported them (after forgetting what it reported
    /// before, with `reset`): filed in the roster, and the watcher information that changes
    /// with them sent.
    mutating func receiveWatcherReports(
        _ updates: [WatcherReport.Update], reset: Bool, fromShard shard: Int, now: NIODeadline
    ) -> [Action] {
        if reset { forgetWatchers(heldBy: shard, share: false) }
        watcherInfo.file(updates)
        return watcherInfoChanges(now: now)
    }

    /// Forgets the roster's watchers whose watches `shard` holds (with `share`, this shard's
    /// own, which the other shards are told to forget too).
    private mutating func forgetWatchers(heldBy shard: Int, share: Bool) {
        let count = settings.shardCount
        watcherInfo.forgetRoster(where: { Self.shard(ofWatcher: $0, of: count) == shard }, share: share)
    }
}
