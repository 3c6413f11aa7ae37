import Foundation
import PeerTestSupport
import Testing

/// Kamailio 5.6 as an OMA domain with a resource list server (RFC 4662), one instance on
/// 127.0.0.1 that is at once the presence server of oma.example (`presence`, `presence_xml`,
/// authorizing every watcher), its XCAP server (`xcap_server` over `xhttp`, RFC 4825) and its RLS
/// (`rls` with `pua`). The RLS reads a list from the rls-services document (RFC 4826) of the
/// subscriber, in the database the XCAP server writes (`integrated_xcap_server`), and subscribes
/// to each member through `pua`, back into this same instance (`outbound_proxy`), where the
/// presence server serves it; the presence server's NOTIFYs come back to the RLS
/// (`rls_handle_notify`). A document PUT or deleted over XCAP makes the RLS read its lists again
/// (`rls_update_subs`).
///
/// Learned running it on Debian 12's packages:
/// - `rls` keeps its own two tables (`rls_watchers`, `rls_presentity`) in db_text: with
///   db_sqlite the first back-end NOTIFY crashes the worker (rls calls the database's
///   `affected_rows`, which db_sqlite does not provide). Everything else is in one SQLite file.
/// - With `db_mode` 0 the first list NOTIFY carries full state, later ones only what changed
///   (one second apart at most, `waitn_time`), versions counting from 1; a refresh brings a
///   partial one, and an unsubscribe no final NOTIFY.
/// - A SUBSCRIBE to a URI that is no list of the subscriber's reaches the presence server, whose
///   200 has no `Require: eventlist`.
final class RLSKamailio: @unchecked Sendable {
    let sipPort: UInt16
    let xcapPort: UInt16
    let directory: String
    private let process: ChildProcess

    static let modules = "/usr/lib/x86_64-linux-gnu/kamailio/modules/"
    static let schemas = "/usr/share/kamailio/db_sqlite/"
    static let textTables = "/usr/share/kamailio/dbtext/kamailio/"
    static var installed: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/sbin/kamailio") && FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3")
            && ["rls.so", "pua.so", "presence.so", "presence_xml.so", "xcap_server.so", "xhttp.so", "db_sqlite.so", "db_text.so"]
                .allSatisfy { FileManager.default.fileExists(atPath: modules + $0) }
            && FileManager.default.fileExists(atPath: textTables + "rls_watchers")
    }

    /// The XCAP root URI the gateway is configured with.
    var root: String { "http://127.0.0.1:\(xcapPort)/xcap-root" }

    /// What the tests' Kamailio instances share: one UDP worker on 127.0.0.1:`sip` known as
    /// oma.example, no DNS, logs on stderr, the `core` lines given, and the common modules
    /// (transactions, pseudo-variables, xlog, SQLite) before `modules`.
    static func preamble(sip: UInt16, core: [String] = [], modules loaded: [String]) -> String {
        let common = ["kex", "corex", "tm", "sl", "pv", "maxfwd", "textops", "siputils", "xlog", "db_sqlite"]
        return """
            #!KAMAILIO
            debug=2
            log_stderror=yes
            children=1
            auto_aliases=no
            listen=udp:127.0.0.1:\(sip)
            alias=oma.example
            alias=127.0.0.1:\(sip)
            dns=no
            rev_dns=no
            use_dns_cache=no
            \((core + ["mpath=\"\(modules)\""]).joined(separator: "\n"))
            \((common + loaded).map { "loadmodule \"\($0).so\"" }.joined(separator: "\n"))

            """
    }

    static func configuration(sip: UInt16, xcap: UInt16, database: String, textDirectory: String) -> String {
        preamble(
            sip: sip, core: ["tcp_children=1", "listen=tcp:127.0.0.1:\(xcap)", "tcp_accept_no_cl=yes"],
            modules: ["db_text", "xhttp", "xcap_server", "presence", "presence_xml", "pua", "rls"])
            + """
        modparam("tm", "fr_timer", 5000)
        modparam("xcap_server", "db_url", "sqlite://\(database)")
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
        modparam("presence_xml", "integrated_xcap_server", 0)
        modparam("pua", "db_url", "sqlite://\(database)")
        modparam("pua", "db_mode", 0)
        modparam("pua", "check_remote_contact", 0)
        modparam("rls", "db_url", "text://\(textDirectory)")
        modparam("rls", "xcap_db_url", "sqlite://\(database)")
        modparam("rls", "db_mode", 0)
        modparam("rls", "server_address", "sip:rls@127.0.0.1:\(sip)")
        modparam("rls", "outbound_proxy", "sip:127.0.0.1:\(sip)")
        modparam("rls", "integrated_xcap_server", 1)
        modparam("rls", "to_presence_code", 10)
        modparam("rls", "waitn_time", 1)
        modparam("rls", "notifier_poll_rate", 10)
        modparam("rls", "clean_period", 5)
        modparam("rls", "max_expires", 3600)
        request_route {
        \tif (!mf_process_maxfwd_header("10")) { sl_send_reply("483", "Too Many Hops"); exit; }
        \tif (is_method("SUBSCRIBE")) {
        \t\txlog("L_NOTICE", "SUBSCRIBE-LOG ruri=$ru from=$fu src=$si:$sp expires=[$hdr(Expires)] supported=[$hdr(Supported)]\\n");
        \t}
        \tif (is_method("ACK")) { if (t_check_trans()) { t_relay(); } exit; }
        \tif (!is_method("PUBLISH|SUBSCRIBE|NOTIFY")) {
        \t\tif (has_totag()) { sl_send_reply("481", "Call/Transaction Does Not Exist"); exit; }
        \t\tsl_send_reply("405", "Method Not Allowed");
        \t\texit;
        \t}
        \tif (!t_newtran()) { sl_reply_error(); exit; }
        \tif (is_method("PUBLISH")) {
        \t\thandle_publish();
        \t} else if (is_method("SUBSCRIBE")) {
        \t\t# A list to rls; anything else, the RLS's own back-end SUBSCRIBEs too, to presence.
        \t\t$var(rc) = rls_handle_subscribe();
        \t\tif ($var(rc) == 10) { handle_subscribe(); }
        \t} else {
        \t\trls_handle_notify();
        \t}
        \tt_release();
        \texit;
        }
        event_route[xhttp:request] {
        \tif ($hu =~ "^/xcap-root/") {
        \t\t$xcapuri(u=>data) = $hu;
        \t\t$var(xuid) = $xcapuri(u=>xuid);
        \t\tswitch ($rm) {
        \t\tcase "PUT":
        \t\t\txcaps_put("$var(xuid)", "$hu", "$rb");
        \t\t\tif ($xcapuri(u=>auid) =~ "rls-services") { rls_update_subs("$var(xuid)", "presence"); }
        \t\t\texit;
        \t\tcase "GET": xcaps_get("$var(xuid)", "$hu"); exit;
        \t\tcase "DELETE":
        \t\t\txcaps_del("$var(xuid)", "$hu");
        \t\t\tif ($xcapuri(u=>auid) =~ "rls-services") { rls_update_subs("$var(xuid)", "presence"); }
        \t\t\texit;
        \t\t}
        \t}
        \txhttp_reply("404", "Not Found", "text/plain", "no such resource");
        }
        """
    }

    private init(sip: UInt16, xcap: UInt16) async throws {
        sipPort = sip
        xcapPort = xcap
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
        directory = base + "kamailio-rls-\(sip)-\(UInt32.random(in: 0...UInt32.max))"
        let text = directory + "/dbtext"
        try FileManager.default.createDirectory(atPath: text, withIntermediateDirectories: true)
        let database = directory + "/rls.db"
        let config = directory + "/rls.cfg"
        try Self.configuration(sip: sip, xcap: xcap, database: database, textDirectory: text)
            .write(toFile: config, atomically: true, encoding: .utf8)
        let created = try await runProgram(
            "/usr/bin/sqlite3",
            [database, ".read \(Self.schemas)standard-create.sql", ".read \(Self.schemas)presence-create.sql",
             ".read \(Self.schemas)rls-create.sql", "PRAGMA journal_mode=WAL;"], timeout: 10)
        // db_text: the tables the package ships, and a version file of their rows.
        for table in ["rls_watchers", "rls_presentity"] {
            try FileManager.default.copyItem(atPath: Self.textTables + table, toPath: text + "/" + table)
        }
        let versions = try String(contentsOfFile: Self.textTables + "version", encoding: .utf8).split(separator: "\n")
        let kept = versions.prefix(1) + versions.filter {
            $0.hasPrefix("0:version:") || $0.hasPrefix("0:rls_watchers:") || $0.hasPrefix("0:rls_presentity:")
        }
        try (kept.joined(separator: "\n") + "\n").write(toFile: text + "/version", atomically: true, encoding: .utf8)
        guard created.status == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw PeerError("sqlite3 could not create the presence and rls tables: \(created.output)")
        }
        process = try await launchKamailio(
            config: config, directory: directory, port: xcap, udp: false, role: "rls", memory: (shared: 256, private: 32))
        let deadline = Date().addingTimeInterval(10)
        while !LoopbackPorts.isBound(sip, udp: true) {
            guard Date() < deadline else {
                stop()
                throw PeerError("Kamailio (rls) did not bind udp 127.0.0.1:\(sip)")
            }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
    }

    /// Starts it on free ports (another pair is tried when one is taken first, 3 times).
    static func start() async throws -> RLSKamailio {
        guard installed else {
            throw PeerError("Kamailio with rls, pua, presence, xcap_server, db_sqlite and db_text, or sqlite3, is not installed: bash scripts/setup.sh installs them")
        }
        var failure: Error = PeerError("not started")
        for _ in 0..<3 {
            do { return try await RLSKamailio(sip: try LoopbackPorts.free(), xcap: try LoopbackPorts.free()) } catch {
                failure = error
            }
        }
        throw failure
    }

    /// GETs `xui`'s rls-services document: the status and the body.
    func rlsServices(of xui: String) async throws -> (status: Int, body: String) {
        let answer = try await loopbackHTTP(port: Int(xcapPort), "GET", XCAPKamailio.rlsServicesPath(xui))
        return (answer.status, answer.body)
    }

    /// The SUBSCRIBEs Kamailio received so far, one log line each (Request-URI, From, source, Expires).
    var subscribes: [String] { process.output.split(separator: "\n").filter { $0.contains("SUBSCRIBE-LOG") }.map(String.init) }

    var log: String { process.output }

    /// Stops Kamailio (its whole process group) and removes the run directory; idempotent.
    func stop() {
        process.killGroup()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
