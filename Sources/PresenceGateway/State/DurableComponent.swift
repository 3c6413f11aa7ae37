import Foundation
import GatewayState
import NIOCore
import SIPStack

/// A component of the core whose entries the durable store keeps (docs/architecture.md,
/// "Persistence"). The coordinator drives every component the same way: it turns journaling on,
/// takes what changed after each step, restores, and lets go of what another node took over.
/// The records themselves are the entries' ``StoredEntry`` conformances.
protocol DurableComponent {
    /// What changed since the last ``takeChangedKeys()``: keys only, so taking them is cheap.
    associatedtype ChangedKeys

    /// Whether changes are remembered for a durable store; off (the default) keeps nothing.
    var journaling: Bool { get set }

    mutating func takeChangedKeys() -> ChangedKeys

    /// The store's records and removals for what `keys` names, written by `encoder`, one of
    /// `coding`.
    func stateChanges(_ keys: ChangedKeys, coding: RecordCoding, encoder: JSONEncoder)
        -> [StateChange]

    /// Takes back its entries of a store read back; `core` is the rest of the state as restored
    /// so far. Returns what to do at once and the dialogs taken back.
    mutating func restore(_ entries: GatewayCore.StoredEntries, core: GatewayCore, now: NIODeadline)
        -> ComponentOutput

    /// The records of the dialogs it holds, which a node compares with what the store still
    /// lists as its own (docs/state.md, "Several nodes").
    func dialogRecordIDs() -> [StateRecordID]

    /// Lets go, without a message, of a record another node took over: its timers cancelled, its
    /// dialog closed.
    mutating func disown(_ id: StateRecordID) -> ComponentOutput

    /// Whether the entry of `context` is still held; nil when `context` is not this component's.
    func holds(_ context: GatewayCore.Context) -> Bool?
}
