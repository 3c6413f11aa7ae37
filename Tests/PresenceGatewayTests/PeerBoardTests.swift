import Foundation
import NIOCore
@testable import PresenceGateway
import SIPMessages
import SIPTransport
import Testing

/// What the shards share of each configured peer (docs/shards.md, "What is shared"): its
/// `rate-limit`, one lock-free cell, and its `max-subscriptions`, counted by every shard.
@Suite struct PeerBoardTests {
    typealias H = GatewayCoreTests

    static let second: Int64 = 1_000_000_000

    /// The cell is a token bucket of `rate` a second up to `burst`, full at first: a burst of
    /// `burst` requests passes at once, the next is refused, and one more passes for each
    /// interval (1/rate) that goes by, never more than `burst` after a long pause.
    @Test func theRateCellIsATokenBucketThatStartsFull() {
        let cell = RateCell(rate: 10, burst: 10)
        let start = 50 * Self.second
        #expect((0..<10).allSatisfy { _ in cell.take(now: start) })
        #expect(!cell.take(now: start))
        #expect(!cell.take(now: start + Self.second / 10 - 1))
        #expect(cell.take(now: start + Self.second / 10))
        #expect(!cell.take(now: start + Self.second / 10))
        let later = start + 60 * Self.second
        #expect((0..<10).allSatisfy { _ in cell.take(now: later) })
        #expect(!cell.take(now: later))
        // Below one a second: one request, then the next after 1/rate.
        let slow = RateCell(rate: 0.5, burst: 1)
        #expect(slow.take(now: start))
        #expect(!slow.take(now: start + Self.second))
        #expect(slow.take(now: start + 2 * Self.second))
    }

    /// Threads taking from one cell at the same moment let exactly its burst through together.
    @Test func threadsTakingAtOnceLetExactlyTheBurstThrough() async {
        let cell = RateCell(rate: 1_000, burst: 1_000)
        let now = 7 * Self.second
        let passed = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<10_000).reduce(0) { sum, _ in sum + (cell.take(now: now) ? 1 : 0) } }
            }
            return await group.reduce(0, +)
        }
        #expect(passed == 1_000)
    }

    /// Every shard's router takes a configured peer's requests from one cell: `rate-limit: 2`
    /// lets two requests through at one moment whichever shards they reach, not two per shard.
    @Test func everyShardsRouterTakesFromThePeersOneRate() throws {
        let configuration = try GatewayConfiguration(
            yaml: GatewayConfiguration.defaultYAML.replacingOccurrences(of: "rate-limit: 5000", with: "rate-limit: 2"))
        let board = PeerBoard(configuration, shards: 2)
        var routers = (0..<2).map { _ in
            var router = FederationRouter(configuration: configuration, localAddresses: [])
            router.board = board
            return router
        }
        let kamailio = FederationRouter.Arrival(side: .oma, source: SIPTarget(.udp, host: "127.0.0.1", port: 5070))
        let now = NIODeadline.uptimeNanoseconds(5_000_000_000)
        let first = [routers[0].allow(kamailio, now: now), routers[1].allow(kamailio, now: now)]
        let second = [routers[0].allow(kamailio, now: now), routers[1].allow(kamailio, now: now)]
        let later = routers[1].allow(kamailio, now: now + .milliseconds(500))
        #expect(first == [true, true] && second == [false, false] && later)
    }

    /// Each shard's count of a peer's dialogs is summed by the others: taking, counting,
    /// releasing and forgetting on one shard is seen by the other; a board for another
    /// configuration (a reload) is given every count held.
    @Test func eachShardSeesTheDialogsTheOthersHold() throws {
        let configuration = try GatewayConfiguration(yaml: GatewayConfiguration.defaultYAML)
        let board = PeerBoard(configuration, shards: 2)
        var first = Quotas(), second = Quotas()
        first.share(board, shard: 0)
        second.share(board, shard: 1)
        let taken = [first.takePeer("kamailio", limit: 3), first.takePeer("kamailio", limit: 3)]
        second.countPeer("kamailio")
        let past = [first.takePeer("kamailio", limit: 3), second.takePeer("kamailio", limit: 3)]
        #expect(taken == [true, true] && past == [false, false])
        #expect(first.refusals.peerQuota == 1 && second.refusals.peerQuota == 1)
        first.releasePeer("kamailio")
        let again = second.takePeer("kamailio", limit: 3)
        #expect(again)
        #expect(board.held("kamailio", besides: 0) == 2 && board.held("kamailio", besides: 1) == 1)
        second.resetPeers()
        #expect(board.held("kamailio", besides: 0) == 0)
        // An address is no configured peer: each shard counts it alone.
        let alone = [first.takePeer("192.0.2.7", limit: 1), second.takePeer("192.0.2.7", limit: 1)]
        #expect(alone == [true, true])

        let reloaded = PeerBoard(configuration, shards: 2)
        first.share(reloaded, shard: 0)
        #expect(reloaded.held("kamailio", besides: 1) == 1)
    }

    /// Two cores of one gateway (shards 0 and 1) hold the enterprise edge to its
    /// `max-subscriptions: 3` together: a watcher's batch on the first takes its dialog and a
    /// leg, one on the second its dialog, and the first's next batch is refused with 503
    /// (docs/security.md), which each core alone would have taken.
    @Test func twoCoresHoldAPeerToItsMaxSubscriptionsTogether() throws {
        let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(
            of: "network: sameEnterprise, trusted: true }", with: "network: sameEnterprise, trusted: true, max-subscriptions: 3 }")
        let peer = DialogPeer(side: .enterprise, transport: .tcp, host: "127.0.0.1", port: 5062, peer: 0)
        func cores(sharing: Bool) throws -> [H.Harness] {
            let configuration = try GatewayConfiguration(yaml: yaml)
            let board = PeerBoard(configuration, shards: 2)
            return try (0..<2).map { shard in
                var h = try H.Harness(yaml: yaml)
                h.core.place(onShard: shard, of: 2)
                if sharing { h.core.share(board) }
                return h
            }
        }
        func subscribe(_ h: inout H.Harness, _ n: Int) throws -> Int? {
            var request = try H.enterpriseSubscribe(resources: ["sip:john\(n)@oma.example"], from: "sip:carol\(n)@contoso.com")
            request.headers.set(.callID, "ent-call-\(n)")
            let watcher = WatcherIdentity(uri: "sip:carol\(n)@contoso.com", network: .sameEnterprise)
            h.nextID += 1
            let actions = h.core.receive(request, id: h.nextID, from: .enterprise, watcher: watcher, peer: peer, now: h.now)
            return H.responses(actions, h.nextID).first?.statusCode
        }
        var shared = try cores(sharing: true)
        #expect(try subscribe(&shared[0], 1) != 503)
        #expect(try subscribe(&shared[1], 2) != 503)
        #expect(try subscribe(&shared[0], 3) == 503)

        var alone = try cores(sharing: false)
        #expect(try subscribe(&alone[0], 1) != 503)
        #expect(try subscribe(&alone[1], 2) != 503)
        #expect(try subscribe(&alone[0], 3) != 503)
    }
}
