/// One watcher as the component holding its subscription reports it (``WatcherRoster``): who
/// watches, and which presentities the subscription names. Watcher information (RFC 3857) and
/// the UPnP user's `Watcher` variable (flow 5) are worked out from these reports, not from the
/// flows' tables; how each watcher stands (`pending`, `active`, refused) is decided when a list
/// is written, by the policy then in force.
struct WatcherReport: Equatable, Sendable {
    /// Which flow holds the subscription: an enterprise watcher of OMA presentities (flow 1), or
    /// an OMA watcher of an enterprise identity (flow 2).
    enum Source: Equatable, Sendable {
        case enterprise
        case oma
    }

    /// How the subscription names one presentity: the resource URI as it was named, and whether
    /// the gateway refused it (outside the OMA domains, or past a quota).
    struct Naming: Equatable, Sendable {
        var resource: String
        var refused = false
    }

    /// One report: the subscription's entry as it stands, or nil when it is gone (or is not a
    /// watcher's own, as a linked identity's watch is not).
    struct Update: Sendable {
        var id: String
        var report: WatcherReport?
    }

    var source: Source
    var watcher: WatcherIdentity
    /// Each presentity named, by address of record.
    var named: [String: Naming]
    /// An OMA watcher whose enterprise subscription has not been answered yet.
    var waiting = false

    /// The id of a watcher in a list: stable for its subscription's life (RFC 3858 §5.4).
    static func id(_ source: Source, key: Int) -> String {
        switch source {
        case .enterprise: "e\(key)"
        case .oma: "o\(key)"
        }
    }
}

/// The watchers the components reported (``WatcherReport``), by id and by the presentities they
/// name, with the presentities whose watchers changed since the changes were last taken.
struct WatcherRoster: Sendable {
    private var reports: [String: WatcherReport] = [:]
    private var byPresentity: [String: Set<String>] = [:]
    /// Presentity → the ids of its watchers whose report changed, until ``takeChanged()``.
    private var changed: [String: Set<String>] = [:]

    /// The watchers that name `presentity`, from `source`, by id.
    func watchers(of presentity: String, from source: WatcherReport.Source) -> [(id: String, report: WatcherReport)] {
        (byPresentity[presentity] ?? []).compactMap { id in
            reports[id].flatMap { $0.source == source ? (id, $0) : nil }
        }
    }

    /// The report filed under `id`.
    subscript(id: String) -> WatcherReport? { reports[id] }

    /// Files what a component reported; a report the same as the one filed changes nothing.
    mutating func file(_ updates: [WatcherReport.Update]) {
        for update in updates {
            let before = reports[update.id]
            guard before != update.report else { continue }
            for presentity in before.map({ Array($0.named.keys) }) ?? [] {
                byPresentity[presentity]?.remove(update.id)
                if byPresentity[presentity]?.isEmpty == true { byPresentity[presentity] = nil }
                changed[presentity, default: []].insert(update.id)
            }
            reports[update.id] = update.report
            for presentity in update.report.map({ Array($0.named.keys) }) ?? [] {
                byPresentity[presentity, default: []].insert(update.id)
                changed[presentity, default: []].insert(update.id)
            }
        }
    }

    /// Presentity → the ids of its watchers whose report changed since the last call.
    mutating func takeChanged() -> [String: Set<String>] {
        defer { changed = [:] }
        return changed
    }

    /// Forgets every report: no one follows watchers any more.
    mutating func removeAll() {
        reports = [:]
        byPresentity = [:]
        changed = [:]
    }

    /// Forgets the reports whose id `matches` (one shard's, docs/shards.md): their watchers
    /// count as changed, as if each had been reported gone.
    mutating func removeAll(where matches: (String) -> Bool) {
        file(reports.keys.filter(matches).map { WatcherReport.Update(id: $0, report: nil) })
    }
}

/// What a component holding watchers' subscriptions owes the ``WatcherRoster``: the keys of the
/// watches it wrote, opened or removed since it last reported, while anyone follows watchers
/// (a watcher information subscription, or a UPnP user, exists). Nothing is kept otherwise.
struct WatcherReporting: Sendable {
    private(set) var following = false
    private var due: Set<Int> = []

    /// Watch `key` was written, opened or removed.
    mutating func changed(_ key: Int) {
        if following { due.insert(key) }
    }

    /// Starts or stops following; started, every key of `keys` is due, so that the roster
    /// learns of every watch that exists.
    mutating func follow(_ on: Bool, keys: @autoclosure () -> [Int]) {
        if on, !following { due = Set(keys()) }
        if !on { due = [] }
        following = on
    }

    /// The keys due since the last call.
    mutating func take() -> Set<Int> {
        defer { due = [] }
        return due
    }
}
