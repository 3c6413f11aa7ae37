/// Where the gateway keeps what it needs to continue every dialog after a restart
/// (docs/state.md): ``SQLiteStateStore`` for one process, ``PostgresStateStore`` shared by
/// several nodes.
///
/// One writer: ``write(_:)`` is called again only after the previous call returned.
public protocol StateStore: AnyObject, Sendable {
    /// The file or database, for messages (no credentials).
    var location: String { get }
    /// Every record this process (node) owns.
    func load() async throws(StateStoreError) -> [StateRecord]
    /// Applies the changes in one transaction: all of them or none.
    func write(_ changes: [StateChange]) async throws(StateStoreError)
    /// Ends the connection; the store may not be used afterwards.
    func close() async
}
