/// What the runtime needs of a store several nodes share (docs/state.md, "Several nodes"):
/// the node's lease, taking over the records of nodes whose lease ran out, and who owns a
/// dialog it does not know.
public protocol SharedStateStore: StateStore {
    /// This node's name.
    var node: String { get }
    /// This node's number: its records' keys start at `ordinal` × 2⁴⁰.
    var ordinal: Int { get }
    /// Seconds a node's records stay its own after its last renewal.
    var leaseSeconds: Int { get }
    /// Renews this node's lease; false when another process took this node's name.
    func renewNodeLease() async throws(StateStoreError) -> Bool
    /// Ends this node's lease now, for a drain: the other nodes take its records over at their
    /// next renewal rather than when the lease would have run out. False when another process
    /// holds this node's name.
    func releaseNodeLease() async throws(StateStoreError) -> Bool
    /// The records the store lists as this node's: after its lease lapsed, another node may
    /// have taken some over.
    func heldRecordIDs() async throws(StateStoreError) -> Set<StateRecordID>
    /// The records of every other node whose lease ran out, now this node's.
    func takeOverExpired() async throws(StateStoreError) -> [StateRecord]
    /// The node holding the record of a dialog (by Call-ID and this side's tag), and the seconds
    /// left on its lease (0 once it ran out); nil when no node does.
    func dialogOwner(callID: String, localTag: String) async throws(StateStoreError) -> (
        node: String, leaseRemaining: Double
    )?
}
