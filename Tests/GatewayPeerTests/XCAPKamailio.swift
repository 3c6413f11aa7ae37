import Foundation
import NIOCore
import NIOPosix
import PeerTestSupport
import Prometheus

/// One HTTP/1.1 request to 127.0.0.1:`port` on a connection of its own: the status, the
/// response's header fields (names lowercased) and its body.
func loopbackHTTP(port: Int, _ method: String, _ path: String, body: String = "", headers: [String] = [], host: String = "127.0.0.1") async throws
    -> (status: Int, fields: [String: String], body: String)
{
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .connect(host: "127.0.0.1", port: port) { channel in
            channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
        }
    let text = try await channel.executeThenClose { inbound, outbound in
        let head = ["\(method) \(path) HTTP/1.1", "Host: \(host)", "Connection: close", "Content-Length: \(body.utf8.count)"] + headers
        try await outbound.write(ByteBuffer(string: head.joined(separator: "\r\n") + "\r\n\r\n" + body))
        // Read to the end of the body its Content-Length gives: Kamailio's xhttp keeps the
        // connection open after answering, whatever Connection: close asks.
        var text = ""
        for try await var chunk in inbound {
            text += chunk.readString(length: chunk.readableBytes) ?? ""
            guard let end = text.range(of: "\r\n\r\n") else { continue }
            let length = text[..<end.lowerBound].split(separator: "\r\n")
                .first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
            if let length, text[end.upperBound...].utf8.count >= length { break }
        }
        return text
    }
    let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
    let split = text.range(of: "\r\n\r\n")
    var fields: [String: String] = [:]
    for line in text[..<(split?.lowerBound ?? text.endIndex)].split(separator: "\r\n").dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    return (status, fields, split.map { String(text[$0.upperBound...]) } ?? "")
}

/// The value of one series (`name{labels}`) in `registry`'s Prometheus text.
func metricValue(_ registry: PrometheusCollectorRegistry, _ series: String) -> Double? {
    var buffer: [UInt8] = []
    registry.emit(into: &buffer)
    let line = String(decoding: buffer, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(series + " ") }
    return line.flatMap { Double($0.split(separator: " ").last ?? "") }
}

/// The value of a counter once it reached `target`, or as it is after `seconds`: one the
/// gateway moves after what a test waited for (a message sent, a fetch retried).
func metricValue(_ registry: PrometheusCollectorRegistry, _ series: String, reaching target: Double,
                 within seconds: Double = 2) async -> Double? {
    let end = Date().addingTimeInterval(seconds)
    while (metricValue(registry, series) ?? 0) < target, Date() < end {
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return metricValue(registry, series)
}

/// Kamailio as an XCAP server (RFC 4825): its `xcap_server` module over `xhttp` on a TCP port of
/// 127.0.0.1, keeping documents in the `xcap` table of an SQLite file (db_sqlite) made from the
/// schema Debian's package ships. The test puts, changes and deletes documents over HTTP as a
/// user's XCAP client would. Configuration, schema and database live in a run directory of
/// their own on tmpfs.
final class XCAPKamailio: @unchecked Sendable {
    let port: UInt16
    let directory: String
    private let process: ChildProcess

    static let modules = "/usr/lib/x86_64-linux-gnu/kamailio/modules/"
    static let presenceSchema = "/usr/share/kamailio/db_sqlite/presence-create.sql"
    static var installed: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/sbin/kamailio") && FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3")
            && ["xcap_server.so", "xhttp.so", "db_sqlite.so"].allSatisfy { FileManager.default.fileExists(atPath: modules + $0) }
            && FileManager.default.fileExists(atPath: presenceSchema)
    }

    /// The XCAP root URI the gateway is configured with.
    var root: String { "http://127.0.0.1:\(port)/xcap-root" }

    static func configuration(port: UInt16, database: String) -> String {
        """
        #!KAMAILIO
        debug=2
        log_stderror=yes
        children=1
        tcp_children=1
        auto_aliases=no
        listen=tcp:127.0.0.1:\(port)
        tcp_accept_no_cl=yes
        dns=no
        rev_dns=no
        use_dns_cache=no
        mpath="\(modules)"
        loadmodule "sl.so"
        loadmodule "pv.so"
        loadmodule "db_sqlite.so"
        loadmodule "xhttp.so"
        loadmodule "xcap_server.so"
        modparam("xcap_server", "db_url", "sqlite://\(database)")
        request_route { drop; }
        event_route[xhttp:request] {
        \tif ($hu =~ "^/xcap-root/") {
        \t\t$xcapuri(u=>data) = $hu;
        \t\tswitch ($rm) {
        \t\tcase "PUT": xcaps_put("$xcapuri(u=>xuid)", "$hu", "$rb"); exit;
        \t\tcase "GET": xcaps_get("$xcapuri(u=>xuid)", "$hu"); exit;
        \t\tcase "DELETE": xcaps_del("$xcapuri(u=>xuid)", "$hu"); exit;
        \t\t}
        \t}
        \txhttp_reply("404", "Not Found", "text/plain", "no such resource");
        }
        """
    }

    private init(port: UInt16) async throws {
        self.port = port
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
        directory = base + "kamailio-xcap-\(port)-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let database = directory + "/xcap.db"
        let config = directory + "/xcap.cfg"
        try Self.configuration(port: port, database: database).write(toFile: config, atomically: true, encoding: .utf8)
        // The package's presence schema holds the `xcap` table and its row in `version`, which
        // Kamailio checks at start.
        let version = "CREATE TABLE version (id INTEGER PRIMARY KEY NOT NULL, table_name VARCHAR(32) NOT NULL, "
            + "table_version INTEGER DEFAULT 0 NOT NULL, CONSTRAINT version_table_name_idx UNIQUE (table_name));\n"
        try version.write(toFile: directory + "/version.sql", atomically: true, encoding: .utf8)
        let created = try await runProgram(
            "/usr/bin/sqlite3", [database, ".read \(directory)/version.sql", ".read \(Self.presenceSchema)"], timeout: 10)
        guard created.status == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw PeerError("sqlite3 could not create the xcap table: \(created.output)")
        }
        process = try await launchKamailio(config: config, directory: directory, port: port, udp: false, role: "xcap_server")
    }

    /// Starts it on `port`, or on a free port; another port is tried when that one is taken
    /// first (3 times).
    static func start(port: UInt16? = nil) async throws -> XCAPKamailio {
        guard installed else {
            throw PeerError("Kamailio with xcap_server, xhttp and db_sqlite, or sqlite3, is not installed: bash scripts/setup.sh installs them")
        }
        if let port { return try await XCAPKamailio(port: port) }
        var failure: Error = PeerError("not started")
        for _ in 0..<3 {
            do { return try await XCAPKamailio(port: try LoopbackPorts.free()) } catch { failure = error }
        }
        throw failure
    }

    /// The path of `presentity`'s pres-rules document (RFC 5025 §9.7: `index`).
    static func presRulesPath(_ presentity: String) -> String { "/xcap-root/pres-rules/users/\(presentity)/index" }

    /// PUTs `presentity`'s pres-rules document; the new ETag.
    @discardableResult
    func putPresRules(_ presentity: String, _ document: String) async throws -> String? {
        let answer = try await loopbackHTTP(port: Int(port), "PUT", Self.presRulesPath(presentity), body: document,
                                            headers: ["Content-Type: application/auth-policy+xml"])
        guard answer.status == 200 || answer.status == 201 else { throw PeerError("PUT answered \(answer.status): \(log.suffix(1000))") }
        return answer.fields["etag"]
    }

    func deletePresRules(_ presentity: String) async throws {
        let answer = try await loopbackHTTP(port: Int(port), "DELETE", Self.presRulesPath(presentity))
        guard answer.status == 200 else { throw PeerError("DELETE answered \(answer.status)") }
    }

    /// The path of `xui`'s rls-services document (RFC 4826 §4.4.7: `index`).
    static func rlsServicesPath(_ xui: String) -> String { "/xcap-root/rls-services/users/\(xui)/index" }

    /// PUTs `xui`'s rls-services document (RFC 4826 §4).
    func putRLSServices(_ xui: String, _ document: String) async throws {
        let answer = try await loopbackHTTP(port: Int(port), "PUT", Self.rlsServicesPath(xui), body: document,
                                            headers: ["Content-Type: application/rls-services+xml"])
        guard answer.status == 200 || answer.status == 201 else { throw PeerError("PUT answered \(answer.status): \(log.suffix(1000))") }
    }

    func deleteRLSServices(_ xui: String) async throws {
        let answer = try await loopbackHTTP(port: Int(port), "DELETE", Self.rlsServicesPath(xui))
        guard answer.status == 200 else { throw PeerError("DELETE answered \(answer.status)") }
    }

    var log: String { process.output }

    /// Stops Kamailio (its whole process group) and removes the run directory; idempotent.
    func stop() {
        process.killGroup()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
