import Foundation
import GatewayState
import NIOCore
import PresenceDocuments
import SIPStack

/// The `presence.winfo` subscriptions (RFC 3857) of the presentities the gateway decides for, and
/// what each subscriber was last told (RFC 3858): the first NOTIFY and the one after each refresh
/// carry the full list (§4.4), the others a `partial` list of the watchers whose entry changed.
///
/// Its tables are its own: the subscriptions, and the ``WatcherRoster`` the components holding
/// watchers' subscriptions report to. The coordinator (`GatewayCore+WatcherInfo`) admits
/// subscriptions and files the components' reports; the server answers them, works out each
/// presentity's watchers from the roster with the policy the coordinator lends it, and returns
/// the messages, timers and dialogs each step makes (`+Subscriptions`). Each entry changes through ``modify(_:_:)``, which remembers it
/// for the durable store.
struct WatcherInfoServer: Sendable {
    struct Watch: Codable, Sendable {
        /// The watched presentity's address of record.
        var presentity: String
        @DialogState var subscription: NotifierSubscription
        /// The `version` of the last document sent (RFC 3858 §4.2).
        var version: UInt64 = 0
        /// What the subscriber was last told of each watcher still listed, by id.
        @Transient var shown: [String: WatcherInfo.Watcher] = [:]
        /// Who made the dialog: its in-dialog requests must come from there.
        var peer: DialogPeer?
        /// Restored from the store, which does not keep `shown`: the next document is full.
        @Transient var resync = false
    }

    private var watches: [Int: Watch] = [:]
    /// Who watches whom, as the components holding the watchers' subscriptions report it, while
    /// anyone follows watchers (`GatewayCore+WatcherInfo`); of several shards, every shard's
    /// watchers (docs/shards.md).
    private(set) var roster = WatcherRoster()
    /// This shard's reports not yet handed to the other shards (``takeShared()``).
    private var shared: (reset: Bool, updates: [WatcherReport.Update]) = (false, [])
    /// Keys written or removed since the store last took the changes, while journaling.
    private var changed: Set<Int> = []
    private var journalingOn = false

    var isEmpty: Bool { watches.isEmpty }
    var count: Int { watches.count }
    var keys: [Int] { watches.keys.sorted() }
    /// Whether a restored subscription still waits for its full list.
    var resyncing: Bool { watches.values.contains { $0.resync } }

    subscript(key: Int) -> Watch? { watches[key] }

    /// How many subscriptions `presentity` holds.
    func count(of presentity: String) -> Int { watches.values.count { $0.presentity == presentity } }

    /// Changes the watch of `key`, if there is one, and remembers it for the store.
    @discardableResult
    mutating func modify<T>(_ key: Int, _ body: (inout Watch) -> T) -> T? {
        guard let index = watches.index(forKey: key) else { return nil }
        note(key)
        return body(&watches.values[index])
    }

    /// A new subscription, answered: the dialog it opened.
    mutating func add(_ watch: Watch, key: Int) -> DialogChange {
        watches[key] = watch
        note(key)
        return DialogChange(.opened, .winfoWatch(key), watch.subscription.dialog.id, peer: watch.peer)
    }

    /// A subscription ended (its final NOTIFY sent, or its subscriber gone): the dialog it closed.
    mutating func remove(_ key: Int) -> DialogChange? {
        guard let watch = watches.removeValue(forKey: key) else { return nil }
        note(key)
        return DialogChange(.closed, .winfoWatch(key), watch.subscription.dialog.id, peer: watch.peer)
    }

    private mutating func note(_ key: Int) { if journalingOn { changed.insert(key) } }

    // MARK: - The watchers' roster

    /// Files the watchers the components reported; with `share`, they are also kept for the
    /// other shards (``takeShared()``).
    mutating func file(_ updates: [WatcherReport.Update], share: Bool = false) {
        roster.file(updates)
        if share { shared.updates += updates }
    }

    /// Presentity → the ids of its watchers whose report changed since the last call.
    mutating func takeRosterChanges() -> [String: Set<String>] { roster.takeChanged() }

    /// No one follows watchers any more: the roster is let go.
    mutating func forgetRoster() { roster.removeAll() }

    /// Forgets the watchers whose id `matches`: with `share`, this shard's own, which the other
    /// shards forget too (the reports that follow, if any, are the whole of them again).
    mutating func forgetRoster(where matches: (String) -> Bool, share: Bool = false) {
        roster.removeAll(where: matches)
        if share { shared = (true, []) }
    }

    /// What this shard's components reported since the last call, for the other shards: whether
    /// they forget what it reported before (`reset`), and the reports; nil when there is none.
    mutating func takeShared() -> (reset: Bool, updates: [WatcherReport.Update])? {
        guard shared.reset || !shared.updates.isEmpty else { return nil }
        defer { shared = (false, []) }
        return shared
    }

    // MARK: - Documents

    /// A watcher information body: the presence watchers of one presentity (RFC 3858 §5).
    static func document(
        _ presentity: String, version: UInt64, _ state: WatcherInfo.State, _ watchers: [WatcherInfo.Watcher]
    ) -> [UInt8] {
        WatcherInfo(
            version: version, state: state,
            lists: [WatcherInfo.WatcherList(resource: presentity, package: "presence", watchers: watchers)]
        ).serialized()
    }

    /// The full document for `key`'s watch, `watchers` being its presentity's; its version moved
    /// on and what it was shown set to them.
    mutating func fullDocument(_ key: Int, watchers: [WatcherInfo.Watcher]) -> [UInt8]? {
        modify(key) { watch in
            watch.version += 1
            watch.shown = Dictionary(uniqueKeysWithValues: watchers.map { ($0.id, $0) })
            watch.resync = false
            return Self.document(watch.presentity, version: watch.version, .full, watchers)
        }
    }

    /// The `partial` document for `key`'s watch from the current entries of the watchers that
    /// may have changed (`current` nil: no longer listed); nil when none changed for it. A watcher
    /// no longer listed is sent once as `terminated`: `timeout` for one that was active, `giveup`
    /// for one still waiting (RFC 3857 §3.7); one refused before it was ever listed is not news.
    mutating func partialDocument(_ key: Int, candidates: [(id: String, current: WatcherInfo.Watcher?)])
        -> [UInt8]?
    {
        guard var watch = watches[key] else { return nil }
        var entries: [WatcherInfo.Watcher] = []
        for (id, current) in candidates {
            let before = watch.shown[id]
            if current?.status == .terminated, before == nil { continue }
            guard var entry = current ?? before else { continue }
            if current == nil {
                entry.status = .terminated
                entry.event = before?.status == .pending ? .giveup : .timeout
            }
            guard entry != before else { continue }
            entries.append(entry)
            watch.shown[id] = entry.status == .terminated ? nil : entry
        }
        guard !entries.isEmpty else { return nil }
        watch.version += 1
        let body = Self.document(watch.presentity, version: watch.version, .partial, entries.sorted { $0.id < $1.id })
        modify(key) { $0 = watch }
        return body
    }

    /// Every watch's peer after a reload, written only where it moved (each write is a record).
    mutating func carryPeers(_ carried: (DialogPeer?) -> DialogPeer?) {
        for key in keys {
            let peer = carried(watches[key]?.peer)
            if peer != watches[key]?.peer { modify(key) { $0.peer = peer } }
        }
    }
}

extension WatcherInfoServer: DurableComponent {
    var journaling: Bool {
        get { journalingOn }
        set { journalingOn = newValue }
    }

    mutating func takeChangedKeys() -> Set<Int> {
        defer { changed = [] }
        return changed
    }

    func stateChanges(_ keys: Set<Int>, coding: RecordCoding, encoder: JSONEncoder) -> [StateChange] {
        Watch.changes(keys.map(String.init), coding: coding, encoder: encoder) {
            Int($0).flatMap { watches[$0] }
        }
    }

    /// Subscriptions back in their dialogs with their expiry (one that ran out meanwhile ends at
    /// once); each is sent the full list after the restore (``Watch/resync``).
    mutating func restore(_ entries: GatewayCore.StoredEntries, core: GatewayCore, now: NIODeadline)
        -> ComponentOutput
    {
        var output = ComponentOutput()
        for (key, watch) in entries.table(Watch.self).sorted(by: { $0.key < $1.key }) {
            watches[key] = watch
            output.dialogs.append(
                DialogChange(.restored, .winfoWatch(key), watch.subscription.dialog.id, peer: watch.peer))
            output.actions.append(.schedule(.expiry(.winfoWatch(key)), at: watch.subscription.expiresAt))
        }
        return output
    }

    func dialogRecordIDs() -> [StateRecordID] {
        watches.keys.map { StateRecordID(kind: Watch.recordKind.rawValue, key: String($0)) }
    }

    mutating func disown(_ id: StateRecordID) -> ComponentOutput {
        guard id.kind == Watch.recordKind.rawValue, let key = Int(id.key), let watch = watches.removeValue(forKey: key)
        else { return ComponentOutput() }
        return ComponentOutput(
            actions: [.cancel(.expiry(.winfoWatch(key)))],
            dialogs: [DialogChange(.closed, .winfoWatch(key), watch.subscription.dialog.id, peer: watch.peer)])
    }

    func holds(_ context: GatewayCore.Context) -> Bool? {
        guard case .winfoWatch(let key) = context else { return nil }
        return watches[key] != nil
    }
}

/// A watcher information subscription (RFC 3857) as the store keeps it. The list last sent is not
/// kept: a restored one is sent the full list at once, with the next version.
extension WatcherInfoServer.Watch: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .winfoWatch }

    var storedDialog: StoredDialog { StoredDialog(subscription.dialog.id, expiresAt: subscription.expiresAt) }

    /// Read back with this node's Contact toward the OMA side, and sent the full list at once.
    static func restored(from watch: Self, key: String, coding: RecordCoding) -> Self {
        var watch = watch
        if let contact = coding.contact(.oma) { watch.subscription.contact = contact }
        watch.resync = true
        return watch
    }
}
