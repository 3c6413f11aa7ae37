/// The notifier side of flow 2 and of the served resource lists (RFC 4662): the OMA watchers'
/// presence subscriptions the gateway answers, with what hangs off them — the members' watches
/// of a list, the stand-ins for watchers at the OMA presence server, the watches that asked for
/// rate control (RFC 6446). Its flow logic is in `Core/GatewayCore+OMAWatchers`,
/// `+ResourceLists`, `+RateControl`, `+Filters`, `+PartialNotifications` and `+WatcherMirror`.
///
/// The table is private: a watch is added, replaced and removed through ``subscript(_:)``,
/// ``forget(_:)`` and ``restore(_:_:)``, which keep the list members' count and the stand-in
/// index with it, so no caller has to remember them (removing a watch used to be written three
/// times: on its end, on a takeover and on a restore). Quotas and the dialog index stay the
/// coordinator's.
struct OMAWatcherNotifier: Sendable {
    private var watches = JournaledTable<GatewayCore.OMAWatch>()
    /// Watches that asked for rate control (RFC 6446), by key.
    var rateControlled: [Int: GatewayCore.RateControl] = [:]
    /// How many watches are members' watches of resource lists.
    private(set) var listMemberWatches = 0
    /// The watches standing in for watchers at the OMA presence server, by linked OMA identity
    /// and watcher URI (`GatewayCore+WatcherMirror`).
    private(set) var standIns: [String: [String: Int]] = [:]

    var count: Int { watches.count }
    var keys: [Int] { watches.keys }

    func first(where predicate: ((key: Int, value: GatewayCore.OMAWatch)) throws -> Bool) rethrows
        -> (key: Int, value: GatewayCore.OMAWatch)?
    {
        try watches.first(where: predicate)
    }

    /// A watch by key; setting one adds, replaces or (nil) removes it with what hangs off it.
    subscript(key: Int) -> GatewayCore.OMAWatch? {
        get { watches[key] }
        set {
            let old = watches[key]
            watches[key] = newValue
            reindex(key, from: old, to: newValue)
        }
    }

    @discardableResult
    mutating func removeValue(forKey key: Int) -> GatewayCore.OMAWatch? {
        let old = watches.removeValue(forKey: key)
        reindex(key, from: old, to: nil)
        return old
    }

    /// Removes a watch without a record for the store: another node holds it now.
    mutating func forget(_ key: Int) -> GatewayCore.OMAWatch? {
        let old = watches.forget(key)
        reindex(key, from: old, to: nil)
        return old
    }

    /// Puts a watch back as the store held it.
    mutating func restore(_ key: Int, _ watch: GatewayCore.OMAWatch) {
        let old = watches[key]
        watches.restore(key, watch)
        reindex(key, from: old, to: watch)
    }

    /// Keeps the members' count, the stand-in index and rate control in step with a watch
    /// written (cheap when its role did not change: the relay writes watches back on every
    /// NOTIFY).
    private mutating func reindex(_ key: Int, from old: GatewayCore.OMAWatch?, to new: GatewayCore.OMAWatch?) {
        if (old?.listOwner != nil) != (new?.listOwner != nil) { listMemberWatches += new?.listOwner != nil ? 1 : -1 }
        let (was, now) = (old?.mirrorOf, new?.mirrorOf)
        if was != now || old?.watcher.uri != new?.watcher.uri {
            if let was, let old { standIns[was]?[old.watcher.uri] = nil }
            if let now, let new { standIns[now, default: [:]][new.watcher.uri] = key }
        }
        if new == nil { rateControlled[key] = nil }
    }

    // MARK: Journal

    var journaling: Bool {
        get { watches.journaling }
        set { watches.journaling = newValue }
    }

    var observing: Bool {
        get { watches.observing }
        set { watches.observing = newValue }
    }

    mutating func beginQuiet() { watches.beginQuiet() }
    mutating func endQuiet() { watches.endQuiet() }
    mutating func takeChanged() -> Set<Int> { watches.takeChanged() }
    mutating func takeObserved() -> Set<Int> { watches.takeObserved() }
}
