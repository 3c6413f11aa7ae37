import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// What the coordinator lends the watcher information server for one step: how the policy in
/// force handles a watcher of a resource (RFC 5025 §3.2.1), and which enterprise identity's OMA
/// watchers a linked identity's list holds too (flow 2).
struct WatcherPolicy {
    var handling: (_ resource: String, _ watcher: WatcherIdentity) -> SubHandling
    var linkedIdentity: (_ presentity: String) -> String?
}

/// The subscriptions' life (RFC 3857, RFC 3858): each step returns what the coordinator applies,
/// the messages and timers and the dialog opened or closed (``ComponentOutput``).
extension WatcherInfoServer {
    // MARK: - The lists

    /// Every watcher of `presentity` in the roster, ordered by id: the enterprise watchers that
    /// name it and, for a linked identity, the OMA watchers of its enterprise identity.
    func list(of presentity: String, _ policy: WatcherPolicy) -> [WatcherInfo.Watcher] {
        var list = roster.watchers(of: presentity, from: .enterprise).compactMap { id, report in
            Self.entry(id, report, of: presentity, before: nil, policy)
        }
        if let identity = policy.linkedIdentity(presentity) {
            list += roster.watchers(of: identity, from: .oma).compactMap { id, report in
                Self.entry(id, report, of: identity, before: nil, policy)
            }
        }
        return list.filter { $0.status != .terminated }.sorted { $0.id < $1.id }
    }

    /// A watcher's entry in the list of `presentity` (nil: it does not name it), as the policy in
    /// force decides it (RFC 3857 §3.7). An enterprise watcher: `pending` while it waits for the
    /// owner, `terminated`/`rejected` when refused or blocked, otherwise `active` (`approved`
    /// when it was pending before). An OMA watcher of a linked identity (flow 2): `pending`
    /// until the enterprise answered it, then `active`.
    static func entry(
        _ id: String, _ report: WatcherReport, of presentity: String, before: WatcherInfo.Watcher?,
        _ policy: WatcherPolicy
    ) -> WatcherInfo.Watcher? {
        guard let naming = report.named[presentity] else { return nil }
        let status: WatcherInfo.Status
        let event: WatcherInfo.Event
        switch report.source {
        case .oma:
            (status, event) = report.waiting ? (.pending, .subscribe) : (.active, activeEvent(before: before))
        case .enterprise where naming.refused:
            (status, event) = (.terminated, .rejected)
        case .enterprise:
            switch policy.handling(naming.resource, report.watcher) {
            case .block: (status, event) = (.terminated, .rejected)
            case .confirm: (status, event) = (.pending, .subscribe)
            case .allow, .politeBlock: (status, event) = (.active, activeEvent(before: before))
            }
        }
        return WatcherInfo.Watcher(id: id, uri: report.watcher.uri, status: status, event: event)
    }

    private static func activeEvent(before: WatcherInfo.Watcher?) -> WatcherInfo.Event {
        guard let before else { return .subscribe }
        return before.status == .pending ? .approved : before.event
    }

    // MARK: - Subscriptions

    /// A SUBSCRIBE the coordinator admitted for `presentity`: answered, and sent the full list
    /// (RFC 3858 §4.4). Throws when its request does not make a dialog (the caller answers 400).
    mutating func subscribe(
        _ request: SIPRequest, id: GatewayCore.ServerRequestID, presentity: String, terms: SubscriptionTerms,
        tag: String, contact: SIPAddress, peer: DialogPeer?, key: Int, policy: WatcherPolicy, now: NIODeadline
    ) throws(SIPStackError) -> ComponentOutput {
        let watchers = list(of: presentity, policy)
        let (subscription, accepted) = try NotifierSubscription.accept(
            request, terms: terms, status: .active, localTag: tag, contact: contact,
            body: Self.document(presentity, version: 0, .full, watchers), now: now)
        var watch = Watch(presentity: presentity, subscription: subscription, peer: peer)
        for watcher in watchers { watch.shown[watcher.id] = watcher }
        var out = ComponentOutput(dialogs: [add(watch, key: key)])
        out.add(output(accepted, key: key, id: id))
        return out
    }

    /// A refresh or unsubscribe in the dialog of `key`, its terms accepted: answered, then a
    /// NOTIFY with the full list (RFC 6665 §4.2.1.2; RFC 3858 §4.4: full state whenever the
    /// subscriber may have lost track).
    mutating func refresh(
        _ key: Int, _ request: SIPRequest, id: GatewayCore.ServerRequestID, terms: SubscriptionTerms,
        policy: WatcherPolicy, now: NIODeadline
    ) -> ComponentOutput {
        guard let presentity = self[key]?.presentity else { return ComponentOutput() }
        let body = fullDocument(key, watchers: list(of: presentity, policy)) ?? []
        let actions = modify(key) { $0.subscription.refresh(request, terms: terms, body: body, now: now) } ?? []
        return output(actions, key: key, id: id)
    }

    /// A NOTIFY of `key` failed with `status` (RFC 6665 §4.2.2: the subscription may end).
    mutating func notifyFailed(_ key: Int, status: Int) -> ComponentOutput {
        output(modify(key) { $0.subscription.notifyFailed(status: status) } ?? [], key: key)
    }

    /// The expiry timer of `key`.
    mutating func expire(_ key: Int, now: NIODeadline) -> ComponentOutput {
        output(modify(key) { $0.subscription.expire(now: now) } ?? [], key: key)
    }

    /// Ends the subscription of `key` with a final NOTIFY (`terminated;reason=…`).
    mutating func terminate(_ key: Int, reason: String, now: NIODeadline) -> ComponentOutput {
        output(modify(key) { $0.subscription.terminate(reason: reason, now: now) } ?? [], key: key)
    }

    /// After a step of the core: a `partial` NOTIFY to each subscriber whose list changed,
    /// holding each watcher whose entry changed (`changed`: presentity → the ids of its watchers
    /// whose reports changed). A watcher no longer listed is sent once as `terminated`:
    /// `timeout` for one that was active (expired or ended by its subscriber), `giveup` for one
    /// still waiting (RFC 3857 §3.7). A restored subscription gets the full list. `everyWatch`:
    /// a new policy may have moved any watcher without a change to its subscription, so every
    /// one listed is looked at again.
    mutating func changes(
        _ changed: [String: Set<String>], everyWatch: Bool, policy: WatcherPolicy, now: NIODeadline
    ) -> ComponentOutput {
        var out = ComponentOutput()
        for key in keys {
            guard let watch = self[key], watch.subscription.status == .active else { continue }
            let body =
                watch.resync
                ? fullDocument(key, watchers: list(of: watch.presentity, policy))
                : partialDocument(key, candidates: candidates(of: watch, changed, everyWatch: everyWatch, policy))
            guard let body else { continue }
            out.add(output(modify(key) { $0.subscription.stateChanged(body: body, now: now) } ?? [], key: key))
        }
        return out
    }

    /// The current entries, in `watch`'s list, of the watchers whose reports changed (every
    /// watcher listed, too, when `everyWatch`).
    private func candidates(
        of watch: Watch, _ changed: [String: Set<String>], everyWatch: Bool, _ policy: WatcherPolicy
    ) -> [(id: String, current: WatcherInfo.Watcher?)] {
        var named = [(watch.presentity, WatcherReport.Source.enterprise)]
        if let identity = policy.linkedIdentity(watch.presentity) { named.append((identity, .oma)) }
        var candidates: [(id: String, current: WatcherInfo.Watcher?)] = []
        for (presentity, source) in named {
            var ids = changed[presentity] ?? []
            if everyWatch {
                ids.formUnion(watch.shown.keys)
                ids.formUnion(roster.watchers(of: presentity, from: source).map(\.id))
            }
            for id in ids {
                let report = roster[id].flatMap { $0.source == source ? $0 : nil }
                let current = report.flatMap { Self.entry(id, $0, of: presentity, before: watch.shown[id], policy) }
                candidates.append((id, current))
            }
        }
        return candidates
    }

    /// A subscription's actions as the core's: the answer to request `id`, its NOTIFYs toward
    /// the OMA side, its expiry timer; when it is over, its timer cancelled and its entry
    /// removed, its dialog closed.
    private mutating func output(
        _ actions: [NotifierSubscription.Action], key: Int, id: GatewayCore.ServerRequestID? = nil
    ) -> ComponentOutput {
        let (taken, removed) = GatewayCore.notifierActions(actions, context: .winfoWatch(key), to: .oma, id: id)
        var out = ComponentOutput(actions: taken)
        if removed, let closed = remove(key) { out.dialogs.append(closed) }
        return out
    }
}
