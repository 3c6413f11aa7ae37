import Foundation
import GatewayState
import PeerTestSupport
import Testing

/// The PostgreSQL store against a real server (a private cluster on 127.0.0.1, one per test):
/// records per node, leases, takeover, owners of dialogs, schema checks, and an
/// unreachable database (docs/state.md, "Several nodes").
@Suite(.serialized, .enabled(if: PostgresCluster.installed, "PostgreSQL is not installed (bash scripts/setup.sh)"))
struct PostgresStateStoreTests {
    static let latest = PostgresStateStore.migrations.map(\.version).max() ?? 0

    /// Opens stores on a cluster, each with its connection pool running (``PostgresStateStore/run()``)
    /// until it is closed or the test ends.
    struct Stores: Sendable {
        let cluster: PostgresCluster
        let running: AsyncStream<PostgresStateStore>.Continuation

        func open(_ database: String, node: String, lease: Int = 30,
                  migrations: [PostgresStateStore.Migration] = PostgresStateStore.migrations,
                  tls: PostgresTLS = PostgresTLS()) async throws -> PostgresStateStore {
            let store = try await PostgresStateStore.open(host: "127.0.0.1", port: Int(cluster.port), user: PostgresCluster.user,
                                                          password: PostgresCluster.password, database: database, node: node,
                                                          leaseSeconds: lease, tls: tls, migrations: migrations)
            running.yield(store)
            return store
        }
    }

    /// `body` with a private cluster and the ``Stores`` on it; the pools still running when it
    /// ends are cancelled.
    static func with(_ body: (PostgresCluster, Stores) async throws -> Void) async throws {
        try await PostgresCluster.with { cluster in
            let (opened, running) = AsyncStream.makeStream(of: PostgresStateStore.self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    await withDiscardingTaskGroup { pools in
                        for await store in opened { pools.addTask { await store.run() } }
                    }
                }
                defer {
                    running.finish()
                    group.cancelAll()
                }
                try await body(cluster, Stores(cluster: cluster, running: running))
            }
        }
    }

    static func record(_ key: String, kind: String = "oma-leg", body: String = #"{"a":1}"#) -> StateRecord {
        StateRecord(kind: kind, key: key, callID: "call-\(key)", localTag: "tag-\(key)", expires: 1_764_000_000_000, body: Array(body.utf8))
    }

    @Test func writesReplacesAndDeletesRecordsAcrossReopening() async throws {
        try await Self.with { cluster, stores in
            let database = try await cluster.createDatabase()
            let store = try await stores.open(database, node: "gw1")
            #expect(try await store.write([.put(Self.record("1")), .put(Self.record("2")), .put(Self.record("3", kind: "oma-watch")),
                                           .put(StateRecord(kind: "flag", key: "batch-refused", body: Array("true".utf8)))]).isEmpty)
            // The last change of a record in one write wins.
            #expect(try await store.write([.put(Self.record("1", body: #"{"a":2}"#)), .delete(kind: "oma-leg", key: "2"),
                                           .put(Self.record("4")), .delete(kind: "oma-leg", key: "4")]).isEmpty)
            await store.close()
            let reopened = try await stores.open(database, node: "gw1")
            let records = try await reopened.load().sorted { ($0.kind, $0.key) < ($1.kind, $1.key) }
            await reopened.close()
            #expect(records == [StateRecord(kind: "flag", key: "batch-refused", body: Array("true".utf8)),
                                Self.record("1", body: #"{"a":2}"#), Self.record("3", kind: "oma-watch")])
            #expect(try await cluster.sql("SELECT value FROM gateway_meta WHERE name = 'schema'", database: database) == "\(Self.latest)")
        }
    }

    @Test func manyRecordsInOneWrite() async throws {
        try await Self.with { cluster, stores in
            let store = try await stores.open(try await cluster.createDatabase(), node: "gw1")
            let records = (0..<5_000).map { Self.record(String($0)) }
            #expect(try await store.write(records.map { .put($0) }).isEmpty)
            #expect(try await store.load().count == 5_000)
            #expect(try await store.write(records.prefix(4_001).map { .delete(kind: $0.kind, key: $0.key) }).isEmpty)
            #expect(try await store.load().count == 999)
            await store.close()
        }
    }

    @Test func eachNodeHasItsOwnOrdinalAndRecords() async throws {
        try await Self.with { cluster, stores in
            let database = try await cluster.createDatabase()
            let one = try await stores.open(database, node: "gw1")
            let two = try await stores.open(database, node: "gw2")
            #expect(one.ordinal != two.ordinal)
            _ = try await one.write([.put(Self.record("1"))])
            _ = try await two.write([.put(Self.record("2"))])
            #expect(try await one.load().map(\.key) == ["1"])
            #expect(try await two.load().map(\.key) == ["2"])
            // A node does not change another's record: the write says so, and the record stays.
            #expect(try await two.write([.put(Self.record("1", body: #"{"b":1}"#))]) == [StateRecordID(kind: "oma-leg", key: "1")])
            #expect(try await two.write([.delete(kind: "oma-leg", key: "1")]) == [StateRecordID(kind: "oma-leg", key: "1")])
            #expect(try await one.load() == [Self.record("1")])
            // Who owns a dialog, and for how long yet.
            let owner = try #require(try await two.dialogOwner(callID: "call-1", localTag: "tag-1"))
            #expect(owner.node == "gw1" && owner.leaseRemaining > 25 && owner.leaseRemaining <= 30)
            #expect(try await two.dialogOwner(callID: "call-1", localTag: "other") == nil)
            // Reopened under its name, a node keeps its ordinal.
            let ordinal = one.ordinal
            await one.close()
            let again = try await stores.open(database, node: "gw1")
            #expect(again.ordinal == ordinal)
            await again.close()
            await two.close()
        }
    }

    @Test func aNodeWhoseLeaseRanOutIsTakenOverByOneOtherNode() async throws {
        try await Self.with { cluster, stores in
            let database = try await cluster.createDatabase()
            let two = try await stores.open(database, node: "gw2", lease: 30)
            let three = try await stores.open(database, node: "gw3", lease: 30)
            let dead = try await stores.open(database, node: "gw1", lease: 3)
            _ = try await dead.write((0..<50).map { .put(Self.record(String($0))) })
            // Within the lease nothing is taken.
            #expect(try await two.takeOverExpired().isEmpty)
            // The lease runs out (polled: a loaded machine may take longer than the lease to get here).
            var owner = try #require(try await two.dialogOwner(callID: "call-7", localTag: "tag-7"))
            let deadline = Date().addingTimeInterval(20)
            while owner.leaseRemaining > 0, Date() < deadline {
                try await Task.sleep(nanoseconds: 250_000_000)
                owner = try #require(try await two.dialogOwner(callID: "call-7", localTag: "tag-7"))
            }
            #expect(owner.node == "gw1" && owner.leaseRemaining == 0)
            async let a = two.takeOverExpired()
            async let b = three.takeOverExpired()
            let (taken2, taken3) = try await (a, b)
            // Every record to exactly one of them.
            #expect(taken2.count + taken3.count == 50)
            #expect(Set((taken2 + taken3).map(\.key)).count == 50)
            let taker = taken2.isEmpty ? three : two
            #expect(try await taker.load().count == 50)
            #expect(try await taker.dialogOwner(callID: "call-7", localTag: "tag-7")?.node == taker.node)
            // The stopped node, back (it was only cut off): its lease renews, but its old records are
            // the taker's now, and its writes to them are refused.
            #expect(try await dead.renewNodeLease())
            #expect(try await dead.load().isEmpty)
            #expect(try await dead.write([.put(Self.record("3"))]) == [StateRecordID(kind: "oma-leg", key: "3")])
            for store in [dead, two, three] { await store.close() }
        }
    }

    @Test func aNodeStartedAgainUnderItsNameTakesTheNameFromTheOldProcess() async throws {
        try await Self.with { cluster, stores in
            let database = try await cluster.createDatabase()
            let old = try await stores.open(database, node: "gw1")
            _ = try await old.write([.put(Self.record("1"))])
            #expect(try await old.renewNodeLease())
            // A restart under the same name within the lease continues the node's records at once ...
            let new = try await stores.open(database, node: "gw1")
            #expect(try await new.load() == [Self.record("1")])
            // ... and the old process, if it still ran, learns that it must stop.
            #expect(try await old.renewNodeLease() == false)
            #expect(try await new.renewNodeLease())
            // A node that has lost its name takes nothing over.
            #expect(try await old.takeOverExpired().isEmpty)
            await old.close()
            await new.close()
        }
    }

    @Test func schemaVersionsMigrateForwardAndNewerOnesAreRefused() async throws {
        try await Self.with { cluster, stores in
            let database = try await cluster.createDatabase()
            let first = try await stores.open(database, node: "gw1")
            _ = try await first.write([.put(Self.record("1"))])
            await first.close()
            let next = PostgresStateStore.migrations + [
                PostgresStateStore.Migration(version: Self.latest + 1, statements: ["ALTER TABLE gateway_state ADD COLUMN written timestamptz DEFAULT now()"]),
            ]
            let migrated = try await stores.open(database, node: "gw1", migrations: next)
            #expect(try await migrated.load() == [Self.record("1")])
            await migrated.close()
            #expect(try await cluster.sql("SELECT value FROM gateway_meta WHERE name = 'schema'", database: database) == "\(Self.latest + 1)")
            #expect(try await cluster.sql("SELECT count(written) FROM gateway_state", database: database) == "1")
            await #expect {
                _ = try await stores.open(database, node: "gw1")
            } throws: { error in
                let error = try #require(error as? StateStoreError)
                return error.code == .newerSchema && error.detail.contains("schema version \(Self.latest + 1)") && error.location.hasSuffix("/\(database)")
            }
        }
    }

    @Test func anotherApplicationsTablesAreLeftAlone() async throws {
        try await Self.with { cluster, stores in
            let database = try await cluster.createDatabase()
            try await cluster.sql("CREATE TABLE gateway_state (id int); INSERT INTO gateway_state VALUES (7)", database: database)
            await #expect {
                _ = try await stores.open(database, node: "gw1")
            } throws: { error in
                (error as? StateStoreError)?.code == .foreign
            }
            #expect(try await cluster.sql("SELECT id FROM gateway_state", database: database) == "7")
            #expect(try await cluster.sql("SELECT count(*) FROM information_schema.tables WHERE table_name = 'gateway_meta'", database: database) == "0")
        }
    }

    /// TLS to the database as libpq's `sslmode` says (docs/state.md, "Several nodes"): against a
    /// server that refuses connections without TLS, `verify-full` with its CA opens and works,
    /// `disable` is refused, and `verify-full` with another CA fails on the certificate.
    @Test func theConnectionIsTLSAsSSLModeSays() async throws {
        try await Self.with { cluster, stores in
            let database = try await cluster.createDatabase()
            let ca = try await cluster.makeCertificate("server")
            let other = try await cluster.makeCertificate("other")
            try await cluster.requireTLS(certificate: "server")
            func open(_ tls: PostgresTLS) async throws -> PostgresStateStore {
                try await stores.open(database, node: "gw1", tls: tls)
            }
            let store = try await open(PostgresTLS(mode: .verifyFull, rootCertificates: ca))
            #expect(try await store.renewNodeLease())
            #expect(try await store.write([.put(Self.record("1"))]).isEmpty)
            await store.close()
            await #expect(throws: StateStoreError.self) { _ = try await open(PostgresTLS(mode: .disable)) }
            await #expect {
                _ = try await open(PostgresTLS(mode: .verifyFull, rootCertificates: other))
            } throws: { error in
                "\(error)".lowercased().contains("certificate")
            }
        }
    }

    @Test func aWrongPasswordIsTheServersOwnMessageWithoutThePassword() async throws {
        try await Self.with { cluster, stores in
            let database = try await cluster.createDatabase()
            await #expect {
                _ = try await PostgresStateStore.open(host: "127.0.0.1", port: Int(cluster.port), user: PostgresCluster.user, password: "wrong-one",
                                                      database: database, node: "gw1")
            } throws: { error in
                let error = try #require(error as? StateStoreError)
                return error.code == .database && error.detail.contains("password authentication failed")
                    && !error.description.contains("wrong-one") && error.location == "postgres://127.0.0.1:\(cluster.port)/\(database)"
            }
        }
    }

    @Test func anUnreachableDatabaseIsAnErrorWithinTheDeadlineAndWritesGoOnWhenItIsBack() async throws {
        try await Self.with { cluster, stores in
            let closed = try LoopbackPorts.free()
            let started = Date()
            await #expect {
                _ = try await PostgresStateStore.open(host: "127.0.0.1", port: Int(closed), user: "gateway", password: nil, database: "gw", node: "gw1")
            } throws: { error in
                (error as? StateStoreError)?.code == .unreachable
            }
            #expect(Date().timeIntervalSince(started) < 35)

            let database = try await cluster.createDatabase()
            let store = try await stores.open(database, node: "gw1")
            _ = try await store.write([.put(Self.record("1"))])
            await cluster.stop(immediately: true)
            let down = Date()
            await #expect {
                _ = try await store.write([.put(Self.record("2"))])
            } throws: { error in
                (error as? StateStoreError)?.code == .unreachable
            }
            #expect(Date().timeIntervalSince(down) < 15)
            await #expect(throws: StateStoreError.self) { _ = try await store.renewNodeLease() }
            try await cluster.startServer()
            // The pool connects again; the write that failed is made again by the runtime.
            var written = false
            for _ in 0..<40 where !written {
                written = (try? await store.write([.put(Self.record("2"))])) != nil
                if !written { try await Task.sleep(nanoseconds: 250_000_000) }
            }
            #expect(written)
            #expect(try await store.load().map(\.key).sorted() == ["1", "2"])
            await store.close()
        }
    }
}
