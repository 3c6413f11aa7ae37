import Foundation
public import GatewayState
import MSPresenceEvents
public import SIPStack

/// What the core hands the durable store after each step (docs/state.md, "What is written
/// when"): the records of every piece of state that changed, and the removal of every piece that
/// ended. A NOTIFY relayed in an existing pair writes nothing unless a subscription's status,
/// dialog or CSeq block moved (``Journaled``).
extension GatewayCore {
    /// Whether changes are remembered for a durable store; off (the default) keeps nothing.
    public var journaling: Bool {
        get { bridge.journaling }
        set {
            bridge.journaling = newValue
            notifier.journaling = newValue
            lists.journaling = newValue
            legPool.journaling = newValue
            linkedIdentities.journaling = newValue
            watcherInfo.journaling = newValue
        }
    }

    /// The changes since the last call, as records for the store; `clock` turns the deadlines
    /// they hold into wall-clock times.
    public mutating func takeStateChanges(clock: WallClock) -> [StateChange] {
        guard journaling else { return [] }
        let changed = takeChangedKeys()
        let linked = linkedIdentities.takeChangedKeys()
        let winfo = watcherInfo.takeChangedKeys()
        let pool = legPool.takeChangedKeys()
        guard !changed.isEmpty || !linked.isEmpty || !winfo.isEmpty || !pool.isEmpty else { return [] }
        let coding = recordCoding(clock: clock)
        let encoder = coding.encoder()
        func changes<E: StoredEntry>(_ keys: some Sequence<String>, _ entry: (String) -> E?) -> [StateChange] {
            E.changes(keys, coding: coding, encoder: encoder, entry: entry)
        }
        func changes<E: StoredEntry>(_ keys: Set<Int>, _ table: (Int) -> E?) -> [StateChange] {
            changes(keys.map(String.init)) { Int($0).flatMap(table) }
        }
        return changes(changed.enterpriseWatches) { bridge.watches[$0] }
            + changes(changed.omaLegs) { bridge.legs[$0] } + changes(changed.omaLists) { bridge.lists[$0] }
            + changes(changed.omaWatches) { storedOMAWatch($0) }
            + changes(changed.enterpriseLegs) { legPool.legs[$0] }
            + linkedIdentities.stateChanges(linked, coding: coding, encoder: encoder)
            + legPool.stateChanges(pool, coding: coding, encoder: encoder)
            + watcherInfo.stateChanges(winfo, coding: coding, encoder: encoder)
    }

    /// The keys of what changed, taken from each table and from ``Journal``.
    private mutating func takeChangedKeys() -> ChangedKeys {
        ChangedKeys(
            enterpriseWatches: bridge.takeChangedWatches(), omaLegs: bridge.takeChangedLegs(),
            omaLists: bridge.takeChangedLists(), omaWatches: notifier.takeChanged().union(lists.takeChanged()),
            enterpriseLegs: legPool.takeChangedLegs())
    }

    private struct ChangedKeys {
        var enterpriseWatches, omaLegs, omaLists, omaWatches, enterpriseLegs: Set<Int>

        var isEmpty: Bool {
            enterpriseWatches.isEmpty && omaLegs.isEmpty && omaLists.isEmpty && omaWatches.isEmpty
                && enterpriseLegs.isEmpty
        }
    }

    /// Runs a NOTIFY's relay in an existing pair (``inDialog``) with the watches' and legs' writes
    /// remembered only when they change what the store keeps.
    mutating func quietly(_ body: (inout GatewayCore) -> [Action]) -> [Action] {
        guard journaling else { return body(&self) }
        bridge.beginQuiet()
        notifier.beginQuiet()
        lists.beginQuiet()
        legPool.beginQuiet()
        let actions = body(&self)
        bridge.endQuiet()
        notifier.endQuiet()
        lists.endQuiet()
        legPool.endQuiet()
        return actions
    }
}
