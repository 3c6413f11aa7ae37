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
        let encoder = JSONEncoder()
        func changes<E: StoredEntry>(_ keys: some Sequence<String>, _ entry: (String) -> E?) -> [StateChange] {
            E.changes(keys, in: self, clock: clock, encoder: encoder, entry: entry)
        }
        func changes<E: StoredEntry>(_ keys: Set<Int>, _ table: (Int) -> E?) -> [StateChange] {
            changes(keys.map(String.init)) { Int($0).flatMap(table) }
        }
        return changes(changed.enterpriseWatches) { bridge.watches[$0] }
            + changes(changed.omaLegs) { bridge.legs[$0] } + changes(changed.omaLists) { bridge.lists[$0] }
            + changes(changed.omaWatches) { storedOMAWatch($0) }
            + changes(changed.enterpriseLegs) { legPool.legs[$0] }
            + linkedIdentities.stateChanges(linked, core: self, clock: clock, encoder: encoder)
            + legPool.stateChanges(pool, core: self, clock: clock, encoder: encoder)
            + watcherInfo.stateChanges(winfo, core: self, clock: clock, encoder: encoder)
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

extension GatewayCore.EnterpriseWatch: Journaled {
    struct Signature: Equatable, Sendable {
        var answered: Bool
        var status: NotifierSubscription.Status?
        var dialog: SIPDialog?
        var block: UInt32
        var resources: Int
        var legs: Int
        var refused: Int
    }

    var durableSignature: Signature {
        let notifier = subscription?.subscription ?? document
        return Signature(
            answered: pending == nil, status: notifier?.status, dialog: notifier?.dialog.withoutSequences,
            block: (notifier?.dialog.localSequence ?? 0) / GatewayCore.sequenceBlock,
            resources: subscription?.resources.count ?? 0, legs: legs.count, refused: refused.count)
    }
}

extension GatewayCore.OMALeg: Journaled {
    struct Signature: Equatable, Sendable {
        var status: SubscriberSubscription.Status?
        var dialog: SIPDialog?
        var pending: Bool
        var closing: Bool
        var handling: SubHandling
        var watch: Int
        var peer: DialogPeer?
    }

    var durableSignature: Signature {
        Signature(
            status: subscription?.status, dialog: subscription?.dialog?.withoutSequences, pending: pending,
            closing: closing,
            handling: handling, watch: watch, peer: peer)
    }
}

/// A list's version is not written: a restored list takes the next notification with full state.
extension GatewayCore.OMAList: Journaled {
    struct Signature: Equatable, Sendable {
        var status: SubscriberSubscription.Status?
        var dialog: SIPDialog?
        var members: Int
        var changed: Bool
        var closing: Bool
        var peer: DialogPeer?
    }

    var durableSignature: Signature {
        Signature(
            status: subscription?.status, dialog: subscription?.dialog?.withoutSequences, members: members.count,
            changed: changed, closing: closing, peer: peer)
    }
}

extension GatewayCore.OMAWatch: Journaled {
    struct Signature: Equatable, Sendable {
        var answered: Bool
        var status: NotifierSubscription.Status?
        var dialog: SIPDialog?
        var block: UInt32
        var leg: Int?
        var linked: Int?
        var partialBlock: UInt32?
    }

    var durableSignature: Signature {
        Signature(
            answered: pending == nil, status: subscription?.status, dialog: subscription?.dialog.withoutSequences,
            block: (subscription?.dialog.localSequence ?? 0) / GatewayCore.sequenceBlock, leg: leg, linked: linked,
            partialBlock: partial.map { ($0.version ?? 0) / GatewayCore.sequenceBlock })
    }
}

extension GatewayCore.EnterpriseLeg: Journaled {
    struct Signature: Equatable, Sendable {
        var status: SubscriberSubscription.Status
        var dialog: SIPDialog?
        var resources: Int
        var watches: Int
        var established: Bool
        var closing: Bool
        var pool: String?
        var peer: DialogPeer?
    }

    var durableSignature: Signature {
        Signature(
            status: subscriber.subscription.status, dialog: subscriber.subscription.dialog?.withoutSequences,
            resources: subscriber.resources.count, watches: watches.count, established: established, closing: closing,
            pool: pool, peer: peer)
    }
}
