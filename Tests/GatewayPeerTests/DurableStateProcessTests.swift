import Foundation
import NIOCore
import NIOPosix
import PeerTestSupport
import PresenceDocuments
import SIPMessages
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The built `presence-gateway` with its SQLite store (docs/state.md) between sipp peers on both
/// sides, all on 127.0.0.1: a bridged pair in each direction is set up, the gateway is killed
/// with SIGKILL (or stopped with SIGTERM under `shutdown: keep`) and started again, and both pairs
/// must continue in their original dialogs: the peers' NOTIFYs reach the watchers in the dialogs
/// they had, with CSeqs above every one used, refreshes are answered, and no subscription is made
/// twice on either side.
@Suite(.serialized) struct DurableStateProcessTests {
    enum Stop { case kill, keep }

    @Test func killedAndRestartedTheGatewayLosesNoBridgedSubscription() async throws {
        try await run(stop: .kill)
    }

    @Test func stoppedWithShutdownKeepTheNextStartContinuesEveryDialog() async throws {
        try await run(stop: .keep)
    }

    /// A gateway process on fixed loopback ports (a restart must reopen the same ones: they are in
    /// the peers' dialogs as its Contact).
    struct Gateway {
        let binary: String
        let configuration: String
        let directory: String
        let admin: UInt16

        /// A gateway's configuration between two peers on 127.0.0.1, each also its side's next
        /// hop (`enterprise` trusted, of the same enterprise; `oma` federated); `state` is the
        /// value of `state:`, `extra` more lines.
        static func yaml(
            listen: (oma: UInt16, enterprise: UInt16, admin: UInt16), enterprise: (name: String, port: UInt16),
            oma: (name: String, port: UInt16), state: String, extra: String = ""
        ) -> String {
            """
            listen:
              - { side: oma, transport: udp, address: 127.0.0.1, port: \(listen.oma) }
              - { side: enterprise, transport: udp, address: 127.0.0.1, port: \(listen.enterprise) }
            enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(enterprise.port);transport=udp" }
            oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(oma.port);transport=udp" }
            peers:
              - { name: \(enterprise.name), address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }
              - { name: \(oma.name), address: 127.0.0.1, side: oma, network: federated }
            presentities:
              default:
                defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
            subscriptions: { piggyback-wait-ms: 2000, default-expires: 3600 }
            admin: { address: 127.0.0.1, port: \(listen.admin) }
            state: \(state)
            \(extra)
            """
        }

        func start() async throws -> ChildProcess {
            let child = try ChildProcess(binary, ["--config", configuration, "--log-level", "debug"], workingDirectory: directory)
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline, child.poll() == nil, !child.output.contains("admin endpoint on") {
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            guard child.output.contains("admin endpoint on") else {
                throw PeerError("the gateway did not start:\n\(child.output.suffix(3000))")
            }
            return child
        }

        /// `/health` as JSON.
        func health() async throws -> [String: Any] {
            let body = try await get("/health")
            return (try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:]
        }

        /// The body of a GET on the admin endpoint.
        func get(_ path: String) async throws -> String {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: Int(admin)) { channel in
                    channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
                }
            let text = try await channel.executeThenClose { inbound, outbound in
                try await outbound.write(ByteBuffer(string: "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
                var text = ""
                for try await var chunk in inbound { text += chunk.readString(length: chunk.readableBytes) ?? "" }
                return text
            }
            return text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        }

        /// Waits until `/health` shows one enterprise and one OMA watcher.
        func waitForPairs() async throws {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if let health = try? await health(), health["enterpriseWatchers"] as? Int == 1, health["omaWatchers"] as? Int == 1 { return }
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            throw PeerError("the pairs were not set up: \(try await health())")
        }
    }

    func run(stop: Stop) async throws {
        let binary = try #require(GatewayBinary.path, "presence-gateway was not built next to the tests")
        let directory = NSTemporaryDirectory() + "durable-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // The other sides: an OMA presence server and an enterprise edge, each keeping one dialog.
        let omaServer = try await Sipp.start(scenario: PeerAssets.scenario("durable-oma-server.xml"), remote: nil, timeLimit: 150)
        let edge = try await Sipp.start(scenario: PeerAssets.scenario("durable-enterprise-edge.xml"), remote: nil, timeLimit: 150,
                                        extra: ["-d", "500"])
        let (omaPort, enterprisePort, adminPort) = (try LoopbackPorts.free(), try LoopbackPorts.free(), try LoopbackPorts.free())
        let configuration = directory + "/gateway.yaml"
        try Gateway.yaml(
            listen: (omaPort, enterprisePort, adminPort), enterprise: ("enterprise-edge", edge.port),
            oma: ("oma-server", omaServer.port), state: "{ store: sqlite, path: state/gateway.db }", extra: "shutdown: keep"
        ).write(toFile: configuration, atomically: true, encoding: .utf8)
        let gateway = Gateway(binary: binary, configuration: configuration, directory: directory, admin: adminPort)

        var process = try await gateway.start()
        var restarted: ChildProcess?
        defer {
            process.kill()
            restarted?.kill()
            _ = omaServer.stop()
            _ = edge.stop()
        }
        // Flow 1: carol (enterprise) watches john@oma.example; flow 2: dave (OMA) watches bob@contoso.com.
        let enterpriseWatcher = try await Sipp.start(scenario: PeerAssets.scenario("durable-enterprise-watcher.xml"),
                                                     remote: "127.0.0.1:\(enterprisePort)", keys: ["watcher": "sip:carol@contoso.com",
                                                                                                   "resource": "sip:john@oma.example"],
                                                     timeLimit: 150)
        let omaWatcher = try await Sipp.start(scenario: PeerAssets.scenario("durable-oma-watcher.xml"), remote: "127.0.0.1:\(omaPort)",
                                              keys: ["watcher": "sip:dave@oma.example", "resource": "sip:bob@contoso.com"], timeLimit: 150)
        try await gateway.waitForPairs()
        // Both watchers answered: their records are written before their 200 OK goes out (on a
        // loaded machine that can take a while; a watcher not yet answered is not continued).
        // The store is read beside the running gateway, as a backup would (WAL).
        let answered = "SELECT count(*) FROM gateway_state WHERE kind LIKE '%watch' AND json_extract(body, '$.answered')"
        func answeredWatchers() async -> String {
            let result = try? await runProgram("/usr/bin/sqlite3", [directory + "/state/gateway.db", answered])
            return result?.output.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        }
        let written = Date()
        while await answeredWatchers() != "2", Date().timeIntervalSince(written) < 20 {
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        #expect(await answeredWatchers() == "2")
        // A moment more for the first NOTIFYs.
        try await Task.sleep(nanoseconds: 1_000_000_000)

        switch stop {
        case .kill:
            process.send(SIGKILL)
            #expect(await process.wait(timeout: 5) == -1)
        case .keep:
            process.send(SIGTERM)
            #expect(await process.wait(timeout: 20) == 0, "\(process.output.suffix(2000))")
            #expect(process.output.contains("every dialog kept"), "\(process.output.suffix(2000))")
        }
        #expect(FileManager.default.fileExists(atPath: directory + "/state/gateway.db"))

        let next = try await gateway.start()
        restarted = next
        #expect(next.output.contains("continuing 1 enterprise and 1 OMA watchers' subscriptions"), "\(next.output.suffix(3000))")
        let runs = (oma: await omaServer.finish(), edge: await edge.finish(), enterprise: await enterpriseWatcher.finish(),
                    omaWatcher: await omaWatcher.finish())
        for (name, run) in [("OMA server", runs.oma), ("enterprise edge", runs.edge), ("enterprise watcher", runs.enterprise),
                            ("OMA watcher", runs.omaWatcher)] {
            #expect(run.succeeded, "\(name): \(run)\n--- gateway\n\(next.output.suffix(4000))")
        }

        // The OMA server saw one dialog: the initial SUBSCRIBE and the restarted gateway's refresh in it.
        let omaSubscribes = runs.oma.receivedRequests("SUBSCRIBE")
        #expect(Set(omaSubscribes.map { $0.headers[.cseq] }).count == 2, "retransmissions aside")
        #expect(Set(omaSubscribes.map(\.headers.callID)).count == 1, "a second subscription was made: \(omaSubscribes.map(\.headers.callID))")
        #expect(try omaSubscribes.last?.headers.to?.tag != nil)
        // Flow 1: the OMA server's NOTIFYs after the restart reached carol in her original dialog.
        let answer = try #require(runs.enterprise.receivedResponses(to: "SUBSCRIBE").first { $0.statusCode == 200 })
        let benotifies = runs.enterprise.receivedRequests("BENOTIFY")
        #expect(benotifies.count == 2)
        let firstCSeq = try #require(UInt32(answer.headers[.msPiggybackCSeq] ?? ""))
        var previous = firstCSeq
        for benotify in benotifies {
            #expect(benotify.headers.callID == answer.headers.callID)
            #expect(try benotify.headers.from?.tag == answer.headers.to?.tag)
            let cseq = try #require(try benotify.headers.cseq?.sequence)
            #expect(cseq > previous)
            previous = cseq
        }
        let states = benotifies.map { aggregateState(categoriesDocuments(.request($0)), of: "sip:john@oma.example") }
        // Mappings/pidf-availability.tsv: open + away → 15500; open + on-the-phone → the busy band with the token.
        #expect(states.first??.availability == 15500)
        #expect((6000...7499).contains(states.last??.availability ?? 0) && states.last??.token == "on-the-phone")

        // Flow 2: the enterprise edge saw one dialog, refreshed in place.
        let edgeSubscribes = runs.edge.receivedRequests("SUBSCRIBE")
        #expect(edgeSubscribes.count == 2)
        #expect(Set(edgeSubscribes.map(\.headers.callID)).count == 1, "a second subscription was made: \(edgeSubscribes.map(\.headers.callID))")
        // dave's NOTIFYs: the first before the stop, the current state and the edge's change after
        // it, and the one after his refresh: one dialog, CSeqs rising.
        let daveAnswer = try #require(runs.omaWatcher.receivedResponses(to: "SUBSCRIBE").first { $0.statusCode == 200 })
        let notifies = runs.omaWatcher.receivedRequests("NOTIFY")
        #expect(notifies.count == 4)
        try expectOneDialogInOrder(notifies, answeredBy: daveAnswer)
        #expect(try notifies.allSatisfy { try $0.headers.from?.tag == daveAnswer.headers.to?.tag })
        // MS-PRES §3.7.5.4: 3500 → open, available; 6500 → busy.
        #expect(String(decoding: notifies[1].body, as: UTF8.self).contains("<basic>open</basic>"))
        #expect(String(decoding: notifies[2].body, as: UTF8.self).contains("busy"))
        // Both refreshes were answered 200 in their dialogs (the scenarios require it).
        // The first SUBSCRIBE and the refresh answered, each once, retransmissions aside (a 200 is
        // sent again for a retransmitted request, RFC 3261 §17.2.1).
        for run in [runs.omaWatcher, runs.enterprise] {
            let answered = run.receivedResponses(to: "SUBSCRIBE").filter { $0.statusCode == 200 }
            #expect(Set(answered.map { $0.headers[.cseq] }).count == 2)
        }
    }
}
