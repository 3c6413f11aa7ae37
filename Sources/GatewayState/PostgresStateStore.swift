public import Foundation
public import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import PostgresNIO

/// How the connection to PostgreSQL is secured, as libpq's `sslmode` and `sslrootcert` say
/// (PostgreSQL's documentation, "SSL Support" in libpq): `disable` plain; `prefer` TLS when the
/// server offers it, unverified (libpq's default); `require` TLS, unverified; `verify-ca` TLS with
/// a certificate from a trusted CA; `verify-full` that, and naming the host.
public struct PostgresTLS: Sendable, Hashable {
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        case disable, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    public var mode: Mode
    /// A PEM file of the CAs to trust (`sslrootcert`); nil: the system's.
    public var rootCertificates: String?

    public init(mode: Mode = .prefer, rootCertificates: String? = nil) {
        self.mode = mode
        self.rootCertificates = rootCertificates
    }

    /// The TLS settings of a client connection in this mode; nil for `disable`.
    func configuration() -> TLSConfiguration? {
        guard mode != .disable else { return nil }
        var tls = TLSConfiguration.makeClientConfiguration()
        switch mode {
        case .disable, .prefer, .require: tls.certificateVerification = .none
        case .verifyCA: tls.certificateVerification = .noHostnameVerification
        case .verifyFull: tls.certificateVerification = .fullVerification
        }
        if let rootCertificates { tls.trustRoots = .file(rootCertificates) }
        return tls
    }

    var client: PostgresClient.Configuration.TLS {
        guard let tls = configuration() else { return .disable }
        return mode == .prefer ? .prefer(tls) : .require(tls)
    }
}

/// The gateway's state in a PostgreSQL database several nodes share (docs/state.md, "Several
/// nodes"), through postgres-nio.
///
/// - `gateway_nodes`: one row per node name, with its ordinal (its records' keys start at
///   ordinal × 2⁴⁰, so nodes never make the same key), the process now holding the name
///   (`instance`) and its lease, renewed with the database's clock.
/// - `gateway_state`: the records (``StateRecord``), each with the node that owns it. A node
///   changes only its own records: a write to a record another node has taken over is not made,
///   and ``write(_:)`` returns it, so the runtime lets that dialog go.
/// - `gateway_meta`: the application and the schema version; older versions are migrated
///   forward at open under an advisory lock, newer ones refused.
///
/// Every call has a deadline, so an unreachable database is an error (``StateStoreError/Code/unreachable``)
/// the runtime rides out, never a hang. The calls after ``open(host:port:user:password:database:node:leaseSeconds:tls:migrations:logger:)``
/// go through a connection pool that runs while ``run()`` runs.
public final class PostgresStateStore: SharedStateStore {
    public typealias Migration = StateStoreMigration

    /// The schema, oldest step first. Version 2 is the record format of SQLite's version 2;
    /// SQLite's version 3 changes only its own table, so this schema has no version 3.
    public static let migrations: [Migration] = [
        Migration(
            version: 1,
            statements: [
                """
                CREATE TABLE gateway_nodes (
                    name text PRIMARY KEY,
                    ordinal integer NOT NULL UNIQUE,
                    instance text NOT NULL,
                    lease_until timestamptz NOT NULL
                )
                """,
                """
                CREATE TABLE gateway_state (
                    kind text NOT NULL,
                    key text NOT NULL,
                    node text NOT NULL REFERENCES gateway_nodes (name),
                    call_id text,
                    local_tag text,
                    expires bigint,
                    body text NOT NULL,
                    PRIMARY KEY (kind, key)
                )
                """,
                "CREATE INDEX gateway_state_dialog ON gateway_state (call_id, local_tag)",
                "CREATE INDEX gateway_state_node ON gateway_state (node)",
            ]),
        // Record bodies hold event packages in one string (docs/state.md, "What is stored").
        Migration(version: 2, statements: []),
    ]

    /// The application name in `gateway_meta`.
    static let application = "presence-gateway"
    /// The advisory lock a node holds while it migrates the schema and claims its name.
    static let advisoryLock = 0x5047_5753

    public let location: String
    public let node: String
    public let ordinal: Int
    public let leaseSeconds: Int
    /// This process: a node restarted under its name takes the name over, and the process that
    /// held it before (if it still runs) learns so at its next renewal.
    private let instance: String
    private let client: PostgresClient
    private let logger: Logger
    /// Where ``run()`` is: whether it began, was told to end by ``close()``, or ended.
    private struct Running {
        var started = false
        var closed = false
        var ended = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let running = NIOLockedValueBox(Running())
    /// Finished by ``close()``: ``run()`` ends.
    private let closing: AsyncStream<Void>
    private let closer: AsyncStream<Void>.Continuation

    private init(
        location: String, node: String, ordinal: Int, leaseSeconds: Int, instance: String, client: PostgresClient,
        logger: Logger
    ) {
        self.location = location
        self.node = node
        self.ordinal = ordinal
        self.leaseSeconds = leaseSeconds
        self.instance = instance
        self.client = client
        self.logger = logger
        (closing, closer) = AsyncStream.makeStream(of: Void.self)
    }

    /// Connects, checks and migrates the schema, and claims the node's name with a fresh lease, on
    /// one connection that is closed again; the store's other calls need ``run()`` running. A
    /// database that cannot be reached, refuses the credentials, holds another application's
    /// tables or a newer schema is an error naming the database (never the password).
    public static func open(
        host: String, port: Int, user: String, password: String?, database: String, node: String,
        leaseSeconds: Int = 30, tls: PostgresTLS = PostgresTLS(), migrations: [Migration] = migrations,
        logger: Logger = Logger(label: "presence-gateway.state")
    ) async throws(StateStoreError) -> PostgresStateStore {
        let location = "postgres://\(host):\(port)/\(database)"
        var connectionTLS = PostgresConnection.Configuration.TLS.disable
        if let configuration = tls.configuration() {
            // A CA file that cannot be read is said so, not reported as a refused connection.
            do {
                let context = try NIOSSLContext(configuration: configuration)
                connectionTLS = tls.mode == .prefer ? .prefer(context) : .require(context)
            } catch {
                throw StateStoreError(
                    .unreachable, location: location,
                    "sslrootcert \(tls.rootCertificates ?? "(system)"): \(error)")
            }
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: user, password: password, database: database,
            tls: tls.client)
        configuration.options.connectTimeout = .seconds(3)
        configuration.options.maximumConnections = 4
        // One connection, not the pool: a refused connection or password is reported at once,
        // with the server's reason (the pool would retry it until the deadline).
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                configuration: PostgresConnection.Configuration(
                    host: host, port: port, username: user, password: password, database: database,
                    tls: connectionTLS),
                id: 0, logger: logger)
        } catch {
            throw mapped(error, location: location, doing: "cannot open")
        }
        let instance = UUID().uuidString
        let ordinal: Int
        do throws(StateStoreError) {
            ordinal = try await Self.prepare(
                connection, location: location, node: node, instance: instance, leaseSeconds: leaseSeconds,
                migrations: migrations, logger: logger)
        } catch {
            try? await connection.close()
            throw error
        }
        try? await connection.close()
        return PostgresStateStore(
            location: location, node: node, ordinal: ordinal, leaseSeconds: leaseSeconds, instance: instance,
            client: PostgresClient(configuration: configuration, backgroundLogger: logger), logger: logger)
    }

    /// Runs the connection pool until ``close()`` (or cancellation). Under swift-service-lifecycle
    /// the pool also ends at graceful shutdown: run it where that comes after the last write
    /// (``GatewayServer`` runs it among its background work, shut down after the gateway).
    public func run() async {
        let begins = running.withLockedValue { running in
            if !running.closed { running.started = true }
            return running.started
        }
        guard begins else { return }
        await withTaskGroup(of: Void.self) { [client, closing] group in
            group.addTask { await client.run() }
            group.addTask { for await _ in closing {} }
            // The first to end (the pool, or the close) ends the other.
            await group.next()
            group.cancelAll()
        }
        let waiting = running.withLockedValue { running in
            running.ended = true
            defer { running.waiting = [] }
            return running.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Migrates and claims the name in one transaction, under the advisory lock; returns the ordinal.
    private static func prepare(
        _ connection: PostgresConnection, location: String, node: String, instance: String, leaseSeconds: Int,
        migrations: [Migration], logger: Logger
    ) async throws(StateStoreError) -> Int {
        let latest = migrations.map(\.version).max() ?? 0
        return try await Self.deadline(.seconds(30), location: location, doing: "cannot open") {
            try await connection.withTransaction(logger: logger) { connection async throws -> Int in
                try await connection.query("SELECT pg_advisory_xact_lock(\(Self.advisoryLock))", logger: logger)
                let tables = try await connection.query(
                    """
                    SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()
                    AND table_name IN ('gateway_meta', 'gateway_nodes', 'gateway_state')
                    """, logger: logger
                )
                .collect().map { try $0.decode(String.self) }
                var version = 0
                if tables.contains("gateway_meta") {
                    var meta: [String: String] = [:]
                    for try await (name, value) in try await connection.query(
                        "SELECT name, value FROM gateway_meta", logger: logger
                    )
                    .decode((String, String).self) {
                        meta[name] = value
                    }
                    guard meta["application"] == Self.application, let stored = meta["schema"].flatMap(Int.init) else {
                        throw StateStoreError(
                            .foreign, location: location,
                            "gateway_meta is not a presence-gateway's; refusing to change it")
                    }
                    version = stored
                } else if !tables.isEmpty {
                    throw StateStoreError(
                        .foreign, location: location,
                        "tables \(tables.sorted().joined(separator: ", ")) without gateway_meta are not a presence-gateway "
                            + "store; refusing to change them")
                } else {
                    try await connection.query(
                        "CREATE TABLE gateway_meta (name text PRIMARY KEY, value text NOT NULL)", logger: logger)
                    try await connection.query(
                        Self.query(
                            "INSERT INTO gateway_meta (name, value) VALUES ('application', $1), ('schema', '0')",
                            Self.application), logger: logger)
                }
                guard version <= latest else {
                    throw StateStoreError(
                        .newerSchema, location: location,
                        "schema version \(version) was written by a newer presence-gateway; this one knows up to \(latest)"
                    )
                }
                if version > 0, version < latest {
                    let records =
                        try await connection.query("SELECT count(*) FROM gateway_state", logger: logger)
                        .collect().first?.decode(Int.self) ?? 0
                    logger.notice(
                        "\(location): schema version \(version) → \(latest): migrating \(records) records in one transaction"
                    )
                }
                for migration in migrations.sorted(by: { $0.version < $1.version }) where migration.version > version {
                    for statement in migration.statements {
                        try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await connection.query(
                        Self.query(
                            "UPDATE gateway_meta SET value = $1 WHERE name = 'schema'", String(migration.version)),
                        logger: logger)
                }
                let rows = try await connection.query(
                    Self.query(
                        """
                        INSERT INTO gateway_nodes (name, ordinal, instance, lease_until)
                        VALUES ($1, (SELECT coalesce(max(ordinal), 0) + 1 FROM gateway_nodes), $2, now() + make_interval(secs => $3))
                        ON CONFLICT (name) DO UPDATE SET instance = excluded.instance, lease_until = excluded.lease_until
                        RETURNING ordinal
                        """, node, instance, Double(leaseSeconds)), logger: logger
                ).collect()
                guard let ordinal = try rows.first?.decode(Int.self) else {
                    throw StateStoreError(.database, location: location, "cannot claim node \(node)")
                }
                return ordinal
            }
        }
    }

    public func load() async throws(StateStoreError) -> [StateRecord] {
        try await run(.seconds(60), "cannot read") { [client, node, logger] in
            try await Self.records(
                try await client.query(
                    Self.query(
                        "SELECT kind, key, call_id, local_tag, expires, body FROM gateway_state WHERE node = $1", node),
                    logger: logger))
        }
    }

    public func write(_ changes: [StateChange]) async throws(StateStoreError) -> [StateRecordID] {
        guard !changes.isEmpty else { return [] }
        // One change per record, the last (an upsert may not touch a row twice).
        var last: [StateRecordID: Int] = [:]
        for (index, change) in changes.enumerated() { last[change.id] = index }
        var puts: [StateRecord] = []
        var deletes: [StateRecordID] = []
        for (index, change) in changes.enumerated() where last[change.id] == index {
            switch change {
            case .put(let record): puts.append(record)
            case .delete(let kind, let key): deletes.append(StateRecordID(kind: kind, key: key))
            }
        }
        // Ten seconds, and more for a big batch (a takeover, a burst of new pairs).
        let limit = Duration.seconds(10) + .milliseconds(changes.count)
        return try await run(limit, "cannot write") { [client, node, logger, puts, deletes] in
            try await client.withTransaction(logger: logger) { connection async throws -> [StateRecordID] in
                var refused: [StateRecordID] = []
                if !puts.isEmpty {
                    // Another node's record is left as it is (the WHERE of DO UPDATE), and not returned.
                    let kinds = puts.map(\.kind)
                    let keys = puts.map(\.key)
                    let callIDs = puts.map { $0.callID ?? "" }
                    let tags = puts.map { $0.localTag ?? "" }
                    let expires: [Int64] = puts.map { $0.expires ?? -1 }
                    let bodies = puts.map { String(decoding: $0.body, as: UTF8.self) }
                    let rows = try await connection.query(
                        Self.query(
                            """
                            INSERT INTO gateway_state (kind, key, node, call_id, local_tag, expires, body)
                            SELECT k, y, $1, nullif(c, ''), nullif(t, ''), nullif(e, -1), b
                            FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int8[], $7::text[]) AS u (k, y, c, t, e, b)
                            ON CONFLICT (kind, key) DO UPDATE SET call_id = excluded.call_id, local_tag = excluded.local_tag,
                                expires = excluded.expires, body = excluded.body
                            WHERE gateway_state.node = excluded.node
                            RETURNING kind, key
                            """, node, kinds, keys, callIDs, tags, expires, bodies), logger: logger)
                    var written = Set<StateRecordID>()
                    for try await (kind, key) in rows.decode((String, String).self) {
                        written.insert(StateRecordID(kind: kind, key: key))
                    }
                    refused += puts.map { StateRecordID(kind: $0.kind, key: $0.key) }.filter { !written.contains($0) }
                }
                if !deletes.isEmpty {
                    let kinds = deletes.map(\.kind)
                    let keys = deletes.map(\.key)
                    try await connection.query(
                        Self.query(
                            """
                            DELETE FROM gateway_state s USING unnest($1::text[], $2::text[]) AS d (k, y)
                            WHERE s.kind = d.k AND s.key = d.y AND s.node = $3
                            """, kinds, keys, node), logger: logger)
                    let others = try await connection.query(
                        Self.query(
                            "SELECT s.kind, s.key FROM gateway_state s JOIN unnest($1::text[], $2::text[]) AS d (k, y) ON s.kind = d.k AND s.key = d.y",
                            kinds, keys), logger: logger)
                    for try await (kind, key) in others.decode((String, String).self) {
                        refused.append(StateRecordID(kind: kind, key: key))
                    }
                }
                return refused
            }
        }
    }

    public func renewNodeLease() async throws(StateStoreError) -> Bool {
        try await run(.seconds(5), "cannot renew the lease of node \(node)") {
            [client, node, instance, leaseSeconds, logger] in
            let rows = try await client.query(
                Self.query(
                    """
                    UPDATE gateway_nodes SET lease_until = now() + make_interval(secs => $1)
                    WHERE name = $2 AND instance = $3 RETURNING name
                    """, Double(leaseSeconds), node, instance), logger: logger
            ).collect()
            return !rows.isEmpty
        }
    }

    public func releaseNodeLease() async throws(StateStoreError) -> Bool {
        try await run(.seconds(5), "cannot release the lease of node \(node)") { [client, node, instance, logger] in
            let rows = try await client.query(
                Self.query(
                    """
                    UPDATE gateway_nodes SET lease_until = now() - interval '1 second'
                    WHERE name = $1 AND instance = $2 RETURNING name
                    """, node, instance), logger: logger
            ).collect()
            return !rows.isEmpty
        }
    }

    public func heldRecordIDs() async throws(StateStoreError) -> Set<StateRecordID> {
        try await run(.seconds(60), "cannot list the records of node \(node)") { [client, node, logger] in
            var ids: Set<StateRecordID> = []
            let rows = try await client.query(
                Self.query("SELECT kind, key FROM gateway_state WHERE node = $1", node), logger: logger)
            for try await (kind, key) in rows.decode((String, String).self) {
                ids.insert(StateRecordID(kind: kind, key: key))
            }
            return ids
        }
    }

    public func takeOverExpired() async throws(StateStoreError) -> [StateRecord] {
        try await run(.seconds(60), "cannot take over") { [client, node, instance, logger] in
            try await client.withTransaction(logger: logger) { connection async throws -> [StateRecord] in
                // Each expired node to one live node: the one that locks its row first.
                let expired = try await connection.query(
                    Self.query(
                        """
                        SELECT name FROM gateway_nodes
                        WHERE name <> $1 AND lease_until < now()
                          AND EXISTS (SELECT 1 FROM gateway_nodes WHERE name = $1 AND instance = $2 AND lease_until > now())
                        FOR UPDATE SKIP LOCKED
                        """, node, instance), logger: logger
                ).collect().map { try $0.decode(String.self) }
                guard !expired.isEmpty else { return [] }
                return try await Self.records(
                    try await connection.query(
                        Self.query(
                            """
                            UPDATE gateway_state SET node = $1 WHERE node = ANY($2::text[])
                            RETURNING kind, key, call_id, local_tag, expires, body
                            """, node, expired), logger: logger))
            }
        }
    }

    public func dialogOwner(callID: String, localTag: String) async throws(StateStoreError) -> (
        node: String, leaseRemaining: Double
    )? {
        try await run(.seconds(5), "cannot look up dialog \(callID)") { [client, logger] in
            let rows = try await client.query(
                Self.query(
                    """
                    SELECT s.node, greatest(0, extract(epoch FROM n.lease_until - now()))::float8
                    FROM gateway_state s JOIN gateway_nodes n ON n.name = s.node
                    WHERE s.call_id = $1 AND s.local_tag = $2 LIMIT 1
                    """, callID, localTag), logger: logger)
            for try await (node, remaining) in rows.decode((String, Double).self) { return (node, remaining) }
            return nil
        }
    }

    /// One node of the shared database as `GET /leases` shows it (README, "Runtime control").
    public struct NodeLease: Sendable, Hashable, Codable {
        public var node: String
        public var ordinal: Int
        /// When its lease runs out (the database's clock), and the seconds left (0 once past).
        public var leaseUntil: Date
        public var leaseRemaining: Double
        /// Records it holds, and of them the dialogs (records with a Call-ID and local tag).
        public var records: Int
        public var dialogs: Int
    }

    /// Every node's lease and what it holds, in ordinal order, at most `limit` nodes from
    /// `offset`, and how many nodes there are.
    public func nodeLeases(offset: Int, limit: Int) async throws(StateStoreError) -> (total: Int, page: [NodeLease]) {
        try await run(.seconds(5), "cannot read the nodes' leases") { [client, logger] in
            let rows = try await client.query(
                Self.query(
                    """
                    SELECT n.name, n.ordinal, n.lease_until,
                        greatest(0, extract(epoch FROM n.lease_until - now()))::float8,
                        (SELECT count(*) FROM gateway_state s WHERE s.node = n.name),
                        (SELECT count(*) FROM gateway_state s WHERE s.node = n.name AND s.call_id IS NOT NULL)
                    FROM gateway_nodes n ORDER BY n.ordinal OFFSET $1 LIMIT $2
                    """, offset, limit), logger: logger)
            var page: [NodeLease] = []
            for try await (node, ordinal, until, remaining, records, dialogs) in rows.decode(
                (String, Int, Date, Double, Int, Int).self)
            {
                page.append(
                    NodeLease(
                        node: node, ordinal: ordinal, leaseUntil: until, leaseRemaining: remaining, records: records,
                        dialogs: dialogs))
            }
            var total = 0
            let counted = try await client.query("SELECT count(*) FROM gateway_nodes", logger: logger)
            for try await count in counted.decode(Int.self) { total = count }
            return (total, page)
        }
    }

    /// Ends ``run()`` and waits for the pool to close its connections.
    public func close() async {
        closer.finish()
        await withCheckedContinuation { continuation in
            let resumeNow = running.withLockedValue { running in
                guard running.started, !running.ended else {
                    running.closed = true
                    return true
                }
                running.waiting.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    // MARK: -

    /// A statement with its values bound in order (`$1`, `$2`, ...).
    private static func query(_ sql: String, _ values: any PostgresThrowingDynamicTypeEncodable...) throws
        -> PostgresQuery
    {
        var binds = PostgresBindings(capacity: values.count)
        for value in values { try binds.append(value) }
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    private static func records(_ rows: PostgresRowSequence) async throws -> [StateRecord] {
        var records: [StateRecord] = []
        for try await (kind, key, callID, localTag, expires, body) in rows.decode(
            (String, String, String?, String?, Int64?, String).self)
        {
            records.append(
                StateRecord(
                    kind: kind, key: key, callID: callID, localTag: localTag, expires: expires, body: Array(body.utf8)))
        }
        return records
    }

    private func run<T: Sendable>(
        _ limit: Duration, _ doing: String,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws(StateStoreError) -> T {
        try await Self.deadline(limit, location: location, doing: doing, body)
    }

    /// Runs `body`, failing with ``StateStoreError/Code/unreachable`` once `limit` has passed
    /// (the connection pool would otherwise wait for a connection for a minute).
    private static func deadline<T: Sendable>(
        _ limit: Duration, location: String, doing: String,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws(StateStoreError) -> T {
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    try await Task.sleep(for: limit)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let value = first else {
                    throw StateStoreError(.unreachable, location: location, "\(doing): no answer within \(limit)")
                }
                return value
            }
        } catch {
            throw mapped(error, location: location, doing: doing)
        }
    }

    /// A PostgreSQL failure as the store reports it: the server's own message, or that it
    /// cannot be reached.
    static func mapped(_ error: any Error, location: String, doing: String) -> StateStoreError {
        if let error = error as? StateStoreError { return error }
        if let error = error as? PostgresTransactionError {
            // The transaction's own failure first: what the closure threw, else BEGIN or COMMIT.
            if let cause = error.closureError ?? error.beginError ?? error.commitError {
                return mapped(cause, location: location, doing: doing)
            }
        }
        guard let error = error as? PSQLError else {
            return StateStoreError(.unreachable, location: location, "\(doing): cannot reach the database (\(error))")
        }
        if let message = error.serverInfo?[.message] {
            let state = error.serverInfo?[.sqlState].map { " [SQLSTATE \($0)]" } ?? ""
            return StateStoreError(.database, location: location, "\(doing): \(message)\(state)")
        }
        let cause = error.underlying.map { ": \($0)" } ?? ""
        return StateStoreError(
            .unreachable, location: location, "\(doing): cannot reach the database (\(error.code)\(cause))")
    }
}
