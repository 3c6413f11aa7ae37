import Foundation
import NIOCore
import NIOPosix
import PeerTestSupport
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// Which tools the peer tests need; `scripts/setup.sh` installs them (Debian packages
/// `kamailio kamailio-presence-modules kamailio-sqlite-modules sqlite3 sip-tester`).
enum PeerTools {
    static func installed(_ path: String) -> Bool { FileManager.default.isExecutableFile(atPath: path) }
    static let kamailio = installed("/usr/sbin/kamailio") && installed("/usr/bin/sqlite3")
        && FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/kamailio/modules/presence.so")
    static let sipp = installed("/usr/bin/sipp")

    struct Missing: Error, CustomStringConvertible {
        var description: String
        init(_ what: String) { description = "not installed: \(what)" }
    }

    /// This directory (the test sources, where `sipp/` lives).
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
}

/// A throw-away Kamailio presence server on 127.0.0.1: the OMA domain's Kamailio of the shared
/// peer assets (`Peers/kamailio`, ``OMADomainKamailio``), which serves presence for every domain
/// but contoso.com; nothing here addresses contoso.com, so nothing is relayed.
final class KamailioPresenceServer: Sendable {
    let kamailio: OMADomainKamailio

    private init(_ kamailio: OMADomainKamailio) { self.kamailio = kamailio }

    /// Runs `body` with a server started for it; stops and removes it afterwards, also when
    /// `body` throws.
    static func with(_ body: (KamailioPresenceServer) async throws -> Void) async throws {
        // No gateway takes part: requests for the enterprise domain would go to the discard port.
        let server = KamailioPresenceServer(try await OMADomainKamailio.start(gateway: "sip:127.0.0.1:9"))
        try await withCleanup { try await body(server) } cleanup: { await server.stop() }
    }

    var port: UInt16 { kamailio.port }
    var target: SIPTarget { SIPTarget(.udp, host: "127.0.0.1", port: port) }

    func stop() async {
        await kamailio.stop()
        kamailio.remove()
    }

    var log: String { kamailio.log }
}

/// Waits (polling on the loop, every 20 ms) until `condition` holds or `seconds` pass; returns
/// whether it held. The condition runs on `loop`, where the agents' state lives.
func eventually(on loop: any EventLoop, within seconds: Double = 5, _ condition: @escaping @Sendable () -> Bool) async throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await loop.submit(condition).get() { return true }
        try await Task.sleep(nanoseconds: 20_000_000)
    }
    return try await loop.submit(condition).get()
}
