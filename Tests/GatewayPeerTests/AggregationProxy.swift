import Foundation
import PeerTestSupport

/// An OMA Aggregation Proxy (PacketCable Presence §6.1.7, §6.2.18): Apache httpd from Debian's
/// `apache2`, configured here, on a TCP port of 127.0.0.1 in front of an XCAP server. It
/// authenticates every request under `/xcap-root/` with HTTP Digest (`mod_auth_digest`, the
/// default method of §6.7: MD5, `qop=auth`, nonces that go stale after `nonceLifetime` seconds),
/// asserts the authenticated identity to the XDMS in `X-XCAP-Asserted-Identity`, and relays the
/// request there (`mod_proxy_http`). Its access log gives each request line, status and user.
final class AggregationProxy: @unchecked Sendable {
    let port: UInt16
    let directory: String
    let realm: String
    private let process: ChildProcess

    static let binary = "/usr/sbin/apache2"
    static let modules = "/usr/lib/apache2/modules/"
    static var installed: Bool {
        FileManager.default.isExecutableFile(atPath: binary)
            && ["mod_auth_digest.so", "mod_proxy.so", "mod_proxy_http.so", "mod_authn_file.so", "mod_headers.so"]
            .allSatisfy { FileManager.default.fileExists(atPath: modules + $0) }
    }

    /// The XCAP root the gateway is configured with: the proxy's.
    var root: String { "http://127.0.0.1:\(port)/xcap-root" }

    /// What every httpd the tests run shares: on 127.0.0.1:`port`, everything it writes in
    /// `directory`, the access log as "%m %U %>s %u" (``logged(_:)``), the Digest-capable
    /// `modules` loaded (mpm_event and the authn/authz ones besides), as nobody.
    static func base(port: UInt16, directory: String, modules: [String], logLevel: String = "warn") -> String {
        let loaded = ["mpm_event", "authn_core", "authn_file", "authz_core", "authz_user", "auth_digest"] + modules
        return """
            ServerRoot "\(directory)"
            ServerName 127.0.0.1
            Listen 127.0.0.1:\(port)
            PidFile "\(directory)/httpd.pid"
            DefaultRuntimeDir "\(directory)"
            Mutex file:\(directory)
            ErrorLog "\(directory)/error.log"
            LogLevel \(logLevel)
            LogFormat "%m %U %>s %u" logged
            CustomLog "\(directory)/access.log" logged
            \(loaded.map { "LoadModule \($0)_module \(Self.modules)mod_\($0).so" }.joined(separator: "\n"))
            User nobody
            Group nogroup
            ServerLimit 2
            ThreadsPerChild 8
            MaxRequestWorkers 16

            """
    }

    static func configuration(port: UInt16, backend: UInt16, directory: String, realm: String, nonceLifetime: Int) -> String {
        base(port: port, directory: directory, modules: ["proxy", "proxy_http", "headers"], logLevel: "warn auth_digest:info")
            + """
            <Location "/xcap-root/">
              AuthType Digest
              AuthName "\(realm)"
              AuthDigestProvider file
              AuthUserFile "\(directory)/digest-users"
              AuthDigestNonceLifetime \(nonceLifetime)
              Require valid-user
              RequestHeader set X-XCAP-Asserted-Identity "\\"sip:%{REMOTE_USER}e\\""
              ProxyPass "http://127.0.0.1:\(backend)/xcap-root/" nocanon retry=0
            </Location>
            """
    }

    private init(port: UInt16, backend: UInt16, users: [String: String], realm: String, nonceLifetime: Int) async throws {
        self.port = port
        self.realm = realm
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
        directory = base + "aggregation-proxy-\(port)-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try await Self.htdigest(users, realm: realm).write(toFile: directory + "/digest-users", atomically: true, encoding: .utf8)
        process = try await Self.run(
            Self.configuration(port: port, backend: backend, directory: directory, realm: realm, nonceLifetime: nonceLifetime),
            directory: directory, port: port)
    }

    /// htdigest's file for `users` (name → password): user:realm:MD5(user:realm:password), made
    /// with coreutils' md5sum.
    static func htdigest(_ users: [String: String], realm: String) async throws -> String {
        var lines: [String] = []
        for (user, password) in users.sorted(by: { $0.key < $1.key }) {
            let hashed = try await runProgram("/bin/sh", ["-c", #"printf %s "$0" | md5sum"#, "\(user):\(realm):\(password)"], timeout: 10)
            guard hashed.status == 0, let digest = hashed.output.split(separator: " ").first else {
                throw PeerError("md5sum: \(hashed.output)")
            }
            lines.append("\(user):\(realm):\(digest)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Checks `configuration` (`apache2 -t`) and runs httpd with it in `directory` until it
    /// listens on `port` (10 s); the directory is removed when it does not.
    static func run(_ configuration: String, directory: String, port: UInt16) async throws -> ChildProcess {
        let config = directory + "/httpd.conf"
        try configuration.write(toFile: config, atomically: true, encoding: .utf8)
        let checked = try await runProgram(Self.binary, ["-t", "-f", config], timeout: 20)
        guard checked.status == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw PeerError("apache2 -t refused the configuration: \(checked.output)")
        }
        let process = try ChildProcess("/usr/bin/setsid", [Self.binary, "-f", config, "-DFOREGROUND"])
        let deadline = Date().addingTimeInterval(10)
        while !LoopbackPorts.accepts(port) {
            if process.poll() != nil || Date() > deadline {
                let output = process.output + ((try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? "")
                process.killGroup()
                try? FileManager.default.removeItem(atPath: directory)
                throw PeerError("apache2 did not listen on 127.0.0.1:\(port): \(output)")
            }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        return process
    }

    /// Starts it on a free port in front of the XCAP server on `backend`, with the Digest
    /// `users` (name → password) in `realm`; another port is tried when that one is taken first
    /// (3 times).
    static func start(backend: UInt16, users: [String: String], realm: String = "xdm.oma.example",
                      nonceLifetime: Int = 300) async throws -> AggregationProxy {
        guard installed else {
            throw PeerError("apache2 with mod_auth_digest and mod_proxy_http is not installed: bash scripts/setup.sh installs it")
        }
        var failure: Error = PeerError("not started")
        for _ in 0..<3 {
            do {
                return try await AggregationProxy(port: try LoopbackPorts.free(), backend: backend, users: users, realm: realm,
                                                  nonceLifetime: nonceLifetime)
            } catch { failure = error }
        }
        throw failure
    }

    /// One line of the access log.
    struct Logged: Equatable {
        var method: String
        var path: String
        var status: Int
        /// The user Digest authenticated; nil when none was.
        var user: String?
    }

    /// The requests answered so far, in order.
    var requests: [Logged] { Self.logged(directory + "/access.log") }

    /// The requests of an access log in the "%m %U %>s %u" format, in order.
    static func logged(_ path: String) -> [Logged] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count == 4, let status = Int(fields[2]) else { return nil }
            return Logged(method: fields[0], path: fields[1], status: status, user: fields[3] == "-" ? nil : fields[3])
        }
    }

    var errorLog: String { (try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? "" }

    /// Stops httpd (its whole process group) and removes the run directory; idempotent.
    func stop() {
        process.killGroup()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
