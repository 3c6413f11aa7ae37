import Foundation
import GatewayState
import PeerTestSupport
import Testing

/// The SQLite store on real files in a temporary directory: what it keeps, and how it refuses a
/// file it must not use (docs/state.md, "Bad store files").
@Suite struct SQLiteStateStoreTests {
    let directory: String

    init() throws {
        directory = NSTemporaryDirectory() + "state-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func path(_ name: String = "state.db") -> String { directory + "/" + name }

    static func record(_ key: String, kind: String = "oma-leg", body: String = #"{"a":1}"#) -> StateRecord {
        StateRecord(kind: kind, key: key, callID: "call-\(key)", localTag: "tag-\(key)", expires: 1_764_000_000_000, body: Array(body.utf8))
    }

    @Test func writesReplacesAndDeletesRecordsAcrossReopening() async throws {
        let store = try await SQLiteStateStore.open(path: path("nested/dir/state.db"))
        _ = try await store.write([.put(Self.record("1")), .put(Self.record("2")), .put(Self.record("3", kind: "oma-watch"))])
        _ = try await store.write([.put(Self.record("1", body: #"{"a":2}"#)), .delete(kind: "oma-leg", key: "2")])
        await store.close()
        let reopened = try await SQLiteStateStore.open(path: path("nested/dir/state.db"))
        let records = try await reopened.load().sorted { $0.key < $1.key }
        await reopened.close()
        #expect(records == [Self.record("1", body: #"{"a":2}"#), Self.record("3", kind: "oma-watch")])
    }

    @Test func manyRecordsInOneWriteAreOneTransaction() async throws {
        let store = try await SQLiteStateStore.open(path: path())
        let records = (0..<1_234).map { Self.record(String($0)) }
        _ = try await store.write(records.map { .put($0) })
        #expect(try await store.load().count == 1_234)
        _ = try await store.write(records.prefix(1_001).map { .delete(kind: $0.kind, key: $0.key) })
        #expect(try await store.load().count == 233)
        await store.close()
    }

    @Test func aSecondOpenOfTheSameFileIsRefusedAsLocked() async throws {
        let first = try await SQLiteStateStore.open(path: path())
        _ = try await first.write([.put(Self.record("1"))])
        await #expect {
            _ = try await SQLiteStateStore.open(path: path())
        } throws: { error in
            let error = try #require(error as? StateStoreError)
            return error.code == .locked && error.location == path() && error.detail.contains("another process")
        }
        await first.close()
        let second = try await SQLiteStateStore.open(path: path())
        #expect(try await second.load().count == 1)
        await second.close()
    }

    @Test func aConsistentCopyCanBeTakenWhileTheStoreIsOpen() async throws {
        let store = try await SQLiteStateStore.open(path: path())
        _ = try await store.write((0..<500).map { .put(Self.record(String($0))) })
        // The backup docs/state.md gives operators: sqlite3's online backup, beside the running gateway.
        _ = try await runSQLite(path(), ".backup '\(path("copy.db"))'")
        _ = try await store.write([.delete(kind: "oma-leg", key: "0")])
        await store.close()
        let copy = try await SQLiteStateStore.open(path: path("copy.db"))
        #expect(try await copy.load().count == 500)
        await copy.close()
    }

    @Test func aFileThatIsNotADatabaseIsRefusedAndLeftAlone() async throws {
        let garbage = Array(repeating: UInt8(0x5A), count: 8192)
        FileManager.default.createFile(atPath: path(), contents: Data(garbage))
        await #expect {
            _ = try await SQLiteStateStore.open(path: path())
        } throws: { error in
            (error as? StateStoreError)?.code == .corrupt
        }
        #expect(FileManager.default.contents(atPath: path()) == Data(garbage))
    }

    @Test func aDamagedStoreIsRefused() async throws {
        let store = try await SQLiteStateStore.open(path: path())
        _ = try await store.write((0..<2_000).map { .put(Self.record(String($0), body: String(repeating: "x", count: 300))) })
        await store.close()
        // Overwrite a page in the middle of the file (the table's interior, not the header).
        let handle = try #require(FileHandle(forUpdatingAtPath: path()))
        try handle.seek(toOffset: 3 * 4096)
        try handle.write(contentsOf: Data(repeating: 0xFF, count: 4096))
        try handle.close()
        await #expect {
            let reopened = try await SQLiteStateStore.open(path: path())
            _ = try await reopened.load()
            await reopened.close()
        } throws: { error in
            (error as? StateStoreError)?.code == .corrupt
        }
    }

    @Test func aNewerSchemaIsRefused() async throws {
        let future = SQLiteStateStore.migrations + [SQLiteStateStore.Migration(version: 99, statements: ["CREATE TABLE later (x)"])]
        let store = try await SQLiteStateStore.open(path: path(), migrations: future)
        await store.close()
        await #expect {
            _ = try await SQLiteStateStore.open(path: path())
        } throws: { error in
            let error = try #require(error as? StateStoreError)
            return error.code == .newerSchema && error.detail.contains("99")
        }
    }

    @Test func anotherApplicationsDatabaseIsRefused() async throws {
        let store = try await SQLiteStateStore.open(path: path(), migrations: [
            SQLiteStateStore.Migration(version: 1, statements: ["CREATE TABLE other (x)"]),
        ])
        await store.close()
        // The same file without the application id: somebody else's database.
        let other = path("other.db")
        try FileManager.default.copyItem(atPath: path(), toPath: other)
        _ = try await runSQLite(other, "PRAGMA application_id = 0; PRAGMA user_version = 3;")
        await #expect {
            _ = try await SQLiteStateStore.open(path: other)
        } throws: { error in
            (error as? StateStoreError)?.code == .foreign
        }
    }

    @Test func olderSchemaVersionsAreMigratedForwardKeepingRecords() async throws {
        let store = try await SQLiteStateStore.open(path: path())
        _ = try await store.write([.put(Self.record("1"))])
        await store.close()
        // A later schema: a column added by another step.
        let next = (SQLiteStateStore.migrations.map(\.version).max() ?? 0) + 1
        let v2 = SQLiteStateStore.migrations + [SQLiteStateStore.Migration(version: next, statements: [
            "ALTER TABLE gateway_state ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
        ])]
        let migrated = try await SQLiteStateStore.open(path: path(), migrations: v2)
        #expect(try await migrated.load() == [Self.record("1")])
        await migrated.close()
        #expect(try await runSQLite(path(), "PRAGMA user_version; SELECT owner FROM gateway_state;") == "\(next)\n\n")
    }

    @Test func aVersion2StoreMovesItsRecordsIntoATableWithRowIDs() async throws {
        let version2 = SQLiteStateStore.migrations.filter { $0.version <= 2 }
        let old = try await SQLiteStateStore.open(path: path(), migrations: version2)
        let records = [Self.record("1"), Self.record("2", body: String(repeating: "x", count: 1_500)), Self.record("1", kind: "oma-watch")]
        _ = try await old.write(records.map { .put($0) })
        await old.close()
        #expect(try await runSQLite(path(), "SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE name = 'gateway_state';") == "1\n")

        let store = try await SQLiteStateStore.open(path: path())
        #expect(Set(try await store.load()) == Set(records))
        // Still one record per kind and key, and found by its dialog.
        _ = try await store.write([.put(Self.record("1", body: #"{"a":3}"#))])
        #expect(try await store.load().filter { $0.kind == "oma-leg" && $0.key == "1" }.map(\.body) == [Array(#"{"a":3}"#.utf8)])
        await store.close()
        let schema = try await runSQLite(path(), """
            PRAGMA user_version;
            SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE name = 'gateway_state';
            SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'gateway_state' ORDER BY name;
            """)
        #expect(schema == "3\n0\ngateway_state_dialog\ngateway_state_key\n")

        // The version 2 file was copied first, whole: an older gateway can start on the copy.
        let backup = path() + ".schema-v2.backup"
        #expect(try await runSQLite(backup, "PRAGMA user_version; SELECT count(*) FROM gateway_state;") == "2\n3\n")
        let older = try await SQLiteStateStore.open(path: backup, migrations: version2)
        #expect(Set(try await older.load()) == Set(records))
        await older.close()
    }

    @Test func aStoreOfTheCurrentSchemaIsNotBackedUp() async throws {
        let store = try await SQLiteStateStore.open(path: path())
        _ = try await store.write([.put(Self.record("1"))])
        await store.close()
        await (try await SQLiteStateStore.open(path: path())).close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains("backup") }.isEmpty)
    }

    @Test func aFailingMigrationChangesNothing() async throws {
        let store = try await SQLiteStateStore.open(path: path())
        _ = try await store.write([.put(Self.record("1"))])
        await store.close()
        let latest = SQLiteStateStore.migrations.map(\.version).max() ?? 0
        let broken = SQLiteStateStore.migrations + [SQLiteStateStore.Migration(version: latest + 1, statements: [
            "ALTER TABLE gateway_state ADD COLUMN owner TEXT", "THIS IS NOT SQL",
        ])]
        await #expect(throws: StateStoreError.self) {
            _ = try await SQLiteStateStore.open(path: path(), migrations: broken)
        }
        #expect(try await runSQLite(path(), "PRAGMA user_version; SELECT count(*) FROM pragma_table_info('gateway_state');") == "\(latest)\n6\n")
    }

    @Test func aDirectoryInPlaceOfTheFileIsRefused() async throws {
        try FileManager.default.createDirectory(atPath: path(), withIntermediateDirectories: true)
        await #expect {
            _ = try await SQLiteStateStore.open(path: path())
        } throws: { error in
            (error as? StateStoreError)?.code == .io
        }
    }

    /// Debian's sqlite3 shell (scripts/setup.sh installs it) on a file the store is not using.
    func runSQLite(_ file: String, _ sql: String) async throws -> String {
        let (status, output) = try await runProgram("/usr/bin/sqlite3", [file, sql])
        guard status == 0 else { throw PeerError("sqlite3 exited \(status): \(output)") }
        return output
    }
}
