import Foundation
import PeerTestSupport
import SIPMessages
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Taking a node's dialogs over, attacked where it broke (docs/state.md, "Takeover record by
/// record", "Fencing"): two `presence-gateway` processes on one PostgreSQL database (a private
/// cluster), OMA watchers and the enterprise edge as bare UDP sockets on 127.0.0.1. A record that
/// does not decode must not cost the others; a node stopped past its lease must not act in the
/// dialogs another node continues.
@Suite(.serialized, .enabled(if: PostgresCluster.installed, "needs PostgreSQL (scripts/setup.sh)"))
struct TakeoverProcessTests {
    typealias Gateway = DurableStateProcessTests.Gateway
    typealias Ports = (oma: UInt16, enterprise: UInt16, admin: UInt16)

    struct Pair {
        let callID: String
        let fromTag: String
        let toTag: String
    }

    /// Dave `n`'s SUBSCRIBE to bob@contoso.com from `watcher`: the first (to `uri`, no To tag)
    /// or, in `pair`'s dialog, a refresh with CSeq 2 sent to the gateway's Contact `uri`.
    static func subscribe(_ n: Int, uri: String, callID: String, fromTag: String, toTag: String? = nil, branch: String,
                          watcher: RawSIPSocket) -> [UInt8] {
        Array("""
            SUBSCRIBE \(uri) SIP/2.0\r
            Via: SIP/2.0/UDP 127.0.0.1:\(watcher.port);branch=z9hG4bK\(branch)\r
            Max-Forwards: 70\r
            From: <sip:dave\(n)@oma.example>;tag=\(fromTag)\r
            To: <sip:bob@contoso.com>\(toTag.map { ";tag=\($0)" } ?? "")\r
            Call-ID: \(callID)\r
            CSeq: \(toTag == nil ? 1 : 2) SUBSCRIBE\r
            Contact: <sip:dave\(n)@127.0.0.1:\(watcher.port)>\r
            Event: presence\r
            Accept: application/pidf+xml\r
            Expires: 3600\r
            Content-Length: 0\r
            \r

            """.utf8)
    }

    /// Dave `n` (an OMA watcher) subscribes to bob@contoso.com through the node at `ports`; the
    /// edge accepts the gateway's SUBSCRIBE; the watcher's answer follows the piggyback wait.
    static func pair(_ n: Int, node ports: Ports, watcher: RawSIPSocket, edge: RawSIPSocket) async throws -> Pair {
        let callID = "take\(n)-\(UInt32.random(in: 0...UInt32.max))@oma.example"
        _ = watcher.send(
            Self.subscribe(n, uri: "sip:bob@contoso.com", callID: callID, fromTag: "dv\(n)", branch: "take\(n)", watcher: watcher),
            to: ports.oma)
        let leg = try #require(await edge.receive(within: 5) { $0.request?.method == .subscribe }?.request)
        var answer = SIPResponse(replyingTo: leg, statusCode: 200, toTag: "edge\(n)")
        answer.headers.append(.expires, "3600")
        answer.headers.append(.contact, "<sip:edge@127.0.0.1:\(edge.port)>")
        _ = edge.send(answer.serialized(), to: ports.enterprise)
        let accepted = try #require(
            await watcher.receive(within: 6) { $0.response.map { $0.statusCode == 200 && $0.headers.callID == callID } ?? false }?
                .response)
        let toTag = try #require((try? accepted.headers.to)?.tag)
        return Pair(callID: callID, fromTag: "dv\(n)", toTag: toTag)
    }

    /// A node of the shared store on `threads` shards, its admin endpoint open to `POST /node/drain`.
    static func node(_ name: String, _ ports: Ports, directory: String, binary: String, cluster: PostgresCluster, database: String,
                     edge: RawSIPSocket, watcher: RawSIPSocket, threads: Int = 1, lease: Int = 3) throws -> Gateway {
        let configuration = directory + "/\(name).yaml"
        try Gateway.yaml(
            listen: ports, enterprise: ("edge", edge.port), oma: ("oma", watcher.port),
            state: #"{ store: postgres, url: "\#(cluster.url(database))", node: \#(name), lease: \#(lease) }"#,
            extra: "threads: \(threads)"
        ).replacingOccurrences(of: "port: \(ports.admin) }", with: "port: \(ports.admin), tokenless-control: true }")
        .write(toFile: configuration, atomically: true, encoding: .utf8)
        return Gateway(binary: binary, configuration: configuration, directory: directory, admin: ports.admin)
    }

    static func ports() throws -> Ports { (try LoopbackPorts.free(), try LoopbackPorts.free(), try LoopbackPorts.free()) }

    /// Polls `/health` until `omaWatchers` is `count`; the seconds it took, nil past `seconds`.
    static func waitForWatchers(_ gateway: Gateway, _ count: Int, within seconds: Double) async throws -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < seconds {
            if let health = try? await gateway.health(), health["omaWatchers"] as? Int == count { return Date().timeIntervalSince(start) }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        return nil
    }

    @Test func aRecordThatDoesNotReadCostsNoOtherDialog() async throws {
        try await SharedStateProcessTests.withSetUp("takeover") { binary, directory, cluster, database in
            let edge = try RawSIPSocket.udp(), watcher = try RawSIPSocket.udp()
            let (a, b) = (try Self.ports(), try Self.ports())
            let nodeA = try Self.node("gw-a", a, directory: directory, binary: binary, cluster: cluster, database: database,
                                      edge: edge, watcher: watcher)
            let nodeB = try Self.node("gw-b", b, directory: directory, binary: binary, cluster: cluster, database: database,
                                      edge: edge, watcher: watcher)
            let processA = try await nodeA.start()
            var processB: ChildProcess?
            defer {
                processA.kill()
                _ = processB?.kill()
            }
            for n in 1...3 { _ = try await Self.pair(n, node: a, watcher: watcher, edge: edge) }
            #expect(try await Self.waitForWatchers(nodeA, 3, within: 5) != nil)
            // One record of A's that no node can read.
            _ = try await cluster.sql(
                "INSERT INTO gateway_state (kind, key, node, body) VALUES ('enterprise-watch', '999', 'gw-a', '{\"watcher\": 7}')",
                database: database)
            let started = try await nodeB.start()
            processB = started
            processA.send(SIGKILL)
            #expect(await processA.wait(timeout: 5) == -1)
            // B continues A's three pairs: each leg refreshed from B (its Contact), the bad record
            // named in its log.
            let took = try await Self.waitForWatchers(nodeB, 3, within: 15)
            #expect(took != nil, "node B did not continue A's pairs:\n\(started.output.suffix(3000))")
            var refreshed: Set<String> = []
            let deadline = Date().addingTimeInterval(10)
            while refreshed.count < 3, Date() < deadline {
                guard let refresh = await edge.receive(within: 1, matching: { $0.request?.method == .subscribe })?.request else { continue }
                if refresh.headers[.contact]?.contains(":\(b.enterprise)") == true { refreshed.insert(refresh.headers.callID ?? "") }
                _ = edge.send(SIPResponse(replyingTo: refresh, statusCode: 200).serialized(), to: b.enterprise)
            }
            #expect(refreshed.count == 3, "legs refreshed from B: \(refreshed.count)")
            #expect(started.output.contains("cannot take over record enterprise-watch 999"), "\(started.output.suffix(3000))")
        }
    }

    @Test func aNodeStoppedPastItsLeaseDoesNotActInTheDialogsTakenOver() async throws {
        try await SharedStateProcessTests.withSetUp("fencing") { binary, directory, cluster, database in
            let edge = try RawSIPSocket.udp(), watcher = try RawSIPSocket.udp()
            let (a, b) = (try Self.ports(), try Self.ports())
            let nodeA = try Self.node("gw-a", a, directory: directory, binary: binary, cluster: cluster, database: database,
                                      edge: edge, watcher: watcher)
            let nodeB = try Self.node("gw-b", b, directory: directory, binary: binary, cluster: cluster, database: database,
                                      edge: edge, watcher: watcher)
            let processA = try await nodeA.start()
            let processB = try await nodeB.start()
            defer {
                processA.kill()
                processB.kill()
            }
            let pair = try await Self.pair(1, node: a, watcher: watcher, edge: edge)
            #expect(try await Self.waitForWatchers(nodeA, 1, within: 5) != nil)
            // A's first NOTIFY to the watcher, answered.
            while let message = await watcher.receive(within: 1) {
                if let notify = message.request, notify.method == .notify {
                    _ = watcher.send(SIPResponse(replyingTo: notify, statusCode: 200).serialized(), to: a.oma)
                }
            }

            // A stops past its lease; B takes its pair over and refreshes the leg from B.
            processA.send(SIGSTOP)
            let took = try await Self.waitForWatchers(nodeB, 1, within: 15)
            #expect(took != nil, "node B did not take the pair over:\n\(processB.output.suffix(3000))")
            if let refresh = await edge.receive(within: 5, matching: { $0.request?.method == .subscribe })?.request {
                _ = edge.send(SIPResponse(replyingTo: refresh, statusCode: 200).serialized(), to: b.enterprise)
            }
            // The watcher refreshes at A's Contact, as a peer that has not learnt B's yet would;
            // A reads it only once it runs again.
            _ = watcher.send(
                Self.subscribe(1, uri: "sip:gateway@127.0.0.1:\(a.oma)", callID: pair.callID, fromTag: pair.fromTag,
                               toTag: pair.toTag, branch: "fence2", watcher: watcher),
                to: a.oma)
            try await Task.sleep(nanoseconds: 500_000_000)
            processA.send(SIGCONT)
            // A must not take the refresh (the dialog is B's now), nor NOTIFY the watcher.
            var fromA: [SIPMessage] = []
            let end = Date().addingTimeInterval(5)
            while Date() < end {
                guard let message = await watcher.receive(within: 0.5) else { continue }
                if let response = message.response, (try? response.headers.cseq)?.sequence == 2 { fromA.append(message) }
                if let notify = message.request, notify.method == .notify {
                    if notify.headers[.contact]?.contains(":\(a.oma)") == true { fromA.append(message) }
                    _ = watcher.send(SIPResponse(replyingTo: notify, statusCode: 200).serialized(), to: notify.headers[.contact]?.contains(":\(a.oma)") == true ? a.oma : b.oma)
                }
            }
            let accepted = fromA.filter { $0.response?.statusCode == 200 || $0.request != nil }
            #expect(accepted.isEmpty, "node A acted in a dialog node B holds: \(accepted.map { "\($0.response?.statusCode ?? 0) \($0.request?.method.description ?? "")" })\n\(processA.output.suffix(3000))")
            #expect(processA.output.contains("the fence is lifted"), "\(processA.output.suffix(3000))")
        }
    }

    /// A node on two threads (docs/shards.md, "Several nodes") holds pairs on both of its shards.
    /// Killed (past its lease) or drained, each pair is continued by a node on two threads on the
    /// shard its tags name: every leg is refreshed from there, and every watcher's refresh in its
    /// dialog, sent to the new node, is answered 200 in that dialog, not 481 (RFC 6665 §4.1.3).
    /// The watchers leave A's NOTIFYs unanswered: a drain closes A's listeners with their
    /// transactions open, and their failure must not end a subscription the store hands over.
    @Test(arguments: [SharedStateProcessTests.Leave.killed, .drained])
    func aNodeOnTwoThreadsHandsEachPairToTheShardItsTagNames(_ leave: SharedStateProcessTests.Leave) async throws {
        try await SharedStateProcessTests.withSetUp("shards") { binary, directory, cluster, database in
            let edge = try RawSIPSocket.udp(), watcher = try RawSIPSocket.udp()
            let (a, b) = (try Self.ports(), try Self.ports())
            // Drained: B takes over at its next renewal, a third of the lease; killed: after A's lease.
            let lease = leave == .killed ? 3 : 9
            func node(_ name: String, _ ports: Ports) throws -> Gateway {
                try Self.node(name, ports, directory: directory, binary: binary, cluster: cluster, database: database,
                              edge: edge, watcher: watcher, threads: 2, lease: lease)
            }
            let (nodeA, nodeB) = (try node("gw-a", a), try node("gw-b", b))
            let processA = try await nodeA.start()
            let processB = try await nodeB.start()
            defer {
                processA.kill()
                processB.kill()
            }
            let count = 8
            var pairs: [Pair] = []
            for n in 1...count { pairs.append(try await Self.pair(n, node: a, watcher: watcher, edge: edge)) }
            #expect(try await Self.waitForWatchers(nodeA, count, within: 5) != nil)
            // A's records are on both of its shards: a key's bits 32 to 39 name the shard that made it.
            let shards = "SELECT count(DISTINCT (key::int8 >> 32) & 255) FROM gateway_state WHERE node = 'gw-a' AND key ~ '^[0-9]+$'"
            #expect(try await cluster.sql(shards, database: database) == "2")

            try await SharedStateProcessTests.leave(leave, process: processA, admin: a.admin)
            let took = try await Self.waitForWatchers(nodeB, count, within: Double(lease) * 2 + 5)
            #expect(took != nil, "node B did not continue A's pairs:\n\(processB.output.suffix(3000))")
            #expect(try await cluster.sql("SELECT count(*) FROM gateway_state WHERE node = 'gw-a'", database: database) == "0")

            for (n, pair) in zip(1..., pairs) {
                _ = watcher.send(
                    Self.subscribe(n, uri: "sip:gateway@127.0.0.1:\(b.oma)", callID: pair.callID, fromTag: pair.fromTag,
                                   toTag: pair.toTag, branch: "shard\(n)", watcher: watcher),
                    to: b.oma)
            }
            var refreshed: Set<String> = []
            var answered: [String: Int] = [:]
            let deadline = Date().addingTimeInterval(15)
            while refreshed.count < count || answered.count < count, Date() < deadline {
                if let refresh = await edge.receive(within: 0.1, matching: { $0.request?.method == .subscribe })?.request {
                    if refresh.headers[.contact]?.contains(":\(b.enterprise)") == true { refreshed.insert(refresh.headers.callID ?? "") }
                    _ = edge.send(SIPResponse(replyingTo: refresh, statusCode: 200).serialized(), to: b.enterprise)
                }
                while let message = await watcher.receive(within: 0.05) {
                    if let notify = message.request, notify.method == .notify {
                        _ = watcher.send(SIPResponse(replyingTo: notify, statusCode: 200).serialized(), to: b.oma)
                    }
                    if let response = message.response, (try? response.headers.cseq)?.sequence == 2, response.statusCode >= 200 {
                        answered[response.headers.callID ?? ""] = response.statusCode
                    }
                }
            }
            #expect(refreshed.count == count, "legs refreshed from B: \(refreshed.count)\n\(processB.output.suffix(3000))")
            #expect(answered.count == count && answered.values.allSatisfy { $0 == 200 }, "\(answered)")
            #expect(processB.output.contains("took over"), "\(processB.output.suffix(3000))")
        }
    }
}
