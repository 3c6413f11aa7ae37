import Foundation
public import Logging
import NIOCore
import NIOPosix
import SQLiteNIO

#if canImport(Glibc)
    import Glibc
#endif

/// The gateway's state in one SQLite file (docs/state.md), through sqlite-nio (which ships its
/// own SQLite and runs every call on a thread pool, off the event loops).
///
/// - WAL mode, one transaction per ``write(_:)``; `synchronous` FULL (a committed write survives
///   a power loss) or NORMAL (it survives the process being killed, not the machine stopping).
/// - One gateway per file: `FILE.lock` beside it is locked (flock) for as long as the store is
///   open, so a second gateway on the same file stops at start with
///   ``StateStoreError/Code/locked``. Other readers are welcome: `sqlite3 FILE ".backup COPY"`
///   takes a consistent copy while the gateway runs (WAL mode).
/// - Schema versions in `PRAGMA user_version`, the application in `PRAGMA application_id`;
///   older versions are migrated forward in one transaction at open, newer ones refused.
public final class SQLiteStateStore: StateStore {
    /// How a commit reaches the disk (SQLite `PRAGMA synchronous` in WAL mode).
    public enum Synchronous: String, Sendable, CaseIterable {
        /// Every commit is synced: it survives a power loss.
        case full
        /// Commits survive the process ending abruptly (kill -9); the last ones may be lost if the
        /// machine stops.
        case normal
    }

    public typealias Migration = StateStoreMigration

    /// The schema, oldest step first. Version 1: the records (``StateRecord``) by kind and key,
    /// with the dialog they hold indexed. Version 2: the same tables; record bodies hold event
    /// packages in one string (docs/state.md, "What is stored"), which an older gateway cannot read.
    /// Version 3: the records in a table with row ids, unique by kind and key. A table WITHOUT
    /// ROWID keeps a row in its B-tree only up to about a quarter of a page, so every record of
    /// about a kilobyte took a 4 KiB overflow page besides: the file was about three times as
    /// large and each write wrote about three times as much (docs/performance.md).
    public static let migrations: [Migration] = [
        Migration(
            version: 1,
            statements: [
                """
                CREATE TABLE gateway_state (
                    kind TEXT NOT NULL,
                    key TEXT NOT NULL,
                    call_id TEXT,
                    local_tag TEXT,
                    expires INTEGER,
                    body TEXT NOT NULL,
                    PRIMARY KEY (kind, key)
                ) WITHOUT ROWID
                """,
                "CREATE INDEX gateway_state_dialog ON gateway_state (call_id, local_tag)",
            ]),
        Migration(version: 2, statements: []),
        Migration(
            version: 3,
            statements: [
                """
                CREATE TABLE gateway_state_rows (
                    kind TEXT NOT NULL,
                    key TEXT NOT NULL,
                    call_id TEXT,
                    local_tag TEXT,
                    expires INTEGER,
                    body TEXT NOT NULL
                )
                """,
                """
                INSERT INTO gateway_state_rows (kind, key, call_id, local_tag, expires, body)
                SELECT kind, key, call_id, local_tag, expires, body FROM gateway_state
                """,
                "DROP TABLE gateway_state",
                "ALTER TABLE gateway_state_rows RENAME TO gateway_state",
                "CREATE UNIQUE INDEX gateway_state_key ON gateway_state (kind, key)",
                "CREATE INDEX gateway_state_dialog ON gateway_state (call_id, local_tag)",
            ]),
    ]

    /// `PRAGMA application_id` of a presence-gateway store: "PGWS".
    public static let applicationID: Int32 = 0x5047_5753

    public let location: String
    private let connection: SQLiteConnection
    private let turns = Turns()
    /// The descriptor holding `FILE.lock`.
    private let lock: Int32

    private init(location: String, connection: SQLiteConnection, lock: Int32) {
        self.location = location
        self.connection = connection
        self.lock = lock
    }

    /// Opens (creating the file and its directory on first use), locks, checks and migrates the
    /// store at `path`. A file that is not a store, of a newer schema, locked by another process,
    /// damaged, or that cannot be written (a full disk) is an error naming the file and the reason;
    /// nothing in it is changed then.
    public static func open(
        path: String, synchronous: Synchronous = .full, migrations: [Migration] = migrations,
        logger: Logger = Logger(label: "presence-gateway.state")
    ) async throws(StateStoreError) -> SQLiteStateStore {
        let url = URL(fileURLWithPath: path)
        let location = url.path
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: location, isDirectory: &isDirectory), isDirectory.boolValue {
            throw StateStoreError(.io, location: location, "is a directory, not a store file")
        }
        let directory = url.deletingLastPathComponent().path
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw StateStoreError(
                .io, location: location, "cannot create the directory \(directory): \(error.localizedDescription)")
        }
        let lock = try Self.lock(location)
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(storage: .file(path: location), logger: logger)
        } catch {
            Glibc.close(lock)
            throw mapped(error, location: location, doing: "cannot open")
        }
        let store = SQLiteStateStore(location: location, connection: connection, lock: lock)
        do throws(StateStoreError) {
            try await store.prepare(synchronous: synchronous, migrations: migrations, logger: logger)
        } catch {
            await store.close()
            throw error
        }
        return store
    }

    private func prepare(synchronous: Synchronous, migrations: [Migration], logger: Logger)
        async throws(StateStoreError)
    {
        // sqlite-nio retries a busy database for ever; a second gateway must fail instead.
        try await run("PRAGMA busy_timeout = 1000", doing: "cannot open")
        let application = try await integer("PRAGMA application_id", doing: "cannot read")
        let version = try await integer("PRAGMA user_version", doing: "cannot read")
        let objects = try await integer("SELECT count(*) FROM sqlite_master", doing: "cannot read")
        let latest = migrations.map(\.version).max() ?? 0
        guard application == Int(Self.applicationID) || (application == 0 && version == 0 && objects == 0) else {
            throw StateStoreError(
                .foreign, location: location,
                "not a presence-gateway store (application id \(application), \(objects) schema objects); "
                    + "refusing to change it")
        }
        guard version <= latest else {
            throw StateStoreError(
                .newerSchema, location: location,
                "schema version \(version) was written by a newer presence-gateway; this one knows up to \(latest)")
        }
        let mode = try await text("PRAGMA journal_mode = WAL", doing: "cannot lock")
        guard mode.lowercased() == "wal" else {
            throw StateStoreError(.io, location: location, "cannot use WAL mode (journal mode stays \(mode))")
        }
        try await run("PRAGMA synchronous = \(synchronous.rawValue.uppercased())", doing: "cannot configure")
        // The pages the connection keeps in its own heap (SQLite's default: 2,000 KiB). The store
        // is read once, at start, and then written in batches whose index pages the kernel's
        // file cache serves as well (docs/state.md, "Memory").
        try await run("PRAGMA cache_size = -\(Self.cacheKiB)", doing: "cannot configure")
        let migrating = version > 0 && version < latest
        let started = ContinuousClock.now
        if migrating { try await backUp(from: version, to: latest, logger: logger) }
        try await run("BEGIN IMMEDIATE", doing: "cannot lock")
        do throws(StateStoreError) {
            for migration in migrations.sorted(by: { $0.version < $1.version }) where migration.version > version {
                for statement in migration.statements {
                    try await run(statement, doing: "cannot migrate to schema version \(migration.version)")
                }
                try await run("PRAGMA user_version = \(migration.version)", doing: "cannot migrate")
            }
            if application == 0 {
                try await run("PRAGMA application_id = \(Self.applicationID)", doing: "cannot migrate")
            }
            try await run("COMMIT", doing: "cannot migrate")
        } catch {
            _ = try? await connection.query("ROLLBACK")
            throw error
        }
        if migrating {
            logger.notice("\(location): migrated to schema version \(latest) in \(ContinuousClock.now - started)")
        }
        let check = try await text("PRAGMA quick_check", doing: "cannot check")
        guard check == "ok" else { throw StateStoreError(.corrupt, location: location, "damaged: \(check)") }
    }

    /// Before a migration: the records counted and the file copied whole, beside it, as
    /// `FILE.schema-vN.backup` (`VACUUM INTO`, a consistent copy under the store's lock): an older
    /// gateway can be started on it again. A copy that cannot be made stops the migration.
    private func backUp(from version: Int, to latest: Int, logger: Logger) async throws(StateStoreError) {
        let records = try await integer("SELECT count(*) FROM gateway_state", doing: "cannot read")
        var backup = "\(location).schema-v\(version).backup"
        if FileManager.default.fileExists(atPath: backup) { backup += "-\(Int(Date().timeIntervalSince1970))" }
        logger.notice(
            "\(location): schema version \(version) → \(latest): \(records) records to migrate; backing up to \(backup) first"
        )
        try await run("VACUUM INTO ?", [.text(backup)], doing: "cannot back up to \(backup) before migrating")
    }

    public func load() async throws(StateStoreError) -> [StateRecord] {
        let rows: [SQLiteRow]
        do {
            rows = try await connection.query("SELECT kind, key, call_id, local_tag, expires, body FROM gateway_state")
        } catch {
            throw Self.mapped(error, location: location, doing: "cannot read")
        }
        var records: [StateRecord] = []
        records.reserveCapacity(rows.count)
        for row in rows {
            guard let kind = row.column("kind")?.string, let key = row.column("key")?.string,
                let body = row.column("body")?.string
            else {
                throw StateStoreError(.corrupt, location: location, "a record without kind, key or body")
            }
            records.append(
                StateRecord(
                    kind: kind, key: key, callID: row.column("call_id")?.string,
                    localTag: row.column("local_tag")?.string,
                    expires: row.column("expires")?.integer.map(Int64.init),
                    body: Array(body.utf8)))
        }
        return records
    }

    /// SQLite's page cache per connection, in KiB.
    static let cacheKiB = 512

    /// Rows per INSERT statement (six bound values each).
    static let rowsPerStatement = 500

    /// Writes `changes` in one transaction. Writers take turns (``turns``): the shards of a
    /// gateway write through their own writers into this one connection, on which a second
    /// `BEGIN` inside the first transaction would fail.
    public func write(_ changes: [StateChange]) async throws(StateStoreError) -> [StateRecordID] {
        guard !changes.isEmpty else { return [] }
        await turns.take()
        do throws(StateStoreError) {
            try await writeInTurn(changes)
        } catch {
            await turns.pass()
            throw error
        }
        await turns.pass()
        return []
    }

    private func writeInTurn(_ changes: [StateChange]) async throws(StateStoreError) {
        var puts: [StateRecord] = []
        var deletes: [(String, String)] = []
        for change in changes {
            switch change {
            case .put(let record): puts.append(record)
            case .delete(let kind, let key): deletes.append((kind, key))
            }
        }
        try await run("BEGIN IMMEDIATE", doing: "cannot write")
        do throws(StateStoreError) {
            for start in stride(from: 0, to: puts.count, by: Self.rowsPerStatement) {
                let chunk = puts[start..<min(puts.count, start + Self.rowsPerStatement)]
                var binds: [SQLiteData] = []
                binds.reserveCapacity(chunk.count * 6)
                for record in chunk {
                    binds += [
                        .text(record.kind), .text(record.key), record.callID.map { .text($0) } ?? .null,
                        record.localTag.map { .text($0) } ?? .null, record.expires.map { .integer(Int($0)) } ?? .null,
                        .text(String(decoding: record.body, as: UTF8.self)),
                    ]
                }
                let values = Array(repeating: "(?, ?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", ")
                try await run(
                    "INSERT INTO gateway_state (kind, key, call_id, local_tag, expires, body) VALUES \(values) "
                        + "ON CONFLICT (kind, key) DO UPDATE SET call_id = excluded.call_id, local_tag = excluded.local_tag, "
                        + "expires = excluded.expires, body = excluded.body", binds, doing: "cannot write")
            }
            for start in stride(from: 0, to: deletes.count, by: Self.rowsPerStatement) {
                let chunk = deletes[start..<min(deletes.count, start + Self.rowsPerStatement)]
                let values = Array(repeating: "(?, ?)", count: chunk.count).joined(separator: ", ")
                try await run(
                    "DELETE FROM gateway_state WHERE (kind, key) IN (VALUES \(values))",
                    chunk.flatMap { [SQLiteData.text($0.0), .text($0.1)] }, doing: "cannot write")
            }
            try await run("COMMIT", doing: "cannot write")
        } catch {
            _ = try? await connection.query("ROLLBACK")
            throw error
        }
    }

    public func close() async {
        try? await connection.close()
        Glibc.close(lock)
    }

    /// Locks `FILE.lock` for this process (flock, exclusive): a second gateway on the same store
    /// stops within a second. A lock file beside the database, not the database itself: closing
    /// another descriptor of the database would drop SQLite's own locks (POSIX locks). The lock is
    /// tried for up to a second: a process forked by this one holds a copy of the descriptor
    /// until it runs its program, and so the lock for a moment after ``close()``.
    private static func lock(_ location: String) throws(StateStoreError) -> Int32 {
        let descriptor = Glibc.open(location + ".lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StateStoreError(
                .io, location: location, "cannot create \(location).lock: \(String(cString: strerror(errno)))")
        }
        var locked = flock(descriptor, LOCK_EX | LOCK_NB) == 0
        for _ in 0..<20 where !locked && errno == EWOULDBLOCK {
            usleep(50_000)
            locked = flock(descriptor, LOCK_EX | LOCK_NB) == 0
        }
        guard locked else {
            let reason = errno
            Glibc.close(descriptor)
            if reason == EWOULDBLOCK {
                throw StateStoreError(
                    .locked, location: location,
                    "locked by another process (is another presence-gateway using this store?)")
            }
            throw StateStoreError(
                .io, location: location, "cannot lock \(location).lock: \(String(cString: strerror(reason)))")
        }
        return descriptor
    }

    // MARK: -

    private func run(_ sql: String, _ binds: [SQLiteData] = [], doing: String) async throws(StateStoreError) {
        do {
            _ = try await connection.query(sql, binds)
        } catch {
            throw Self.mapped(error, location: location, doing: doing)
        }
    }

    private func integer(_ sql: String, doing: String) async throws(StateStoreError) -> Int {
        do {
            return try await connection.query(sql).first?.columns.first?.data.integer ?? 0
        } catch {
            throw Self.mapped(error, location: location, doing: doing)
        }
    }

    private func text(_ sql: String, doing: String) async throws(StateStoreError) -> String {
        do {
            return try await connection.query(sql).first?.columns.first?.data.string ?? ""
        } catch {
            throw Self.mapped(error, location: location, doing: doing)
        }
    }

    /// An SQLite failure as the store reports it: what it was doing, and the reason in words an
    /// operator acts on.
    static func mapped(_ error: any Error, location: String, doing: String) -> StateStoreError {
        guard let error = error as? SQLiteError else {
            return StateStoreError(.io, location: location, "\(doing): \(error)")
        }
        switch error.reason {
        case .busy, .busyTimeout, .busyInRecovery, .busyInSnapshot, .locked:
            return StateStoreError(
                .locked, location: location,
                "\(doing): locked by another process (is another presence-gateway using this store?)")
        case .notADatabase, .corrupt, .corruptIndex, .corruptSequenceSchema, .corruptVirtualTable, .format:
            return StateStoreError(
                .corrupt, location: location, "\(doing): not a database or damaged (\(error.message))")
        case .full:
            return StateStoreError(.full, location: location, "\(doing): the disk is full (\(error.message))")
        case .cantOpen, .cantOpenDirectory, .cantOpenInvalidPath, .cantOpenUnfollowedSymlink, .permission, .readOnly,
            .readonlyCantLock, .readonlyDirectory, .readonlyInRecovery, .readonlyInRollback, .readonlyBackingMoved,
            .ioError, .ioErrorFailedRead, .ioErrorIncompleteRead, .ioErrorFailedWrite, .ioErrorFailedSync,
            .ioErrorFailedDirSync, .ioErrorFailedTruncate, .ioErrorFailedStat, .ioErrorFailedAccess,
            .ioErrorFailedLockCheck, .ioErrorFailedAdvisoryLock, .ioErrorFailedClose, .ioErrorFailedDelete:
            return StateStoreError(
                .io, location: location,
                "\(doing): \(error.message) (cannot write the file or its directory: "
                    + "permissions, a full disk or a file size limit)")
        default:
            return StateStoreError(.database, location: location, "\(doing): \(error.description)")
        }
    }
}

/// Callers of an async section taking turns, in the order they came: what a lock is for code
/// that suspends while it holds it.
actor Turns {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Returns once it is the caller's turn.
    func take() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Ends the caller's turn: the next caller's begins.
    func pass() {
        guard !waiting.isEmpty else {
            busy = false
            return
        }
        waiting.removeFirst().resume()
    }
}
