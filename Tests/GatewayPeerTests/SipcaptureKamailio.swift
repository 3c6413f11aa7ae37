import Foundation
import PeerTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Kamailio as a HEP v3 collector: its `sipcapture` module (`hep_capture_on`) takes HEP packets
/// on a UDP port of 127.0.0.1, runs each carried SIP message through `sip_capture()` and stores
/// it in the `sip_capture` table of an SQLite file (db_sqlite), which the test reads back with
/// the sqlite3 program. Configuration, schema and database are written to a run directory of
/// its own on tmpfs.
final class SipcaptureKamailio: @unchecked Sendable {
    let port: UInt16
    let directory: String
    var database: String { directory + "/capture.db" }
    /// `capture_node`: sipcapture stores `NODE:AGENT-ID` in the `node` column.
    static let node = "gw-test"
    private let process: ChildProcess

    static let modules = "/usr/lib/x86_64-linux-gnu/kamailio/modules/"
    static var installed: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/sbin/kamailio") && FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3")
            && FileManager.default.fileExists(atPath: modules + "sipcapture.so") && FileManager.default.fileExists(atPath: modules + "db_sqlite.so")
    }

    /// The columns sipcapture writes (`sipcapture.c`, `db_insert`), no NOT NULL constraints:
    /// db_sqlite stores an empty header as NULL. WAL, so that the test's reads never make an
    /// insert fail with "database is locked" (see ``rows()``).
    static let schema = """
        CREATE TABLE sip_capture (
          id INTEGER PRIMARY KEY AUTOINCREMENT, date TEXT, micro_ts INTEGER, method TEXT, reply_reason TEXT, ruri TEXT,
          ruri_user TEXT, ruri_domain TEXT, from_user TEXT, from_domain TEXT, from_tag TEXT, to_user TEXT, to_domain TEXT,
          to_tag TEXT, pid_user TEXT, contact_user TEXT, auth_user TEXT, callid TEXT, callid_aleg TEXT, via_1 TEXT,
          via_1_branch TEXT, cseq TEXT, diversion TEXT, reason TEXT, content_type TEXT, auth TEXT, user_agent TEXT,
          source_ip TEXT, source_port INTEGER, destination_ip TEXT, destination_port INTEGER, contact_ip TEXT,
          contact_port INTEGER, originator_ip TEXT, originator_port INTEGER, correlation_id TEXT, custom_field1 TEXT,
          custom_field2 TEXT, custom_field3 TEXT, proto INTEGER, family INTEGER, rtp_stat TEXT, type INTEGER, node TEXT,
          msg TEXT);
        PRAGMA journal_mode=WAL;
        """

    static func configuration(port: UInt16, database: String) -> String {
        """
        #!KAMAILIO
        debug=2
        log_stderror=yes
        children=1
        disable_tcp=yes
        auto_aliases=no
        listen=udp:127.0.0.1:\(port)
        dns=no
        rev_dns=no
        use_dns_cache=no
        mpath="\(modules)"
        loadmodule "db_sqlite.so"
        loadmodule "sipcapture.so"
        modparam("sipcapture", "db_url", "sqlite://\(database)")
        modparam("sipcapture", "capture_on", 1)
        modparam("sipcapture", "hep_capture_on", 1)
        modparam("sipcapture", "capture_node", "\(node)")
        request_route {
        \tsip_capture();
        \tdrop;
        }
        onreply_route {
        \tsip_capture();
        \tdrop;
        }
        """
    }

    private init(port: UInt16) async throws {
        self.port = port
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
        directory = base + "kamailio-hep-\(port)-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let config = directory + "/sipcapture.cfg"
        try Self.configuration(port: port, database: directory + "/capture.db").write(toFile: config, atomically: true, encoding: .utf8)
        try Self.schema.write(toFile: directory + "/schema.sql", atomically: true, encoding: .utf8)
        let created = try await runProgram("/usr/bin/sqlite3", [directory + "/capture.db", ".read \(directory)/schema.sql"], timeout: 10)
        guard created.status == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw PeerError("sqlite3 could not create the sip_capture table: \(created.output)")
        }
        process = try await launchKamailio(config: config, directory: directory, port: port, udp: true, role: "sipcapture")
    }

    /// Starts it on a free port; another port is tried when that one is taken first (3 times).
    static func start() async throws -> SipcaptureKamailio {
        guard installed else {
            throw PeerError("Kamailio with sipcapture and db_sqlite, or sqlite3, is not installed: bash scripts/setup.sh installs them")
        }
        var failure: Error = PeerError("not started")
        for _ in 0..<3 {
            do { return try await SipcaptureKamailio(port: try LoopbackPorts.free()) } catch { failure = error }
        }
        throw failure
    }

    /// One stored message.
    struct Row: CustomStringConvertible {
        var source: String
        var destination: String
        var proto: Int
        var family: Int
        /// The request's method, or the response's status code.
        var method: String
        var callID: String
        var cseq: String
        var correlationID: String
        var node: String
        var microseconds: Int

        var description: String { "\(source) -> \(destination) proto \(proto) \(method) \(callID) \(cseq)" }
    }

    /// Every stored message, in arrival order.
    ///
    /// Nothing is read before Kamailio has written its first row (its write-ahead log has a
    /// frame): db_sqlite sets no busy timeout, so a lock the reader takes while Kamailio opens the
    /// database makes that insert fail with "database is locked" and the row is lost. The reader
    /// taking such a lock is the last connection closing (it checkpoints under an exclusive lock)
    /// or the first opening (it builds the WAL index); once Kamailio has written, its connection
    /// holds the database open and the index is built, and WAL readers never block its writes.
    func rows() async throws -> [Row] {
        let log = (try? FileManager.default.attributesOfItem(atPath: database + "-wal")[.size] as? Int) ?? 0
        guard log > 0 else { return [] }
        let query = "SELECT source_ip, source_port, destination_ip, destination_port, proto, family, method, callid, cseq, "
            + "correlation_id, node, micro_ts FROM sip_capture ORDER BY id"
        let (status, output) = try await runProgram("/usr/bin/sqlite3", ["-separator", "\t", database, query], timeout: 10)
        guard status == 0 else { throw PeerError("sqlite3: \(output)") }
        return output.split(separator: "\n").compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count == 12 else { return nil }
            return Row(source: "\(f[0]):\(f[1])", destination: "\(f[2]):\(f[3])", proto: Int(f[4]) ?? -1, family: Int(f[5]) ?? -1,
                       method: f[6], callID: f[7], cseq: f[8], correlationID: f[9], node: f[10], microseconds: Int(f[11]) ?? 0)
        }
    }

    /// Kamailio's log (its errors, if it refused a packet).
    var log: String { process.output }

    /// Stops Kamailio (SIGTERM to its group, then SIGKILL to whatever of it is left) and removes
    /// the run directory; idempotent.
    func stop() {
        process.killGroup()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Checks `config` with `kamailio -c`, starts Kamailio on it in the foreground (`-DD`, its
/// children forked) and waits until it has bound 127.0.0.1:`port` (UDP), or listens on it (TCP). setsid (which execs in place:
/// the spawned child leads no group) gives Kamailio a process group of its own: its main process
/// signals its whole group on exit, which must not be the test runner's, and `killGroup()` ends
/// every process of it. On failure the run `directory` is removed and the error names `role`.
/// `memory`: shared and private memory in MB (`-m`, `-M`).
func launchKamailio(
    config: String, directory: String, port: UInt16, udp: Bool, role: String, memory: (shared: Int, private: Int) = (32, 8)
) async throws -> ChildProcess {
    let checked = try await runProgram("/usr/sbin/kamailio", ["-c", "-f", config], timeout: 20)
    guard checked.status == 0 else {
        try? FileManager.default.removeItem(atPath: directory)
        throw PeerError("kamailio -c refused the \(role) configuration: \(checked.output)")
    }
    let process = try ChildProcess("/usr/bin/setsid", ["/usr/sbin/kamailio", "-f", config, "-DD", "-E", "-m", String(memory.shared), "-M", String(memory.private)])
    let deadline = Date().addingTimeInterval(10)
    while udp ? !LoopbackPorts.isBound(port, udp: true) : !LoopbackPorts.accepts(port) {
        if process.poll() != nil || Date() > deadline {
            let output = process.output
            process.killGroup()
            try? FileManager.default.removeItem(atPath: directory)
            throw PeerError("Kamailio (\(role)) did not bind 127.0.0.1:\(port): \(output)")
        }
        try await Task.sleep(nanoseconds: 50_000_000)
    }
    return process
}
