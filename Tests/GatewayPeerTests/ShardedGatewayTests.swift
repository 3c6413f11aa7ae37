import Foundation
import NIOPosix
import PeerTestSupport
import PresenceGateway
import Prometheus
import SIPMessages
import SIPTransport
import Testing

/// The gateway on several event loops (`threads:`, docs/shards.md) over real sockets: each
/// watcher's dialogs live on the shard of its address of record, whichever socket the kernel
/// gave its datagrams to; every identifier a shard makes carries its mark, so the other side's
/// requests and responses find it; and a state kept by some number of shards is continued by
/// another.
@Suite(.serialized) struct ShardedGatewayTests {
    /// A gateway on UDP listeners with `threads`, the OMA server and the enterprise edge as bare
    /// sockets.
    final class Gateway: @unchecked Sendable {
        let server: GatewayServer
        let oma: UInt16
        let enterprise: UInt16
        let registry = PrometheusCollectorRegistry()

        /// `edgeOptions`: more of the edge peer's settings (`, rate-limit: 2`).
        init(threads: Int, state: String, kamailio: LoopbackDatagramPeer, edge: LoopbackDatagramPeer, extra: String = "",
             edgeOptions: String = "") async throws
        {
            let yaml = """
                threads: \(threads)
                state: \(state)
                listen:
                  - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }
                  - { side: enterprise, transport: udp, address: 127.0.0.1, port: 0 }
                enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(edge.port);transport=udp" }
                oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(kamailio.port);transport=udp" }
                peers:
                  - { name: edge, address: 127.0.0.1, port: \(edge.port), side: enterprise, network: sameEnterprise, trusted: true\(edgeOptions) }
                  - { name: kamailio, address: 127.0.0.1, port: \(kamailio.port), side: oma }
                subscriptions: { piggyback-wait-ms: 300 }
                \(extra)
                """
            server = try GatewayServer(configuration: try GatewayConfiguration(yaml: yaml), registry: registry)
            try await server.start()
            oma = UInt16(server.bound[.oma]?.first?.port ?? 0)
            enterprise = UInt16(server.bound[.enterprise]?.first?.port ?? 0)
        }
    }

    /// Enterprise watchers whose addresses of record fall on each of `count` shards, in shard
    /// order, `each` of them per shard.
    static func watchers(onEachOf count: Int, each: Int = 1) throws -> [String] {
        let map = ShardMap(count: count)
        var found: [Int: [String]] = [:]
        for n in 0..<1_000 {
            let uri = "sip:watcher\(n)@contoso.com"
            let shard = map.shard(ofAddressOfRecord: try SIPURI(uri))
            if found[shard, default: []].count < each { found[shard, default: []].append(uri) }
        }
        return (0..<count).flatMap { found[$0] ?? [] }
    }

    /// A PIDF SUBSCRIBE from `watcher` at the edge for carol (flow 1, "Enterprise PIDF watchers").
    static func subscribe(from watcher: String, edge: LoopbackDatagramPeer, to port: UInt16) {
        let id = UInt32.random(in: 0...UInt32.max)
        edge.send(
            """
            SUBSCRIBE sip:carol@oma.example SIP/2.0
            Via: SIP/2.0/UDP \(edge.hostPort);branch=z9hG4bKs\(id);rport
            Max-Forwards: 70
            From: <\(watcher)>;tag=w\(id)
            To: <sip:carol@oma.example>
            Call-ID: s\(id)@contoso
            CSeq: 1 SUBSCRIBE
            Contact: <sip:w@\(edge.hostPort)>
            Event: presence
            Accept: application/pidf+xml
            Expires: 3600

            """, to: port)
    }

    /// The watcher's subscriptions bridged, one at a time: the OMA leg each made, answered.
    static func bridge(
        _ watchers: [String], through gateway: Gateway, kamailio: LoopbackDatagramPeer, edge: LoopbackDatagramPeer
    ) async throws -> [SIPRequest] {
        var legs: [SIPRequest] = []
        for watcher in watchers {
            subscribe(from: watcher, edge: edge, to: gateway.enterprise)
            let leg = try #require(await kamailio.request(.subscribe, within: 10), "\(watcher)")
            kamailio.answer(leg, to: gateway.oma, toTag: "k\(legs.count)", extra: "Expires: 3600\n")
            let answered = await edge.first(within: 10) { $0.response?.statusCode == 200 }
            #expect(answered != nil, "\(watcher)")
            // The first NOTIFY (the OMA side sent none within the wait: no state yet), answered.
            if let first = await edge.request(.notify, within: 5) { edge.answer(first, to: gateway.enterprise) }
            legs.append(leg)
        }
        return legs
    }

    /// A NOTIFY from the OMA server in `leg`'s dialog (the server's tag `tag`) saying `basic`
    /// reaches the edge saying it too, and is answered there.
    static func relays(
        _ basic: String, in leg: SIPRequest, tag: String, cseq: Int, gateway: Gateway,
        kamailio: LoopbackDatagramPeer, edge: LoopbackDatagramPeer
    ) async -> Bool {
        kamailio.notify(
            inDialogOf: leg, tag: tag, presentity: "sip:carol@oma.example", cseq: cseq, to: gateway.oma, basic: basic)
        let expected = "<basic>\(basic)</basic>"
        while let relayed = await edge.first(within: 10, where: { $0.request?.method == .notify }),
            case .request(let notify) = relayed
        {
            edge.answer(notify, to: gateway.enterprise)
            if String(decoding: notify.body, as: UTF8.self).contains(expected) { return true }
        }
        return false
    }

    @Test func eachWatchersDialogsLiveOnTheShardOfItsAddressOfRecord() async throws {
        let kamailio = try LoopbackDatagramPeer()
        let edge = try LoopbackDatagramPeer()
        let gateway = try await Gateway(threads: 2, state: "{ store: memory }", kamailio: kamailio, edge: edge)
        let watchers = try Self.watchers(onEachOf: 2)
        let legs = try await Self.bridge(watchers, through: gateway, kamailio: kamailio, edge: edge)
        // Each leg's From tag and top Via branch carry its watcher's shard's mark: AA, then AB.
        for (shard, leg) in legs.enumerated() {
            let tag = try #require(try leg.headers.from?.tag)
            let branch = try #require(try leg.headers.via.first?.branch)
            #expect(ShardMark.shard(ofTag: tag) == shard, "\(tag)")
            #expect(ShardMark.shard(ofBranch: branch) == shard, "\(branch)")
        }
        // The OMA server's NOTIFYs, read by whichever shard's socket the kernel chose, reach
        // their dialog's shard and are relayed: both come from one socket, so one of them was
        // handed over.
        for (n, leg) in legs.enumerated() {
            #expect(
                await Self.relays(
                    "open", in: leg, tag: "k\(n)", cseq: 2, gateway: gateway, kamailio: kamailio, edge: edge),
                "\(watchers[n])")
        }
        // Both shards count in the status, and each shard's gauge is its own series.
        #expect(gateway.server.status?.enterpriseWatches == 2)
        #expect(gateway.server.status?.omaLegs == 2)
        for shard in 0..<2 {
            let series = #"gateway_subscriptions_active{kind="enterprise_watchers",shard="\#(shard)"}"#
            #expect(metricValue(gateway.registry, series) == 1, "\(series)")
        }
        await gateway.server.stop(grace: .milliseconds(200))
    }

    /// A configured peer's `rate-limit` holds for the shards together (docs/shards.md, "What is
    /// shared"): with `rate-limit: 2`, four SUBSCRIBEs at once from the edge, two for watchers
    /// on each shard, make two legs, and the other two are answered 503 with Retry-After
    /// (RFC 3261 §21.5.4): not two on each shard.
    @Test func aPeersRateLimitHoldsForTheShardsTogether() async throws {
        let kamailio = try LoopbackDatagramPeer()
        let edge = try LoopbackDatagramPeer()
        let gateway = try await Gateway(
            threads: 2, state: "{ store: memory }", kamailio: kamailio, edge: edge, edgeOptions: ", rate-limit: 2")
        let watchers = try Self.watchers(onEachOf: 2, each: 2)
        #expect(watchers.count == 4)
        for watcher in watchers { Self.subscribe(from: watcher, edge: edge, to: gateway.enterprise) }
        // Counted by Call-ID: the unanswered legs are retransmitted.
        var refused: Set<String> = []
        var legs: Set<String> = []
        let end = Date().addingTimeInterval(2)
        while end.timeIntervalSinceNow > 0 {
            for message in await edge.receive(for: 0.1) {
                if let response = message.response, response.statusCode == 503, response.headers[.retryAfter] != nil {
                    refused.insert(response.headers.callID ?? "")
                }
            }
            for message in await kamailio.receive(for: 0.1) where message.request?.method == .subscribe {
                legs.insert(message.request?.headers.callID ?? "")
            }
        }
        #expect(refused.count == 2 && legs.count == 2, "refused \(refused), legs \(legs)")
        await gateway.server.stop(grace: .milliseconds(200))
    }

    /// The admin API answers for every shard (docs/shards.md, "Running several"): one page
    /// across both shards' tables, each peer once with the shards' figures summed, and a
    /// subscription ended on whichever shard holds it.
    @Test func theAdminAPIGathersEveryShard() async throws {
        let token = "sharded-admin-token-0123456789"
        let kamailio = try LoopbackDatagramPeer()
        let edge = try LoopbackDatagramPeer()
        let gateway = try await Gateway(
            threads: 2, state: "{ store: memory }", kamailio: kamailio, edge: edge,
            extra: "admin: { address: 127.0.0.1, port: 0, token: \(token) }")
        let admin = try #require(gateway.server.adminAddress?.port)
        func json(_ method: String, _ path: String, body: String = "") async throws -> [String: Any] {
            let answer = try await loopbackHTTP(
                port: admin, method, path, body: body, headers: ["Authorization: Bearer \(token)"])
            #expect(answer.status == 200, "\(method) \(path): \(answer.body)")
            return try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        }
        let watchers = try Self.watchers(onEachOf: 2)
        let legs = try await Self.bridge(watchers, through: gateway, kamailio: kamailio, edge: edge)
        // Shard 0's watcher on the first page of one, shard 1's on the second; two in all.
        var ids: [String] = []
        for (offset, watcher) in watchers.enumerated() {
            let page = try await json("GET", "/subscriptions?limit=1&offset=\(offset)")
            #expect(page["total"] as? Int == 2)
            let listed = try #require((page["subscriptions"] as? [[String: Any]])?.first)
            #expect(listed["watcher"] as? String == watcher)
            ids.append(try #require(listed["id"] as? String))
        }
        #expect(Set(ids).count == 2)
        // The edge made two requests, one read by each shard's owner: listed once, summed.
        let peers = try #require(try await json("GET", "/peers")["peers"] as? [[String: Any]])
        #expect(peers.filter { $0["name"] as? String == "edge" }.count == 1)
        #expect(peers.first { $0["name"] as? String == "edge" }?["requests"] as? Int == 2)
        // Shard 1's subscription ends on shard 1: its OMA leg is unsubscribed.
        let ended = try await json("DELETE", "/subscriptions/\(ids[1])", body: #"{"reason": "rejected"}"#)
        #expect(ended["ended"] as? String == ids[1])
        let unsubscribe = await kamailio.first(within: 5) { $0.request?.headers.callID == legs[1].headers.callID }
        #expect((try unsubscribe?.request?.headers.expires) == 0)
        #expect(try await json("GET", "/subscriptions")["total"] as? Int == 1)
        await gateway.server.stop(grace: .milliseconds(200))
    }

    @Test func aStateKeptByTwoShardsIsContinuedByOneAndByTwoAgain() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("shards-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let state = "{ store: sqlite, path: \(directory.path)/state.db }"
        let kamailio = try LoopbackDatagramPeer()
        let edge = try LoopbackDatagramPeer()
        let watchers = try Self.watchers(onEachOf: 2)
        var gateway = try await Gateway(threads: 2, state: state, kamailio: kamailio, edge: edge)
        let legs = try await Self.bridge(watchers, through: gateway, kamailio: kamailio, edge: edge)
        await gateway.server.stop(grace: .milliseconds(200))
        // One shard takes both dialogs, then two again: each time the OMA server's NOTIFYs in
        // both legs' dialogs are relayed to their watchers.
        for (run, threads) in [1, 2].enumerated() {
            gateway = try await Gateway(threads: threads, state: state, kamailio: kamailio, edge: edge)
            #expect(gateway.server.status?.enterpriseWatches == 2, "threads: \(threads)")
            for (n, leg) in legs.enumerated() {
                let relayed = await Self.relays(
                    run == 0 ? "closed" : "open", in: leg, tag: "k\(n)", cseq: 3 + run, gateway: gateway,
                    kamailio: kamailio, edge: edge)
                #expect(relayed, "threads: \(threads), \(watchers[n])")
            }
            await gateway.server.stop(grace: .milliseconds(200))
        }
    }
}
