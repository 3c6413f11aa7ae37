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
            legPool.journaling = newValue
            linkedIdentities.journaling = newValue
            watcherInfo.journaling = newValue
            // The UPnP user's records are node-wide: the first shard's (``runsNodeWideWork``).
            upnp.journaling = newValue && runsNodeWideWork
        }
    }

    /// The changes since the last call, as records for the store; `clock` turns the deadlines
    /// they hold into wall-clock times. Each component gives the records of what it changed.
    public mutating func takeStateChanges(clock: WallClock) -> [StateChange] {
        guard journaling else { return [] }
        let enterpriseWatchers = bridge.takeChangedKeys()
        let omaWatches = notifier.takeChangedKeys()
        let pool = legPool.takeChangedKeys()
        let linked = linkedIdentities.takeChangedKeys()
        let winfo = watcherInfo.takeChangedKeys()
        let upnpKeys = upnp.takeChangedKeys()
        guard
            !(enterpriseWatchers.isEmpty && omaWatches.isEmpty && pool.isEmpty && linked.isEmpty && winfo.isEmpty
                && upnpKeys.isEmpty)
        else { return [] }
        let coding = recordCoding(clock: clock)
        let encoder = coding.encoder()
        return bridge.stateChanges(enterpriseWatchers, coding: coding, encoder: encoder)
            + notifier.stateChanges(omaWatches, coding: coding, encoder: encoder)
            + legPool.stateChanges(pool, coding: coding, encoder: encoder)
            + linkedIdentities.stateChanges(linked, coding: coding, encoder: encoder)
            + watcherInfo.stateChanges(winfo, coding: coding, encoder: encoder)
            + upnp.stateChanges(upnpKeys, coding: coding, encoder: encoder)
    }

    /// Runs a NOTIFY's relay in an existing pair (``inDialog``) with the watches' and legs' writes
    /// remembered only when they change what the store keeps.
    mutating func quietly(_ body: (inout GatewayCore) -> [Action]) -> [Action] {
        guard journaling else { return body(&self) }
        bridge.beginQuiet()
        notifier.beginQuiet()
        legPool.beginQuiet()
        let actions = body(&self)
        bridge.endQuiet()
        notifier.endQuiet()
        legPool.endQuiet()
        return actions
    }
}
