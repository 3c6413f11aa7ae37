import Foundation
import GatewayState
import NIOCore
import SIPStack

/// A component of the core whose entries the durable store keeps (docs/architecture.md,
/// "Persistence"): the coordinator turns journaling on, runs the relay of a NOTIFY in an existing
/// pair quietly, and after each step takes what changed, each component the same way
/// (``GatewayCore/takeStateChanges(clock:)``). The records themselves are the entries'
/// ``StoredEntry`` conformances.
protocol JournaledComponent {
    /// What changed since the last ``takeChangedKeys()``: keys only, so taking them is cheap.
    associatedtype ChangedKeys: ChangedKeySet

    /// Whether changes are remembered for a durable store; off (the default) keeps nothing.
    var journaling: Bool { get set }

    mutating func takeChangedKeys() -> ChangedKeys

    /// The store's records and removals for what `keys` names, written by `encoder`, one of
    /// `coding`.
    func stateChanges(_ keys: ChangedKeys, coding: RecordCoding, encoder: JSONEncoder) -> [StateChange]

    /// From now until ``endQuiet()``, a write is remembered only when it changes what the store
    /// keeps (``JournaledTable``); nothing to do for a component whose hot path writes nothing.
    mutating func beginQuiet()
    mutating func endQuiet()
}

extension JournaledComponent {
    mutating func beginQuiet() {}
    mutating func endQuiet() {}
}

/// What a component says changed: empty when it has nothing to write.
protocol ChangedKeySet {
    var isEmpty: Bool { get }
}

extension Set: ChangedKeySet {}

/// A journaled component that also takes its entries back from the store. Letting go of the
/// records another node took over is each component's `disown`, which the coordinator calls by
/// record kind (`GatewayCore+Ownership`): its entry's dialog closed and quotas given back, with
/// no message (the notifier's is lent what the UPnP bridge knows of the watch).
protocol DurableComponent: JournaledComponent {
    /// Takes back its entries of a store read back; `core` is the rest of the state as restored
    /// so far. Returns what to do at once and the dialogs taken back.
    mutating func restore(_ entries: GatewayCore.StoredEntries, core: GatewayCore, now: NIODeadline)
        -> ComponentOutput

    /// The records of the dialogs it holds, which a node compares with what the store still
    /// lists as its own (docs/state.md, "Several nodes").
    func dialogRecordIDs() -> [StateRecordID]

    /// Whether the entry of `context` is still held; nil when `context` is not this component's.
    func holds(_ context: GatewayCore.Context) -> Bool?

    /// The peers that entries of `entries` are charged to for what their requests made
    /// (docs/security.md, "A fan-out is charged to its sender"): each is given its charge number
    /// before ``restore(_:core:now:)``, which reads it from `core` (``GatewayCore/knownCharge(_:)``).
    func chargedPeers(in entries: GatewayCore.StoredEntries) -> [DialogPeer]
}

extension DurableComponent {
    func chargedPeers(in entries: GatewayCore.StoredEntries) -> [DialogPeer] { [] }
}
