import Foundation
import PeerTestSupport
import PresenceDocuments
import SIPMessages
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Two `presence-gateway` nodes sharing one PostgreSQL database (a private cluster), behind
/// Kamailio's dispatcher on each side (deploy/kamailio-front.cfg), with sipp peers and watchers,
/// all on 127.0.0.1 (docs/state.md, "Several nodes behind Kamailio"). Node A makes a bridged
/// pair in each direction while node B is still down; B starts and the fronts see it; A is
/// killed with SIGKILL, or drained (`POST /node/drain`). Within A's lease (after a kill), or within
/// one of B's renewals (after a drain, before A stops), B takes its dialogs over and continues
/// them in place: the peers' NOTIFYs reach the watchers in their original dialogs, each once, the
/// watchers' refreshes are answered in their dialogs, and no subscription is made twice.
@Suite(.serialized, .enabled(if: PostgresCluster.installed && PeerAssets.kamailioInstalled, "needs PostgreSQL and Kamailio (scripts/setup.sh)"))
struct SharedStateProcessTests {
    /// A Kamailio front with deploy/kamailio-front.cfg, in the foreground (children forked).
    struct Front {
        let port: UInt16
        let child: ChildProcess

        static let configuration = PeerAssets.root.deletingLastPathComponent().appendingPathComponent("deploy/kamailio-front.cfg").path

        /// `nodes`: each node's listener on this side, with its dispatcher state flags (1: inactive,
        /// 8: probed; dispatcher's list file format). `tls`: the front listens and reaches its peer
        /// and the nodes over TLS (`-A WITH_TLS`), with `defines` naming its tls file and the names.
        static func start(directory: String, name: String, peer: UInt16, nodes: [(UInt16, Int)], tls: Bool = false,
                          defines: [String] = []) async throws -> Front {
            let list = directory + "/\(name).list"
            let transport = tls ? ";transport=tls" : ""
            try nodes.map { "1 sip:127.0.0.1:\($0.0)\(transport) \($0.1)" }.joined(separator: "\n").appending("\n")
                .write(toFile: list, atomically: true, encoding: .utf8)
            let port = try LoopbackPorts.free()
            // One worker: a node's 200 to a refresh and the NOTIFY after it leave the front in the
            // order the node sent them. Two workers may swap them, and sipp cannot answer a NOTIFY
            // whose subscription's 200 arrives before its answer to the NOTIFY has gone out.
            // setsid: a process group of its own, so killGroup() ends its forked children too.
            let child = try ChildProcess("/usr/bin/setsid", ["/usr/sbin/kamailio",
                "-f", configuration, "-DD", "-E", "-m", "64", "-M", "8", "-l", "\(tls ? "tls" : "udp"):127.0.0.1:\(port)",
                "-Y", directory, "-A", "DSLIST=\"\(list)\"", "-A", "PEER=\"sip:127.0.0.1:\(peer)\(transport)\"", "-A", "CHILDREN=1",
            ] + (tls ? ["-A", "WITH_TLS"] : []) + defines.flatMap { ["-A", $0] })
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline, child.poll() == nil, !LoopbackPorts.isBound(port, udp: !tls) {
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            guard LoopbackPorts.isBound(port, udp: !tls) else { throw PeerError("kamailio \(name) did not start:\n\(child.output.suffix(3000))") }
            return Front(port: port, child: child)
        }
    }

    /// Runs `body` with the built gateway, a directory of its own and a private cluster with a
    /// database; removes the directory and the cluster afterwards.
    static func withSetUp(_ name: String, _ body: (_ binary: String, _ directory: String, _ cluster: PostgresCluster, _ database: String) async throws -> Void) async throws {
        let binary = try #require(GatewayBinary.path, "presence-gateway was not built next to the tests")
        let directory = NSTemporaryDirectory() + "\(name)-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try await PostgresCluster.with { cluster in
            try await body(binary, directory, cluster, try await cluster.createDatabase())
        }
    }

    @Test func aKilledNodesDialogsContinueThroughTheOtherWithinTheLease() async throws {
        try await handOver(.killed)
    }

    /// Draining is for a node about to stop (README, "Runtime control"): its lease is 15 s here,
    /// and B, renewing every 5 s, has every dialog well before that, while A still runs.
    @Test func aDrainedNodesDialogsContinueThroughTheOtherBeforeItStops() async throws {
        try await handOver(.drained)
    }

    enum Leave { case killed, drained }

    /// The node of `process` leaves: killed with SIGKILL, or drained through its admin endpoint
    /// at `admin` (`POST /node/drain`), which answers once its records are handed over.
    static func leave(_ leave: Leave, process: ChildProcess, admin: UInt16) async throws {
        switch leave {
        case .killed:
            process.send(SIGKILL)
            #expect(await process.wait(timeout: 5) == -1)
        case .drained:
            let drain = try await loopbackHTTP(port: Int(admin), "POST", "/node/drain")
            #expect(drain.status == 200, "\(drain.body)\n\(process.output.suffix(3000))")
            #expect(drain.body.contains(#""handedOver":"#), "\(drain.body)")
        }
    }

    func handOver(_ leave: Leave) async throws {
        try await Self.withSetUp("shared") { binary, directory, cluster, database in
            // The peers send their change 2 s after answering the refresh that the node taking over
            // sends, so that the change follows the refresh. (A BENOTIFY goes through the front
            // statelessly and can overtake the refresh's answer; the node then keeps its newer
            // state over the answer's older piggybacked one: docs/flows.md, flow 2.)
            let omaServer = try await Sipp.start(scenario: PeerAssets.scenario("durable-oma-server.xml"), remote: nil, timeLimit: 150)
            let edge = try await Sipp.start(scenario: PeerAssets.scenario("durable-enterprise-edge.xml"), remote: nil, timeLimit: 150,
                                            extra: ["-d", "2000"])
            let ports = try (0..<6).map { _ in try LoopbackPorts.free() }
            let (a, b) = ((oma: ports[0], enterprise: ports[1], admin: ports[2]), (oma: ports[3], enterprise: ports[4], admin: ports[5]))
            // B is down while the pairs are made: listed inactive, probed until it answers.
            let omaFront = try await Front.start(directory: directory, name: "oma", peer: omaServer.port, nodes: [(a.oma, 8), (b.oma, 9)])
            let enterpriseFront = try await Front.start(directory: directory, name: "enterprise", peer: edge.port,
                                                        nodes: [(a.enterprise, 8), (b.enterprise, 9)])
            let lease = leave == .killed ? 3 : 15
            func node(_ name: String, _ ports: (oma: UInt16, enterprise: UInt16, admin: UInt16)) throws -> DurableStateProcessTests.Gateway {
                let configuration = directory + "/\(name).yaml"
                try DurableStateProcessTests.Gateway.yaml(
                    listen: ports, enterprise: ("enterprise-front", enterpriseFront.port), oma: ("oma-front", omaFront.port),
                    state: #"{ store: postgres, url: "\#(cluster.url(database))", node: \#(name), lease: \#(lease) }"#
                ).replacingOccurrences(of: "port: \(ports.admin) }", with: "port: \(ports.admin), tokenless-control: true }")
                .write(toFile: configuration, atomically: true, encoding: .utf8)
                return DurableStateProcessTests.Gateway(binary: binary, configuration: configuration, directory: directory, admin: ports.admin)
            }
            let nodeA = try node("gw-a", a), nodeB = try node("gw-b", b)

            let processA = try await nodeA.start()
            var processB: ChildProcess?
            defer {
                processA.kill()
                processB?.kill()
                omaFront.child.killGroup()
                enterpriseFront.child.killGroup()
                _ = omaServer.stop()
                _ = edge.stop()
            }
            let enterpriseWatcher = try await Sipp.start(scenario: PeerAssets.scenario("durable-enterprise-watcher.xml"),
                                                         remote: "127.0.0.1:\(enterpriseFront.port)",
                                                         keys: ["watcher": "sip:carol@contoso.com", "resource": "sip:john@oma.example"], timeLimit: 150)
            let omaWatcher = try await Sipp.start(scenario: PeerAssets.scenario("durable-oma-watcher.xml"), remote: "127.0.0.1:\(omaFront.port)",
                                                  keys: ["watcher": "sip:dave@oma.example", "resource": "sip:bob@contoso.com"], timeLimit: 150)
            try await nodeA.waitForPairs()
            // Both watchers answered: their records are written before their 200 OK goes out. On a
            // loaded machine that can take a while; a watcher not yet answered is not continued.
            let answered = "SELECT count(*) FROM gateway_state WHERE node = 'gw-a' AND kind LIKE '%watch' AND body::json->>'answered' = 'true'"
            let written = Date()
            while try await cluster.sql(answered, database: database) != "2",
                  Date().timeIntervalSince(written) < 20 {
                try await Task.sleep(nanoseconds: 200_000_000)
            }
            #expect(try await cluster.sql(answered, database: database) == "2")
            try await Task.sleep(nanoseconds: 1_000_000_000)

            // B joins; the fronts' probes find it within a second or two.
            let started = try await nodeB.start()
            processB = started
            try await Task.sleep(nanoseconds: 3_000_000_000)
            #expect(try await nodeB.health()["omaWatchers"] as? Int == 0)

            let left = Date()
            try await Self.leave(leave, process: processA, admin: a.admin)
            if leave == .drained {
                #expect(try await nodeA.health()["status"] as? String == "drained")
                #expect(processA.poll() == nil, "A stopped by itself")
            }
            var tookOver: TimeInterval?
            while tookOver == nil, Date().timeIntervalSince(left) < 30 {
                if let health = try? await nodeB.health(), health["enterpriseWatchers"] as? Int == 1, health["omaWatchers"] as? Int == 1 {
                    tookOver = Date().timeIntervalSince(left)
                } else {
                    try await Task.sleep(nanoseconds: 100_000_000)
                }
            }
            let seconds = try #require(tookOver, "node B did not take the pairs over:\n\(started.output.suffix(4000))")
            switch leave {
            case .killed:
                // The lease, and one renewal interval (a third of it) for B to notice.
                #expect(seconds <= Double(lease) + Double(lease) / 3 + 1.5, "took \(seconds) s")
            case .drained:
                // One renewal interval of B, not A's lease; A still runs, then stops holding nothing.
                // The margin is for a loaded CI machine (8.1 s once against 5 s + 2.5 s).
                #expect(seconds <= Double(lease) / 3 + 4, "took \(seconds) s")
                #expect(processA.poll() == nil)
                #expect(await processA.terminate() == 0, "\(processA.output.suffix(2000))")
            }
            #expect(started.output.contains("took over"), "\(started.output.suffix(3000))")

            let runs = (oma: await omaServer.finish(), edge: await edge.finish(), enterprise: await enterpriseWatcher.finish(),
                        omaWatcher: await omaWatcher.finish())
            for (name, run) in [("OMA server", runs.oma), ("enterprise edge", runs.edge), ("enterprise watcher", runs.enterprise),
                                ("OMA watcher", runs.omaWatcher)] {
                #expect(run.succeeded, "\(name): \(run)\n--- node B\n\(started.output.suffix(4000))")
            }
            if ![runs.oma, runs.edge, runs.enterprise, runs.omaWatcher].allSatisfy(\.succeeded) {
                Issue.record("--- OMA front\n\(omaFront.child.output.suffix(5000))\n--- enterprise front\n\(enterpriseFront.child.output.suffix(5000))")
            }
            #expect(try await cluster.sql("SELECT count(*) FROM gateway_state WHERE node = 'gw-b' AND kind LIKE '%watch'", database: database) == "2")
            #expect(try await cluster.sql("SELECT count(*) FROM gateway_state WHERE node = 'gw-a'", database: database) == "0")

            // Each peer saw one dialog: the first node's SUBSCRIBE and the second's refresh in it.
            for (name, run) in [("OMA server", runs.oma), ("enterprise edge", runs.edge)] {
                let subscribes = run.receivedRequests("SUBSCRIBE")
                #expect(Set(subscribes.map { $0.headers[.cseq] }).count == 2, "\(name), retransmissions aside")
                #expect(Set(subscribes.map(\.headers.callID)).count == 1, "\(name): a second subscription was made")
                // The refresh came from node B (its Contact: a target refresh, RFC 6665 §4.1.2.2).
                #expect(subscribes.last?.headers[.contact]?.contains(":\(name == "OMA server" ? b.oma : b.enterprise)") == true,
                        "\(name): \(subscribes.last?.headers[.contact] ?? "")")
            }
            // carol: the first BENOTIFY from A, the one after the takeover from B; one dialog, each once.
            let answer = try #require(runs.enterprise.receivedResponses(to: "SUBSCRIBE").first { $0.statusCode == 200 })
            let benotifies = runs.enterprise.receivedRequests("BENOTIFY")
            #expect(benotifies.count == 2)
            try expectOneDialogInOrder(benotifies, answeredBy: answer)
            // dave: before the kill, the current state B fetched, the change after it, the one after his refresh.
            let daveAnswer = try #require(runs.omaWatcher.receivedResponses(to: "SUBSCRIBE").first { $0.statusCode == 200 })
            let notifies = runs.omaWatcher.receivedRequests("NOTIFY")
            #expect(notifies.count == 4)
            try expectOneDialogInOrder(notifies, answeredBy: daveAnswer)
            #expect(notifies.dropFirst().allSatisfy { $0.headers[.contact]?.contains(":\(b.oma)") == true })
            // The first SUBSCRIBE and the refresh answered, each once, retransmissions aside (a 200
            // is sent again for a retransmitted request, RFC 3261 §17.2.1).
            for run in [runs.omaWatcher, runs.enterprise] {
                let answered = run.receivedResponses(to: "SUBSCRIBE").filter { $0.statusCode == 200 }
                #expect(Set(answered.map { $0.headers[.cseq] }).count == 2)
            }
        }
    }

    /// A flood of in-dialog requests for invented dialogs from one unconfigured address
    /// (docs/security.md, "Cheap checks first"): the sender's rate limit answers them before any
    /// look-up in the shared store, the store is asked about a few, and a watcher arriving during
    /// the flood through the configured peer is taken (retransmitted over UDP as any UA does).
    @Test func aFloodOfInventedDialogsNeverReachesTheStore() async throws {
        try await Self.withSetUp("flood") { binary, directory, cluster, database in
            let edge = try RawSIPSocket.udp(), watcher = try RawSIPSocket.udp()
            let (oma, enterprise, admin) = (try LoopbackPorts.free(), try LoopbackPorts.free(), try LoopbackPorts.free())
            let configuration = directory + "/gateway.yaml"
            try """
                listen:
                  - { side: oma, transport: udp, address: 127.0.0.1, port: \(oma) }
                  - { side: enterprise, transport: udp, address: 127.0.0.1, port: \(enterprise) }
                enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(edge.port);transport=udp" }
                oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(watcher.port);transport=udp" }
                peers:
                  - { name: oma-peer, address: 127.0.0.1, side: oma, network: federated }
                presentities:
                  default:
                    defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
                admin: { address: 127.0.0.1, port: \(admin) }
                state: { store: postgres, url: "\(cluster.url(database))", node: gw-a, lease: 3 }
                """.write(toFile: configuration, atomically: true, encoding: .utf8)
            let gateway = DurableStateProcessTests.Gateway(binary: binary, configuration: configuration, directory: directory, admin: admin)
            let process = try await gateway.start()
            defer { process.kill() }
            let attacker = try LoopbackDatagramPeer(host: "127.0.0.2")
            let flood = 10_000
            // A watcher through the configured peer, sent in the middle of the flood. Over UDP the
            // kernel drops what the flood leaves no room for in the socket's buffer, so the watcher
            // retransmits as any UA does (RFC 3261 §17.1.2.2, Timer E from 500 ms, doubling).
            let sendWatcher = {
                _ = watcher.send(Array("""
                    SUBSCRIBE sip:bob@contoso.com SIP/2.0\r
                    Via: SIP/2.0/UDP 127.0.0.1:\(watcher.port);branch=z9hG4bKfloodw\r
                    Max-Forwards: 70\r
                    From: <sip:dave@oma.example>;tag=fw\r
                    To: <sip:bob@contoso.com>\r
                    Call-ID: flood-watcher@oma.example\r
                    CSeq: 1 SUBSCRIBE\r
                    Contact: <sip:dave@127.0.0.1:\(watcher.port)>\r
                    Event: presence\r
                    Accept: application/pidf+xml\r
                    Expires: 600\r
                    Content-Length: 0\r
                    \r

                    """.utf8), to: oma)
            }
            let started = Date()
            for n in 0..<flood {
                attacker.send("""
                    NOTIFY sip:gw@127.0.0.1:\(oma) SIP/2.0
                    Via: SIP/2.0/UDP \(attacker.hostPort);branch=z9hG4bKfl\(n)
                    Max-Forwards: 70
                    From: <sip:x@oma.example>;tag=f\(n)
                    To: <sip:y@contoso.com>;tag=t\(UInt64.random(in: 0...UInt64.max))
                    Call-ID: flood\(n)-\(UInt64.random(in: 0...UInt64.max))@oma.example
                    CSeq: 1 NOTIFY
                    Event: presence
                    Subscription-State: active;expires=600

                    """, to: oma)
                if n == flood / 2 { sendWatcher() }
            }
            let sent = Date().timeIntervalSince(started)
            // The watcher's SUBSCRIBE went on to the enterprise edge: answered there by nobody here,
            // so the gateway's leg toward the edge is what shows it was taken.
            var leg = await edge.receive(within: 0.5) { $0.request?.method == .subscribe }
            for interval in [1.0, 2.0, 4.0] where leg == nil {
                sendWatcher()
                leg = await edge.receive(within: interval) { $0.request?.method == .subscribe }
            }
            #expect(leg != nil, "the watcher's SUBSCRIBE was not taken during the flood")
            let answers = await attacker.receive(for: 2).compactMap(\.response)
            let storeUnavailable = answers.filter { $0.reasonPhrase == "State Store Unavailable" }.count
            let rateLimited = answers.filter { $0.statusCode == 503 && $0.headers[.retryAfter] == "1" }.count
            let unknown = answers.filter { $0.statusCode == 481 }.count
            print("flood: \(flood) NOTIFYs in \(String(format: "%.2f", sent)) s; answers: \(rateLimited) 503 rate-limited, \(unknown) 481, \(storeUnavailable) 503 store unavailable")
            #expect(storeUnavailable == 0)
            // The store is asked at most about what the rate limit lets through (200/s) and the
            // flood lasted a few seconds at most.
            let allowed = 200 * (Int(sent) + 3)
            #expect(unknown <= allowed, "\(unknown) dialogs looked up")
            // Most of what reached the gateway was refused by the limit; on a loaded machine the
            // kernel may drop most of the flood before the gateway reads it, and what it read
            // then fits under the limit.
            if answers.count > allowed {
                #expect(rateLimited >= answers.count / 2, "\(rateLimited) of \(answers.count)")
            }
        }
    }

    /// A node whose database stops answering (docs/state.md, "The database unreachable"): within a
    /// lease renewal it refuses new subscriptions with 503 and Retry-After, and `/health` and
    /// `gateway_state_store_up` say so; once the database is back, it takes them again and writes
    /// them.
    @Test func aNodeCutOffFromTheDatabaseRefusesNewSubscriptionsUntilItIsBack() async throws {
        try await Self.withSetUp("cutoff") { binary, directory, cluster, database in
            let edge = try RawSIPSocket.udp(), watcher = try RawSIPSocket.udp()
            let (oma, enterprise, admin) = (try LoopbackPorts.free(), try LoopbackPorts.free(), try LoopbackPorts.free())
            let configuration = directory + "/gateway.yaml"
            try """
                listen:
                  - { side: oma, transport: udp, address: 127.0.0.1, port: \(oma) }
                  - { side: enterprise, transport: udp, address: 127.0.0.1, port: \(enterprise) }
                enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(edge.port);transport=udp" }
                oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(watcher.port);transport=udp" }
                peers:
                  - { name: oma-peer, address: 127.0.0.1, side: oma, network: federated }
                presentities:
                  default:
                    defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
                admin: { address: 127.0.0.1, port: \(admin) }
                state: { store: postgres, url: "\(cluster.url(database))", node: gw-a, lease: 3 }
                """.write(toFile: configuration, atomically: true, encoding: .utf8)
            let gateway = DurableStateProcessTests.Gateway(binary: binary, configuration: configuration, directory: directory, admin: admin)
            let process = try await gateway.start()
            defer { process.kill() }
            func subscribe(_ n: Int) {
                _ = watcher.send(Array("""
                    SUBSCRIBE sip:bob@contoso.com SIP/2.0\r
                    Via: SIP/2.0/UDP 127.0.0.1:\(watcher.port);branch=z9hG4bKcut\(n)\r
                    Max-Forwards: 70\r
                    From: <sip:dave@oma.example>;tag=cut\(n)\r
                    To: <sip:bob@contoso.com>\r
                    Call-ID: cut\(n)@oma.example\r
                    CSeq: 1 SUBSCRIBE\r
                    Contact: <sip:dave@127.0.0.1:\(watcher.port)>\r
                    Event: presence\r
                    Accept: application/pidf+xml\r
                    Expires: 600\r
                    Content-Length: 0\r
                    \r

                    """.utf8), to: oma)
            }
            func store() async -> String? { (try? await gateway.health())?["store"] as? String }
            #expect(await store() == "ok")

            await cluster.stop(immediately: true)
            let cut = Date()
            while await store() != "unavailable", Date().timeIntervalSince(cut) < 20 {
                try await Task.sleep(nanoseconds: 200_000_000)
            }
            // A renewal every third of the lease, each with a 5 s deadline (and room for a loaded machine).
            #expect(await store() == "unavailable", "\(process.output.suffix(2000))")
            #expect(Date().timeIntervalSince(cut) < 1 + 5 + 5)
            // One series per shard when there are several (docs/shards.md): the one that found the store down says 0.
            #expect(try await gateway.get("/metrics").contains(/gateway_state_store_up(\{shard="\d+"\})? 0/))
            subscribe(1)
            let refused = try #require(await watcher.receive(within: 5) { $0.response?.statusCode ?? 0 >= 200 }?.response)
            #expect(refused.statusCode == 503 && refused.reasonPhrase == "State Store Unavailable")
            #expect(refused.headers[.retryAfter] == "10")
            #expect(await edge.receive(within: 0.3) == nil, "a refused subscription went on to the enterprise side")

            try await cluster.startServer()
            let back = Date()
            while await store() != "ok", Date().timeIntervalSince(back) < 15 {
                try await Task.sleep(nanoseconds: 200_000_000)
            }
            #expect(await store() == "ok", "\(process.output.suffix(2000))")
            let metrics = try await gateway.get("/metrics")
            #expect(metrics.contains(/gateway_state_store_up(\{shard="\d+"\})? 1/) && !metrics.contains(/gateway_state_store_up(\{shard="\d+"\})? 0/))
            // Taken again: the gateway subscribes to bob on the enterprise side for dave.
            subscribe(2)
            let onward = try #require(await edge.receive(within: 5) { $0.request?.method == .subscribe }?.request)
            #expect(onward.uri.description.contains("bob@contoso.com"))
            // The SUBSCRIBE that makes a leg goes out only once the leg is written (docs/state.md).
            #expect(try await cluster.sql("SELECT count(*) FROM gateway_state WHERE kind = 'enterprise-leg'", database: database) == "1")
        }
    }
}
