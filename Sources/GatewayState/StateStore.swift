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
    /// Applies the changes in one transaction: all of them or none. Returns the records it did
    /// not change because another node owns them now (it took them over); always empty for a
    /// store of one process.
    func write(_ changes: [StateChange]) async throws(StateStoreError) -> [StateRecordID]
    /// Runs what the store needs in the background (PostgreSQL's connection pool) until
    /// ``close()``; returns at once for a store that needs nothing (SQLite).
    func run() async
    /// Ends the connection (and ``run()``); the store may not be used afterwards.
    func close() async
}

extension StateStore {
    public func run() async {}
}

/// A record's identity: its kind and key.
public struct StateRecordID: Sendable, Hashable {
    public var kind: String
    public var key: String

    public init(kind: String, key: String) {
        self.kind = kind
        self.key = key
    }
}

/// One step of a store's schema: the statements that bring it from `version - 1` to `version`.
public struct StateStoreMigration: Sendable {
    public var version: Int
    public var statements: [String]

    public init(version: Int, statements: [String]) {
        self.version = version
        self.statements = statements
    }
}
