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
    private func linkedEnterpriseIdentity(of presentity: String) -> String? {
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
        let watchers = watcherList(of: presentity)
        let body = WatcherInfoServer.document(presentity, version: 0, .full, watchers)
        let subscription: NotifierSubscription
        let accepted: [NotifierSubscription.Action]
        do {
            (subscription, accepted) = try NotifierSubscription.accept(
                request, terms: terms, status: .active, localTag: ids.tag(),
                contact: contact(.oma, for: peer, fallback: request.uri), body: body, now: now)
        } catch {
            releasePeerQuota(peer)
            return [
                .respond(
                    id,
                    SIPResponse(replyingTo: request, statusCode: 400, reasonPhrase: "\(error.code)", toTag: ids.tag()))
            ]
        }
        let key = takeKey()
        var watch = WatcherInfoServer.Watch(presentity: presentity, subscription: subscription, peer: peer)
        for watcher in watchers { watch.shown[watcher.id] = watcher }
        dialogsChanged([watcherInfo.add(watch, key: key)])
        followWatcherInfoSubscribers()
        return apply(accepted, context: .winfoWatch(key), now: now, id: id)
    }

    /// A refresh or unsubscribe in a winfo dialog: answered, then a NOTIFY with the full list
    /// (RFC 6665 §4.2.1.2; RFC 3858 §4.4: full state whenever the subscriber may have lost track).
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
            let body = watcherInfo.fullDocument(key, watchers: watcherList(of: watch.presentity)) ?? []
            let actions = watcherInfo.modify(key) {
                $0.subscription.refresh(request, terms: terms, body: body, now: now)
            }
            return apply(actions ?? [], context: .winfoWatch(key), now: now, id: id)
        }
    }

    /// Forgets a winfo dialog (its final NOTIFY sent, or its subscriber gone).
    mutating func forgetWinfoWatch(_ key: Int) {
        guard let closed = watcherInfo.remove(key) else { return }
        dialogsChanged([closed])
        followWatcherInfoSubscribers()
    }

    // MARK: - The watcher list

    /// Every watcher of `presentity` the gateway knows, ordered by id.
    func watcherList(of presentity: String) -> [WatcherInfo.Watcher] {
        var list: [WatcherInfo.Watcher] = []
        for key in bridge.watchKeys {
            if let entry = enterpriseWatcher(key, of: presentity, before: nil) { list.append(entry) }
        }
        if let identity = linkedEnterpriseIdentity(of: presentity) {
            for key in notifier.keys {
                if let entry = omaWatcher(key, of: identity, before: nil) { list.append(entry) }
            }
        }
        return list.filter { $0.status != .terminated }.sorted { $0.id < $1.id }
    }

    /// The id of a watcher in the list: stable for its subscription's life (RFC 3858 §5.4).
    static func winfoID(enterprise key: Int) -> String { "e\(key)" }
    static func winfoID(oma key: Int) -> String { "o\(key)" }

    /// An enterprise watch that names `presentity`, as the gateway decided it (RFC 3857 §3.7):
    /// `pending` while it waits for the owner, `terminated`/`rejected` when refused or blocked,
    /// otherwise `active` (`approved` when it was pending before). nil when it does not name it.
    func enterpriseWatcher(_ key: Int, of presentity: String, before: WatcherInfo.Watcher?)
        -> WatcherInfo.Watcher?
    {
        guard let watch = bridge[watch: key] else { return nil }
        var named: String?
        func consider(_ resource: String) {
            if named == nil, WatcherIdentity.addressOfRecord(resource) == presentity { named = resource }
        }
        watch.documentResource.map(consider)
        for resource in watch.legs.keys { consider(resource) }
        for resource in watch.awaiting { consider(resource) }
        for resource in watch.refused { consider(resource) }
        if let subscription = watch.subscription { for resource in subscription.resources.keys { consider(resource) } }
        if let pending = watch.pending {
            for action in pending.batch.actions where action.kind == .subscribe {
                for resource in action.resources { consider(resource.uri) }
            }
        }
        guard let resource = named else { return nil }
        let status: WatcherInfo.Status
        let event: WatcherInfo.Event
        if watch.refused.contains(resource) {
            (status, event) = (.terminated, .rejected)
        } else {
            switch policy(for: resource).subHandling(for: watch.watcher) {
            case .block: (status, event) = (.terminated, .rejected)
            case .confirm: (status, event) = (.pending, .subscribe)
            case .allow, .politeBlock: (status, event) = (.active, Self.activeEvent(before: before))
            }
        }
        return WatcherInfo.Watcher(
            id: Self.winfoID(enterprise: key), uri: watch.watcher.uri, status: status, event: event)
    }

    /// An OMA watcher of the linked enterprise identity (flow 2): `pending` until the enterprise
    /// answered it, then `active`.
    private func omaWatcher(_ key: Int, of identity: String, before: WatcherInfo.Watcher?) -> WatcherInfo.Watcher? {
        guard let watch = notifier[key], isWatchersOwn(key, watch),
            WatcherIdentity.addressOfRecord(watch.resource) == identity
        else { return nil }
        let active = watch.pending == nil
        return WatcherInfo.Watcher(
            id: Self.winfoID(oma: key), uri: watch.watcher.uri, status: active ? .active : .pending,
            event: active ? Self.activeEvent(before: before) : .subscribe)
    }

    private static func activeEvent(before: WatcherInfo.Watcher?) -> WatcherInfo.Event {
        guard let before else { return .subscribe }
        return before.status == .pending ? .approved : before.event
    }

    // MARK: - Changes

    /// `actions`, followed by the watcher information a step's changes call for: nothing at all
    /// to do (the actions untouched) while no one subscribes to it.
    mutating func withWatcherInfo(_ actions: [Action], now: NIODeadline) -> [Action] {
        guard !watcherInfo.isEmpty || upnpFollowsWatchers else { return actions }
        var out = actions
        out += watcherInfoChanges(now: now)
        return out
    }

    /// After a step of the core: a `partial` NOTIFY to each winfo subscriber whose list changed,
    /// holding each watcher whose entry changed. A watcher no longer listed is sent once as
    /// `terminated`: `timeout` for one that was active (expired or ended by its subscriber),
    /// `giveup` for one still waiting (RFC 3857 §3.7). A restored subscription gets the full list.
    /// `everyWatch`: a new policy may have moved any watcher without a write to its watch, so
    /// every one is looked at again.
    mutating func watcherInfoChanges(now: NIODeadline, everyWatch: Bool = false) -> [Action] {
        guard !watcherInfo.isEmpty || upnpFollowsWatchers else { return [] }
        var enterpriseKeys = bridge.takeObservedWatches()
        var omaKeys = notifier.takeObserved()
        if everyWatch {
            enterpriseKeys.formUnion(bridge.watchKeys)
            omaKeys.formUnion(notifier.keys)
        }
        guard !enterpriseKeys.isEmpty || !omaKeys.isEmpty || watcherInfo.resyncing else { return [] }
        // The UPnP user's watchers (flow 5) are worked out from the same changes.
        var out = upnpWatchersChanged(enterprise: enterpriseKeys, everyWatch: everyWatch)
        for key in watcherInfo.keys {
            guard let watch = watcherInfo[key], watch.subscription.status == .active else { continue }
            let body =
                watch.resync
                ? watcherInfo.fullDocument(key, watchers: watcherList(of: watch.presentity))
                : watcherInfo.partialDocument(
                    key, candidates: candidates(of: watch, enterprise: enterpriseKeys, oma: omaKeys))
            guard let body else { continue }
            let actions = watcherInfo.modify(key) { $0.subscription.stateChanged(body: body, now: now) } ?? []
            out += apply(actions, context: .winfoWatch(key), now: now)
        }
        return out
    }

    /// The current entries, in `watch`'s list, of the watches whose keys are given: each
    /// enterprise watch and, for a linked identity, each OMA watch of its enterprise identity.
    private func candidates(of watch: WatcherInfoServer.Watch, enterprise: Set<Int>, oma: Set<Int>)
        -> [(id: String, current: WatcherInfo.Watcher?)]
    {
        var candidates: [(id: String, current: WatcherInfo.Watcher?)] = enterprise.map { key in
            let id = Self.winfoID(enterprise: key)
            return (id, enterpriseWatcher(key, of: watch.presentity, before: watch.shown[id]))
        }
        if let identity = linkedEnterpriseIdentity(of: watch.presentity) {
            candidates += oma.map { key in
                let id = Self.winfoID(oma: key)
                return (id, omaWatcher(key, of: identity, before: watch.shown[id]))
            }
        }
        return candidates
    }

    /// While anyone subscribes to watcher information (or a UPnP user follows their watchers),
    /// the watches' tables report what they change (``JournaledTable/takeObserved()``); called
    /// wherever subscriptions come or go, and at start.
    mutating func followWatcherInfoSubscribers() {
        let following = !watcherInfo.isEmpty || upnpFollowsWatchers
        bridge.observeWatches(following)
        notifier.observing = following
    }
}
