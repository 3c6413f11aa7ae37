import Foundation
import PeerTestSupport
import Testing

/// Kamailio 5.6 as an OMA presence server that authenticates the gateway (PacketCable Presence:
/// the presence server authenticates SIP requests): `presence` and `presence_xml` for
/// oma.example, and `auth` with `auth_db` over a `subscriber` table in an SQLite file the test
/// writes itself (the schema Debian's package ships, one row: `gateway` and its password).
///
/// Requests from the gateway's OMA listener (`gatewayPort`) are challenged: a SUBSCRIBE with
/// 401 (`www_challenge`, WWW-Authenticate), a PUBLISH with 407 (`proxy_challenge`,
/// Proxy-Authenticate), both `qop=auth` with `algorithm` (MD5 or SHA-256). `nonce_count` makes
/// Kamailio check that each use of a nonce has a higher `nc` than the last (RFC 7616 §3.4).
/// Anything else (the test's sipp publishers) is served without a challenge. Every PUBLISH and
/// SUBSCRIBE is logged with its CSeq, its `P-Asserted-Identity` and whether it carried
/// credentials; every challenge and every accepted credential is logged too.
final class AuthKamailio: @unchecked Sendable {
    let sipPort: UInt16
    let directory: String
    let database: String
    private let process: ChildProcess

    static let modules = "/usr/lib/x86_64-linux-gnu/kamailio/modules/"
    static let schemas = "/usr/share/kamailio/db_sqlite/"
    static var installed: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/sbin/kamailio")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3")
            && ["auth.so", "auth_db.so", "presence.so", "presence_xml.so", "db_sqlite.so"]
                .allSatisfy { FileManager.default.fileExists(atPath: modules + $0) }
            && FileManager.default.fileExists(atPath: schemas + "auth_db-create.sql")
    }

    static func configuration(sip: UInt16, gatewayPort: UInt16, database: String, algorithm: String) -> String {
        RLSKamailio.preamble(sip: sip, modules: ["auth", "auth_db", "presence", "presence_xml"])
            + """
        modparam("tm", "fr_timer", 5000)
        modparam("auth", "algorithm", "\(algorithm)")
        modparam("auth", "nonce_count", 1)
        modparam("auth", "nonce_expire", 300)
        modparam("auth_db", "db_url", "sqlite://\(database)")
        modparam("auth_db", "calculate_ha1", 1)
        modparam("auth_db", "password_column", "password")
        modparam("auth_db", "use_domain", 0)
        modparam("presence", "db_url", "sqlite://\(database)")
        modparam("presence", "server_address", "sip:presence@127.0.0.1:\(sip)")
        modparam("presence", "subs_db_mode", 2)
        modparam("presence", "publ_cache", 1)
        modparam("presence", "clean_period", 5)
        modparam("presence", "max_expires", 3600)
        modparam("presence", "min_expires", 0)
        modparam("presence", "subs_respond_200", 1)
        modparam("presence_xml", "db_url", "sqlite://\(database)")
        modparam("presence_xml", "force_active", 1)
        request_route {
        \tif (!mf_process_maxfwd_header("10")) { sl_send_reply("483", "Too Many Hops"); exit; }
        \tif (is_method("PUBLISH|SUBSCRIBE")) {
        \t\txlog("L_NOTICE", "REQ-LOG $rm ruri=$ru callid=$ci cseq=$cs src=$si:$sp expires=[$hdr(Expires)] pai=[$hdr(P-Asserted-Identity)] www=[$hdr(Authorization)] proxy=[$hdr(Proxy-Authorization)]\\n");
        \t}
        \tif (is_method("ACK")) { if (t_check_trans()) { t_relay(); } exit; }
        \t# A retransmission (the 2xx was slow on a loaded machine) is answered from its
        \t# transaction before any check: authenticated again, its nc would be one already
        \t# seen (nonce_count) and draw a challenge the gateway never acts on.
        \tt_check_trans();
        \tif (!is_method("PUBLISH|SUBSCRIBE|NOTIFY")) {
        \t\tif (has_totag()) { sl_send_reply("481", "Call/Transaction Does Not Exist"); exit; }
        \t\tsl_send_reply("405", "Method Not Allowed");
        \t\texit;
        \t}
        \tif ($sp == \(gatewayPort) && is_method("SUBSCRIBE")) {
        \t\tif (!www_authenticate("oma.example", "subscriber")) {
        \t\t\txlog("L_NOTICE", "CHALLENGE-LOG 401 $rm callid=$ci cseq=$cs\\n");
        \t\t\twww_challenge("oma.example", "1");
        \t\t\texit;
        \t\t}
        \t\txlog("L_NOTICE", "AUTH-OK-LOG $rm callid=$ci cseq=$cs user=$au\\n");
        \t\tconsume_credentials();
        \t}
        \tif ($sp == \(gatewayPort) && is_method("PUBLISH")) {
        \t\tif (!proxy_authenticate("oma.example", "subscriber")) {
        \t\t\txlog("L_NOTICE", "CHALLENGE-LOG 407 $rm callid=$ci cseq=$cs\\n");
        \t\t\tproxy_challenge("oma.example", "1");
        \t\t\texit;
        \t\t}
        \t\txlog("L_NOTICE", "AUTH-OK-LOG $rm callid=$ci cseq=$cs user=$au\\n");
        \t\tconsume_credentials();
        \t}
        \tif (!t_newtran()) { sl_reply_error(); exit; }
        \tif (is_method("PUBLISH")) {
        \t\thandle_publish();
        \t} else if (is_method("SUBSCRIBE")) {
        \t\thandle_subscribe();
        \t}
        \tt_release();
        \texit;
        }
        """
    }

    private init(sip: UInt16, gatewayPort: UInt16, password: String, algorithm: String) async throws {
        sipPort = sip
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
        directory = base + "kamailio-auth-\(sip)-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        database = directory + "/auth.db"
        let config = directory + "/auth.cfg"
        try Self.configuration(sip: sip, gatewayPort: gatewayPort, database: database, algorithm: algorithm)
            .write(toFile: config, atomically: true, encoding: .utf8)
        let created = try await runProgram(
            "/usr/bin/sqlite3",
            [database, ".read \(Self.schemas)standard-create.sql", ".read \(Self.schemas)auth_db-create.sql",
             ".read \(Self.schemas)presence-create.sql",
             "INSERT INTO subscriber (username, domain, password) VALUES ('gateway', 'oma.example', '\(password)');",
             "PRAGMA journal_mode=WAL;"], timeout: 10)
        guard created.status == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw PeerError("sqlite3 could not create the subscriber and presence tables: \(created.output)")
        }
        process = try await launchKamailio(config: config, directory: directory, port: sip, udp: true, role: "auth")
    }

    /// Starts it on a free port, challenging what comes from the gateway's `gatewayPort`, with
    /// `password` for the user `gateway` (another port is tried when one is taken first, 3 times).
    static func start(gatewayPort: UInt16, password: String, algorithm: String) async throws -> AuthKamailio {
        guard installed else {
            throw PeerError("Kamailio with auth, auth_db, presence and db_sqlite, or sqlite3, is not installed: bash scripts/setup.sh installs them")
        }
        var failure: Error = PeerError("not started")
        for _ in 0..<3 {
            do {
                return try await AuthKamailio(
                    sip: try LoopbackPorts.free(), gatewayPort: gatewayPort, password: password, algorithm: algorithm)
            } catch {
                failure = error
            }
        }
        throw failure
    }

    /// The log lines of `kind` (REQ-LOG, CHALLENGE-LOG, AUTH-OK-LOG) so far.
    func lines(_ kind: String) -> [String] {
        process.output.split(separator: "\n").filter { $0.contains(kind) }.map(String.init)
    }

    /// The CSeq a log line names.
    static func cseq(_ line: String) -> Int? {
        line.components(separatedBy: "cseq=").dropFirst().first.flatMap { Int($0.prefix { $0.isNumber }) }
    }

    /// The Call-ID a log line names.
    static func callID(_ line: String) -> String? {
        line.components(separatedBy: "callid=").dropFirst().first.map { String($0.prefix { $0 != " " }) }
    }

    /// Rows of the presentity table for `user` (the publications Kamailio holds).
    func publications(of user: String) async throws -> Int {
        let answer = try await runProgram(
            "/usr/bin/sqlite3", [database, "SELECT count(*) FROM presentity WHERE username = '\(user)';"], timeout: 10)
        return Int(answer.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    var log: String { process.output }

    /// Stops Kamailio (its whole process group) and removes the run directory; idempotent.
    func stop() {
        process.killGroup()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
