import Foundation
import PeerTestSupport

/// An OMA content server (PacketCable Presence §6.1.8: it "allows the Presence Source and the
/// Presence Server to store MIME objects, and the Watcher and the Presence Server to retrieve"
/// them): Apache httpd from Debian's `apache2` with WebDAV (`mod_dav_fs`) on `/presence/`, on a
/// TCP port of 127.0.0.1. Anyone may GET; PUT and DELETE need HTTP Digest (`mod_auth_digest`).
/// `.xml` objects are served as `application/pidf+xml`. Its access log gives each request.
final class ContentServer: @unchecked Sendable {
    let port: UInt16
    let directory: String
    private let process: ChildProcess

    static var installed: Bool {
        AggregationProxy.installed
            && ["mod_dav.so", "mod_dav_fs.so", "mod_mime.so"].allSatisfy {
                FileManager.default.fileExists(atPath: AggregationProxy.modules + $0)
            }
    }

    /// The URL the gateway's `content-server:` names.
    var url: String { "http://127.0.0.1:\(port)/presence" }
    /// Where the objects are kept on disk.
    var documents: String { directory + "/htdocs/presence" }

    static func configuration(port: UInt16, directory: String, realm: String) -> String {
        AggregationProxy.base(port: port, directory: directory, modules: ["dav", "dav_fs", "mime"])
            + """
            TypesConfig /dev/null
            AddType application/pidf+xml .xml
            DocumentRoot "\(directory)/htdocs"
            DavLockDB "\(directory)/lock/davlock"
            <Directory "\(directory)/htdocs/presence">
              Dav On
              AuthType Digest
              AuthName "\(realm)"
              AuthDigestProvider file
              AuthUserFile "\(directory)/digest-users"
              <RequireAny>
                Require method GET HEAD OPTIONS
                Require valid-user
              </RequireAny>
            </Directory>
            """
    }

    private init(port: UInt16, users: [String: String], realm: String) async throws {
        self.port = port
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
        directory = base + "content-server-\(port)-\(UInt32.random(in: 0...UInt32.max))"
        // httpd runs as nobody: it writes the objects and its lock database there.
        for path in [directory + "/htdocs/presence", directory + "/lock"] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: path)
        }
        try await AggregationProxy.htdigest(users, realm: realm)
            .write(toFile: directory + "/digest-users", atomically: true, encoding: .utf8)
        process = try await AggregationProxy.run(
            Self.configuration(port: port, directory: directory, realm: realm), directory: directory, port: port)
    }

    /// Starts it on a free port with the Digest `users` (name → password) for writing; another
    /// port is tried when that one is taken first (3 times).
    static func start(users: [String: String], realm: String = "content.oma.example") async throws -> ContentServer {
        guard installed else {
            throw PeerError("apache2 with mod_dav_fs and mod_auth_digest is not installed: bash scripts/setup.sh installs it")
        }
        var failure: Error = PeerError("not started")
        for _ in 0..<3 {
            do { return try await ContentServer(port: try LoopbackPorts.free(), users: users, realm: realm) } catch { failure = error }
        }
        throw failure
    }

    /// Puts `body` at `name` under `/presence/` (as a presence source does, PRS-13).
    func store(_ name: String, _ body: String) throws {
        try body.write(toFile: documents + "/" + name, atomically: true, encoding: .utf8)
    }

    /// The objects under `/presence/`, by name.
    var objects: [String: String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: documents)) ?? []
        return Dictionary(uniqueKeysWithValues: names.map { ($0, (try? String(contentsOfFile: documents + "/" + $0, encoding: .utf8)) ?? "") })
    }

    /// The requests answered so far, in order: method, path, status, the Digest user or nil.
    var requests: [AggregationProxy.Logged] { AggregationProxy.logged(directory + "/access.log") }

    var errorLog: String { (try? String(contentsOfFile: directory + "/error.log", encoding: .utf8)) ?? "" }

    /// Stops httpd (its whole process group) and removes the run directory; idempotent.
    func stop() {
        process.killGroup()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
