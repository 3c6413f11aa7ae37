import Foundation
import GatewayState
import MSPresenceEvents
import NIOCore
import SIPStack

/// The enterprise side of flows 2 and 3: where the gateway subscribes for an OMA watcher's
/// enterprise resources. This first part keeps what the enterprise told about that (flow 3,
/// [MS-PRES] §3.4.5.1.3.1): the pool each resource's `resubscribe` pointed at (`poolFqdn`), and
/// whether a batched SUBSCRIBE from a federated watcher was refused, after which single ones are
/// used (§3.4.5.1.1: batch is for users of the deployment), and the legs themselves: the
/// category subscriptions the gateway keeps toward the enterprise for OMA watchers. Its consumers
/// attach and detach through `EnterpriseLegPool+Consumers`; a leg takes its dialog's messages
/// and reports what its consumers are to be told (`+Notifications`), and what the enterprise
/// says of a resource's pool decides what becomes of its consumer (`+Redirects`). The
/// coordinator hands each report and decision to the consumer (`GatewayCore+OMAWatchers`,
/// `GatewayCore+PoolRedirects`).
struct EnterpriseLegPool: Sendable {
    /// The legs, by key (a ``JournaledTable``: it remembers what changed for the durable store).
    /// Read through ``subscript(_:)``; written only here: a leg is opened, changed in place
    /// (``modify(_:_:)``) and removed, so no caller holds a copy that a write back would make stale.
    private var legs = JournaledTable<GatewayCore.EnterpriseLeg>()
    /// Enterprise resource → the pool GRUU a batch response told to resubscribe to.
    private var pools: [String: String] = [:]
    /// The enterprise refused a batched category SUBSCRIBE from a federated watcher once.
    private(set) var batchRefused = false
    /// What changed since the store last took the changes, while journaling.
    private var changes = ChangedKeys()
    private var journalingOn = false

    struct ChangedKeys: ChangedKeySet {
        var legs: Set<Int> = []
        var pools: Set<String> = []
        var batchRefused = false

        var isEmpty: Bool { legs.isEmpty && pools.isEmpty && !batchRefused }
    }

    /// Leg `key`.
    subscript(key: Int) -> GatewayCore.EnterpriseLeg? { legs[key] }
    var keys: [Int] { legs.keys }
    var count: Int { legs.count }

    func pool(of resource: String) -> String? { pools[resource] }

    /// The pool `resource` is to be subscribed to from now on (nil: none, a dialog of its own).
    mutating func setPool(_ pool: String?, of resource: String) {
        guard pools[resource] != pool else { return }
        pools[resource] = pool
        if journalingOn { changes.pools.insert(resource) }
    }

    /// A batched SUBSCRIBE was refused: single ones from now on.
    mutating func refuseBatches() {
        guard !batchRefused else { return }
        batchRefused = true
        if journalingOn { changes.batchRefused = true }
    }

    // MARK: - Legs

    /// The open leg of `watcher` toward `pool` that does not carry `resource` yet: a leg serves
    /// one OMA watch per resource.
    func joinable(watcher: String, pool: String, resource: String) -> Int? {
        legs.first {
            $0.value.pool == pool && $0.value.watcher == watcher && !$0.value.closing
                && $0.value.watches[resource] == nil
        }?.key
    }

    /// Opens leg `key` (its first SUBSCRIBE made by the caller, who indexes its dialog).
    mutating func open(_ key: Int, _ leg: GatewayCore.EnterpriseLeg) { legs[key] = leg }

    /// Changes leg `key` in place; nil when there is none.
    @discardableResult
    mutating func modify<R>(_ key: Int, _ body: (inout GatewayCore.EnterpriseLeg) -> R) -> R? {
        legs.modify(key, body)
    }

    /// Removes leg `key` (the caller removes its dialog from the index).
    @discardableResult
    mutating func remove(_ key: Int) -> GatewayCore.EnterpriseLeg? { legs.removeValue(forKey: key) }

    // MARK: - The table's journal, for the coordinator (docs/architecture.md, "Persistence")

}

extension EnterpriseLegPool: DurableComponent {
    var journaling: Bool {
        get { journalingOn }
        set {
            journalingOn = newValue
            legs.journaling = newValue
        }
    }

    mutating func takeChangedKeys() -> ChangedKeys {
        defer { changes = ChangedKeys() }
        changes.legs = legs.takeChanged()
        return changes
    }

    mutating func beginQuiet() { legs.beginQuiet() }
    mutating func endQuiet() { legs.endQuiet() }

    func stateChanges(_ keys: ChangedKeys, coding: RecordCoding, encoder: JSONEncoder)
        -> [StateChange]
    {
        GatewayCore.EnterpriseLeg.changes(keys.legs.map(String.init), coding: coding, encoder: encoder) {
            Int($0).flatMap { legs[$0] }
        }
            + PoolHint.changes(keys.pools, coding: coding, encoder: encoder) { pools[$0].map(PoolHint.init) }
            + BatchRefusal.changes(
                keys.batchRefused ? [BatchRefusal.key] : [], coding: coding, encoder: encoder
            ) { _ in BatchRefusal(value: batchRefused) }
    }

    /// The legs back in their table, found by their dialogs again, and what the enterprise said
    /// of pools. What each leg does next (a refresh, an unsubscribe again) is the coordinator's
    /// (`GatewayCore+Restore`), once the watches they serve are back.
    mutating func restore(_ entries: GatewayCore.StoredEntries, core: GatewayCore, now: NIODeadline)
        -> ComponentOutput
    {
        var out = ComponentOutput()
        for (key, leg) in entries.table(GatewayCore.EnterpriseLeg.self) {
            legs.restore(key, leg)
            out.dialog(.restored, .enterpriseLeg(key), leg.storedDialog.dialogKey)
        }
        for (resource, hint) in entries.entries(PoolHint.self) { pools[resource] = hint.pool }
        if entries.entries(BatchRefusal.self).contains(where: \.value.value) { batchRefused = true }
        return out
    }

    /// What restored leg `key` does next, after its gone consumers left it.
    enum Resumed {
        /// Its subscriber's actions (a refresh with what was queued), for its consumers.
        case take([BatchCategorySubscriber.Action])
        /// Its unsubscribe again, its refresh timer (at `pace`), or its dialog closed.
        case output(ComponentOutput)
        /// Made again in a new dialog (its dialog was not made yet, or ended): its consumers
        /// attached again.
        case restart
    }

    /// Leg `key` after a restore (docs/state.md, "After a restart"): an unsubscribing one
    /// unsubscribes again (forgotten 64·T1 later without a final NOTIFY); an active one with
    /// additions or removals waiting refreshes at once, else at `pace()` (so that a node's legs
    /// are not all refreshed together); one without a dialog is made again. nil: no such leg.
    mutating func resume(_ key: Int, now: NIODeadline, pace: () -> NIODeadline) -> Resumed? {
        guard let leg = legs[key] else { return nil }
        let context = GatewayCore.Context.enterpriseLeg(key)
        switch leg.subscriber.subscription.status {
        case .unsubscribing:
            let actions = modify(key) { $0.subscriber.unsubscribeAgain() } ?? []
            if actions.contains(where: { if case .subscription(.ended) = $0 { true } else { false } }) {
                return .output(close(key))
            }
            let sends = GatewayCore.subscriberActions(
                actions.compactMap { if case .subscription(let a) = $0 { a } else { nil } }, context: context,
                to: .enterprise, trust: trust(of: key))
            return .output(
                ComponentOutput(actions: sends + [.schedule(.cleanup(context), at: now + GatewayCore.cleanupDelay)]))
        case .subscribing, .terminated:
            return .restart
        case .active, .pending:
            guard leg.subscriber.hasQueued else {
                return .output(ComponentOutput(actions: [.schedule(.refresh(context), at: pace())]))
            }
            return .take(modify(key) { $0.subscriber.resume(now: now) } ?? [])
        }
    }

    /// The legs' dialogs; pool hints and the flag are what the enterprise said, which any node
    /// may keep.
    func dialogRecordIDs() -> [StateRecordID] {
        legs.keys.map { StateRecordID(kind: GatewayCore.RecordKind.enterpriseLeg.rawValue, key: String($0)) }
    }

    /// A leg another node took over is let go with its timers; of pool hints and the flag, what
    /// the other node writes wins (this node's copy is a cache).
    mutating func disown(_ id: StateRecordID) -> ComponentOutput {
        guard id.kind == GatewayCore.RecordKind.enterpriseLeg.rawValue, let key = Int(id.key),
            let leg = legs.forget(key)
        else { return ComponentOutput() }
        var out = ComponentOutput(actions: [
            .cancel(.refresh(.enterpriseLeg(key))), .cancel(.expiry(.enterpriseLeg(key))),
            .cancel(.cleanup(.enterpriseLeg(key))),
        ])
        out.dialog(.closed, .enterpriseLeg(key), leg.storedDialog.dialogKey)
        return out
    }

    func holds(_ context: GatewayCore.Context) -> Bool? {
        guard case .enterpriseLeg(let key) = context else { return nil }
        return legs[key] != nil
    }
}

/// The pool an enterprise resource's batch response told to resubscribe to (flow 3), by resource.
struct PoolHint: StoredEntry, Codable {
    var pool: String

    static var recordKind: GatewayCore.RecordKind { .pool }
    static var numberedKeys: Bool { false }

    var storedDialog: StoredDialog { .none }
}

/// That the enterprise refused a batched SUBSCRIBE from a federated watcher ([MS-PRES]
/// §3.4.5.1.1), under the key `batch-refused`.
struct BatchRefusal: StoredEntry, Codable {
    var value: Bool

    static let key = "batch-refused"
    static var recordKind: GatewayCore.RecordKind { .flag }
    static var numberedKeys: Bool { false }

    var storedDialog: StoredDialog { .none }

    static func restored(from flag: Self, key: String, coding: RecordCoding) throws(GatewayCore.RestoreError.Detail)
        -> Self
    {
        guard key == Self.key else { throw GatewayCore.RestoreError.Detail("unknown flag") }
        return flag
    }
}

extension BatchCategorySubscriber {
    /// Whether its subscription ended (RFC 6665 §4.1.3: a terminated NOTIFY, or a failure).
    var isTerminated: Bool {
        guard case .terminated = subscription.status else { return false }
        return true
    }
}
