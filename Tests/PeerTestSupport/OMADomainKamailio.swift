import Foundation

/// The shared peer assets (`Peers/` at the repository root): Kamailio's OMA-domain configuration
/// and script, and the sipp scenarios for the enterprise side, used by the tests and by
/// scripts/walkthrough.sh alike.
public enum PeerAssets {
    public static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Peers")

    /// The path of a sipp scenario in `Peers/sipp`.
    public static func scenario(_ name: String) -> String { root.appendingPathComponent("sipp/\(name)").path }

    /// Whether Kamailio with its presence and SQLite modules (and sqlite3) is installed.
    public static var kamailioInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/sbin/kamailio") && FileManager.default.isExecutableFile(atPath: "/usr/bin/sqlite3")
            && FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/kamailio/modules/presence.so")
            && FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/kamailio/modules/db_sqlite.so")
    }
}

/// Kamailio as the OMA domain (`Peers/kamailio/oma-domain.cfg`): the presence server of
/// oma.example and the proxy that relays requests for contoso.com to the gateway, started and
/// stopped by `Peers/kamailio/run-kamailio.sh` with its own run directory on tmpfs.
public final class OMADomainKamailio: Sendable {
    public let port: UInt16
    public let runDirectory: String
    static let script = PeerAssets.root.appendingPathComponent("kamailio/run-kamailio.sh").path

    /// Starts Kamailio on `port` relaying enterprise-domain requests to `gateway` (a SIP URI);
    /// `-A WITH_BODYLOG` makes it log every PUBLISH, SUBSCRIBE and NOTIFY with its body.
    public init(port: UInt16, gateway: String) async throws {
        guard PeerAssets.kamailioInstalled else {
            throw PeerError("Kamailio (with presence and SQLite modules) or sqlite3 is not installed: bash scripts/setup.sh installs them")
        }
        self.port = port
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
        runDirectory = base + "kamailio-gwpeers-\(port)-\(UInt32.random(in: 0...UInt32.max))"
        let (status, output) = try await runProgram("/bin/bash", [Self.script, "start", "-A", "WITH_BODYLOG"],
                                              environment: ["KAM_RUNDIR": runDirectory, "KAM_PORT": String(port), "KAM_GATEWAY": gateway],
                                              timeout: 30)
        guard status == 0 else {
            await stop()
            throw PeerError("Kamailio did not start on 127.0.0.1:\(port): \(output)")
        }
    }

    /// Starts Kamailio on a port chosen free at run time; when another test takes that port
    /// before Kamailio binds it ("Address already in use"), another is tried, at most 3 times.
    public static func start(gateway: String) async throws -> OMADomainKamailio {
        var failure: Error = PeerError("not started")
        for _ in 0..<3 {
            do { return try await OMADomainKamailio(port: LoopbackPorts.free(), gateway: gateway) } catch { failure = error }
        }
        throw failure
    }

    /// Stops it (SIGTERM, then SIGKILL for anything left in its process group); idempotent.
    public func stop() async {
        _ = try? await runProgram("/bin/bash", [Self.script, "stop"], environment: ["KAM_RUNDIR": runDirectory], timeout: 20)
    }

    /// Removes the run directory (after ``stop()``).
    public func remove() { try? FileManager.default.removeItem(atPath: runDirectory) }

    /// Kamailio's log (with WITH_BODYLOG: every PUBLISH, SUBSCRIBE and NOTIFY it handled).
    public var log: String { (try? String(contentsOfFile: runDirectory + "/kamailio.log", encoding: .utf8)) ?? "" }

    /// The `BODYLOG` lines for SUBSCRIBEs Kamailio received: "expires=[N]" for each.
    public var subscribeLines: [Substring] {
        log.split(separator: "\n").filter { $0.contains("BODYLOG SUBSCRIBE") }
    }
}
