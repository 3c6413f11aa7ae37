import Foundation

/// A private PostgreSQL cluster for one test: `initdb` into a temporary directory, the server on
/// a free port of 127.0.0.1 only (its Unix socket in that directory), a user `gateway` with a
/// password (SCRAM over TCP), stopped and removed by ``remove()``. Debian's PostgreSQL 15
/// (scripts/setup.sh); as root, its programs run as the `postgres` user, which initdb requires.
public final class PostgresCluster: @unchecked Sendable {
    public static let user = "gateway"
    public static let password = "state-secret"

    public let directory: String
    public private(set) var port: UInt16

    /// The directory holding initdb and pg_ctl, if PostgreSQL is installed.
    public static var binaries: String? {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: >) where FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\(version)/bin/initdb") {
            return "/usr/lib/postgresql/\(version)/bin"
        }
        return nil
    }

    public static var installed: Bool { binaries != nil }

    private init(directory: String, port: UInt16) {
        self.directory = directory
        self.port = port
    }

    /// Creates the cluster and starts it.
    public static func start() async throws -> PostgresCluster {
        guard binaries != nil else { throw PeerError("PostgreSQL is not installed (bash scripts/setup.sh installs it)") }
        let directory = NSTemporaryDirectory() + "pg-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "\(password)\n".write(toFile: directory + "/pwfile", atomically: true, encoding: .utf8)
        if getuid() == 0 {
            try await runProgram("/bin/chown", ["-R", "postgres:postgres", directory])
        }
        try await Self.run("initdb", ["-D", directory + "/data", "-U", user, "--pwfile", directory + "/pwfile", "--auth-local=trust",
                                "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"])
        let cluster = PostgresCluster(directory: directory, port: 0)
        // The port may be lost to a program binding port 0 between choosing it and the server
        // binding it: then another.
        for attempt in 1...3 {
            do {
                try await cluster.startServer(on: try LoopbackPorts.free())
                return cluster
            } catch where attempt < 3 && cluster.log.contains("could not bind") {
                continue
            }
        }
        return cluster
    }

    /// Starts the server again (after ``stop(immediately:)``), on the same port unless another.
    public func startServer(on port: UInt16? = nil) async throws {
        if let port { self.port = port }
        let options = "-p \(self.port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=40"
        try await Self.run("pg_ctl", ["-D", directory + "/data", "-l", directory + "/server.log", "-o", options, "-w", "-t", "30", "start"])
    }

    /// A new self-signed certificate for 127.0.0.1 (PEM), its key beside it, both readable by the
    /// server; the certificate's path (the CA a client trusts). `name` tells two apart.
    public func makeCertificate(_ name: String) async throws -> String {
        let (certificate, key) = (directory + "/\(name).crt", directory + "/\(name).key")
        let made = try await runProgram("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
        ])
        guard made.status == 0 else { throw PeerError("openssl: \(made.output)") }
        _ = try await runProgram("/bin/chmod", ["600", key])
        if getuid() == 0 { _ = try await runProgram("/bin/chown", ["postgres:postgres", certificate, key]) }
        return certificate
    }

    /// Serves TLS with the certificate `name` (``makeCertificate(_:)``) and refuses TCP
    /// connections without it, then restarts the server.
    public func requireTLS(certificate name: String) async throws {
        let configuration = directory + "/data/postgresql.conf"
        let settings = "\nssl = on\nssl_cert_file = '\(directory)/\(name).crt'\nssl_key_file = '\(directory)/\(name).key'\n"
        try (try String(contentsOfFile: configuration, encoding: .utf8) + settings)
            .write(toFile: configuration, atomically: false, encoding: .utf8)
        let hba = directory + "/data/pg_hba.conf"
        let rules = try String(contentsOfFile: hba, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("host ") ? "hostssl " + $0.dropFirst(5) : String($0) }
        try rules.joined(separator: "\n").write(toFile: hba, atomically: false, encoding: .utf8)
        await stop()
        try await startServer()
    }

    /// Stops the server: `immediately` as if it crashed (no checkpoint, connections cut).
    public func stop(immediately: Bool = false) async {
        _ = try? await Self.run("pg_ctl", ["-D", directory + "/data", "-m", immediately ? "immediate" : "fast", "-w", "-t", "30", "stop"])
    }

    /// Runs `body` with a new cluster and removes the cluster afterwards, also when `body` throws.
    public static func with<T>(_ body: (PostgresCluster) async throws -> T) async throws -> T {
        let cluster = try await start()
        return try await withCleanup { try await body(cluster) } cleanup: { await cluster.remove() }
    }

    /// Stops the server and removes the cluster.
    public func remove() async {
        await stop(immediately: true)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Creates a database for one test and returns its name.
    public func createDatabase() async throws -> String {
        let name = "gw\(UInt32.random(in: 0...UInt32.max))"
        try await sql("CREATE DATABASE \(name)", database: "postgres")
        return name
    }

    /// Runs SQL through psql over TCP; returns what it printed (unaligned, tuples only).
    @discardableResult
    public func sql(_ statement: String, database: String) async throws -> String {
        let result = try await runProgram("/usr/bin/psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port),
                                                      "-U", Self.user, "-d", database, "-c", statement],
                                    environment: ["PGPASSWORD": Self.password])
        guard result.status == 0 else { throw PeerError("psql \(statement): \(result.output)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    public func url(_ database: String) -> String { "postgres://\(Self.user):\(Self.password)@127.0.0.1:\(port)/\(database)" }

    public var log: String { (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "" }

    private static func run(_ program: String, _ arguments: [String]) async throws {
        guard let binaries else { throw PeerError("PostgreSQL is not installed") }
        let (path, argv) = getuid() == 0
            ? ("/usr/sbin/runuser", ["-u", "postgres", "--", "\(binaries)/\(program)"] + arguments)
            : ("\(binaries)/\(program)", arguments)
        let result = try await runProgram(path, argv, timeout: 60)
        guard result.status == 0 else { throw PeerError("\(program) \(arguments.joined(separator: " ")): \(result.output)") }
    }
}
