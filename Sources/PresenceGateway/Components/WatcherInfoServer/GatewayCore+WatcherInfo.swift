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
    func linkedEnterpriseIdentity(of presentity: String) -> String? {
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
            followWatcherInfoSubscribers()
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

    /// Every watcher of `presentity` the gateway knows, ordered by id: the enterprise watchers
    /// that name it and, for a linked identity, the OMA watchers of its enterprise identity.
    func watcherList(of presentity: String) -> [WatcherInfo.Watcher] {
        let roster = watcherInfo.roster
        var list = roster.watchers(of: presentity, from: .enterprise).compactMap { id, report in
            watcherEntry(id, report, of: presentity, before: nil)
        }
        if let identity = linkedEnterpriseIdentity(of: presentity) {
            list += roster.watchers(of: identity, from: .oma).compactMap { id, report in
                watcherEntry(id, report, of: identity, before: nil)
            }
        }
        return list.filter { $0.status != .terminated }.sorted { $0.id < $1.id }
    }

    /// A watcher's entry in the list of `presentity` (nil: it does not name it), as the policy in
    /// force decides it (RFC 3857 §3.7). An enterprise watcher: `pending` while it waits for the
    /// owner, `terminated`/`rejected` when refused or blocked, otherwise `active` (`approved`
    /// when it was pending before). An OMA watcher of a linked identity (flow 2): `pending`
    /// until the enterprise answered it, then `active`.
    func watcherEntry(_ id: String, _ report: WatcherReport, of presentity: String, before: WatcherInfo.Watcher?)
        -> WatcherInfo.Watcher?
    {
        guard let naming = report.named[presentity] else { return nil }
        let status: WatcherInfo.Status
        let event: WatcherInfo.Event
        switch report.source {
        case .oma:
            (status, event) = report.waiting ? (.pending, .subscribe) : (.active, Self.activeEvent(before: before))
        case .enterprise where naming.refused:
            (status, event) = (.terminated, .rejected)
        case .enterprise:
            switch policy(for: naming.resource).subHandling(for: report.watcher) {
            case .block: (status, event) = (.terminated, .rejected)
            case .confirm: (status, event) = (.pending, .subscribe)
            case .allow, .politeBlock: (status, event) = (.active, Self.activeEvent(before: before))
            }
        }
        return WatcherInfo.Watcher(id: id, uri: report.watcher.uri, status: status, event: event)
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
    /// `everyWatch`: a new policy may have moved any watcher without a change to its
    /// subscription, so every one listed is looked at again.
    mutating func watcherInfoChanges(now: NIODeadline, everyWatch: Bool = false) -> [Action] {
        guard !watcherInfo.isEmpty || upnpFollowsWatchers else { return [] }
        fileWatcherReports()
        let changed = watcherInfo.takeRosterChanges()
        guard !changed.isEmpty || everyWatch || watcherInfo.resyncing else { return [] }
        // The UPnP user's watchers (flow 5) are worked out from the same changes.
        var out = upnpWatchersChanged(changed, everyWatch: everyWatch)
        for key in watcherInfo.keys {
            guard let watch = watcherInfo[key], watch.subscription.status == .active else { continue }
            let body =
                watch.resync
                ? watcherInfo.fullDocument(key, watchers: watcherList(of: watch.presentity))
                : watcherInfo.partialDocument(key, candidates: candidates(of: watch, changed, everyWatch: everyWatch))
            guard let body else { continue }
            let actions = watcherInfo.modify(key) { $0.subscription.stateChanged(body: body, now: now) } ?? []
            out += apply(actions, context: .winfoWatch(key), now: now)
        }
        return out
    }

    /// The current entries, in `watch`'s list, of the watchers whose reports changed (every
    /// watcher listed, too, when `everyWatch`): the enterprise watchers of its presentity and,
    /// for a linked identity, the OMA watchers of its enterprise identity.
    private func candidates(of watch: WatcherInfoServer.Watch, _ changed: [String: Set<String>], everyWatch: Bool)
        -> [(id: String, current: WatcherInfo.Watcher?)]
    {
        var named = [(watch.presentity, WatcherReport.Source.enterprise)]
        if let identity = linkedEnterpriseIdentity(of: watch.presentity) { named.append((identity, .oma)) }
        var candidates: [(id: String, current: WatcherInfo.Watcher?)] = []
        for (presentity, source) in named {
            var ids = changed[presentity] ?? []
            if everyWatch {
                ids.formUnion(watch.shown.keys)
                ids.formUnion(watcherInfo.roster.watchers(of: presentity, from: source).map(\.id))
            }
            for id in ids {
                let report = watcherInfo.roster[id].flatMap { $0.source == source ? $0 : nil }
                candidates.append(
                    (id, report.flatMap { watcherEntry(id, $0, of: presentity, before: watch.shown[id]) }))
            }
        }
        return candidates
    }

    /// Files what the watches changed since the last step reported (``WatcherRoster``): the
    /// enterprise watchers, and the OMA watchers who are watchers of their own (not the UPnP
    /// user's contacts, flow 5).
    mutating func fileWatcherReports() {
        var updates = bridge.takeWatcherReports()
        for (key, report) in notifier.takeWatcherReports() {
            let own = upnp.registration(ofWatch: key) == nil
            updates.append(WatcherReport.Update(id: WatcherReport.id(.oma, key: key), report: own ? report : nil))
        }
        watcherInfo.file(updates)
    }

    /// While anyone subscribes to watcher information (or a UPnP user follows their watchers),
    /// the components holding watchers' subscriptions report them to the roster; called
    /// wherever subscriptions come or go, and at start.
    /// `starting`: a first watcher information subscription is about to be answered.
    mutating func followWatcherInfoSubscribers(starting: Bool = false) {
        let following = starting || !watcherInfo.isEmpty || upnpFollowsWatchers
        bridge.followWatchers(following)
        notifier.followWatchers(following)
        if following { fileWatcherReports() } else { watcherInfo.forgetRoster() }
    }
}
