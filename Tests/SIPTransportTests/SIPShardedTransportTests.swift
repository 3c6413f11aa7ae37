import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SIPMessages
import SIPTransport
import Testing

/// Two shards on two event loops sharing one UDP and one TCP listener (docs/shards.md): every
/// message reaches its owner once, on the owner's loop, whichever socket the kernel gave it to;
/// a shard answers on a connection the other shard's transport holds.
@Suite(.serialized) struct SIPShardedTransportTests {
    /// What each shard's handler was given: the Call-ID, and whether it ran on the shard's loop.
    final class Received: Sendable {
        let items = NIOLockedValueBox<[[(callID: String, onOwnLoop: Bool)]]>([[], []])
        var all: [[(callID: String, onOwnLoop: Bool)]] { items.withLockedValue { $0 } }
        var count: Int { all.map(\.count).reduce(0, +) }
    }

    struct Shards {
        let group: MultiThreadedEventLoopGroup
        let sockets: SIPShardedTransport
        let bound: [SIPTarget]
        let received = Received()

        /// The shards' handlers record what they get; `answer` lets each answer it too.
        static func start(answer: Bool = false, perAddress: Int = 20) async throws -> Shards {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
            let loops = [group.next(), group.next()]
            var logger = Logger(label: "sip.transport.test")
            logger.logLevel = .critical
            var configuration = SIPNetworkTransport.Configuration(listeners: [
                .init(.udp, host: "127.0.0.1", port: 0), .init(.tcp, host: "127.0.0.1", port: 0),
            ])
            configuration.maxInboundConnectionsPerAddress = perAddress
            let sockets = try SIPShardedTransport(configuration: configuration, loops: loops, logger: logger)
            let shards = Shards(group: group, sockets: sockets, bound: try await sockets.start())
            for index in 0..<2 {
                let transport = sockets.shard(index)
                transport.setMessageHandler { [received = shards.received] message in
                    let onOwnLoop = loops[index].inEventLoop
                    received.items.withLockedValue {
                        $0[index].append((message.message.headers.callID ?? "", onOwnLoop))
                    }
                    guard answer, let request = message.message.request else { return }
                    let response = SIPResponse(replyingTo: request, statusCode: 200)
                    _ = transport.send(.response(response), to: message.source, connection: message.connection)
                }
            }
            return shards
        }

        func stop() async throws {
            await sockets.shutdown()
            try await group.shutdownGracefully()
        }
    }

    /// A request from `from` to the gateway; in a dialog when `toTag` is given.
    static func request(callID: String, from: String, toTag: String?, via: String) -> String {
        [
            "SUBSCRIBE sip:bob@gateway.test SIP/2.0", "Via: SIP/2.0/\(via);branch=z9hG4bK\(callID);rport",
            "Max-Forwards: 70", "From: <\(from)>;tag=f\(callID)",
            "To: <sip:bob@gateway.test>" + (toTag.map { ";tag=\($0)" } ?? ""), "Call-ID: \(callID)",
            "CSeq: 1 SUBSCRIBE", "Event: presence", "Content-Length: 0", "", "",
        ].joined(separator: "\r\n")
    }

    /// RFC 3261 §12.2.1.1 and §8.1.1.3: eight senders (so the kernel spreads them over both
    /// sockets) send requests in dialogs of each shard and requests outside any dialog; each
    /// reaches its owner, on the owner's loop, once.
    @Test func everyDatagramReachesItsOwnerOnceOnItsLoop() async throws {
        let shards = try await Shards.start()
        var expected: [Set<String>] = [[], []]
        var peers: [RawUDPPeer] = []
        for n in 0..<8 {
            let peer = try await RawUDPPeer()
            peers.append(peer)
            let via = "UDP 127.0.0.1:\(peer.port)"
            for shard in 0..<2 {
                let callID = "p\(n)-s\(shard)"
                expected[shard].insert(callID)
                let text = Self.request(
                    callID: callID, from: "sip:w\(n)@partner.example",
                    toTag: ShardMark.tag("k\(n)", shard: shard), via: via)
                try await peer.send(text, to: shards.bound[0])
            }
            let fresh = "p\(n)-new"
            let from = "sip:w\(n)@partner.example"
            expected[shards.sockets.map.shard(ofAddressOfRecord: try SIPURI(from))].insert(fresh)
            try await peer.send(Self.request(callID: fresh, from: from, toTag: nil, via: via), to: shards.bound[0])
        }
        _ = try await waitFor("24 requests", seconds: 30) { shards.received.count >= 24 ? true : nil }
        try await Task.sleep(for: .milliseconds(100))
        let got = shards.received.all
        for shard in 0..<2 {
            #expect(got[shard].map(\.callID).sorted() == expected[shard].sorted(), "shard \(shard)")
            #expect(got[shard].allSatisfy { $0.onOwnLoop })
        }
        #expect(!expected[0].isEmpty && !expected[1].isEmpty)
        for peer in peers { await peer.close() }
        try await shards.stop()
    }

    /// A shard's handler is called the same way for its 40,000th message as for its first: the
    /// handler read once wrapped it deeper each time, and the loop's stack overflowed at about
    /// 25,000 messages.
    @Test func tensOfThousandsOfMessagesReachTheirShard() async throws {
        let shards = try await Shards.start()
        let peer = try await RawUDPPeer()
        let via = "UDP 127.0.0.1:\(peer.port)"
        let total = 40_000
        for n in 0..<total {
            let text = Self.request(
                callID: "m\(n)", from: "sip:w@partner.example", toTag: ShardMark.tag("k", shard: n % 2), via: via)
            try await peer.send(text, to: shards.bound[0])
            // Paced, so that the receive buffer is never full and every datagram is read.
            if n % 500 == 499 {
                _ = try await waitFor("\(n + 1) requests", seconds: 30) { shards.received.count > n - 100 ? true : nil }
            }
        }
        _ = try await waitFor("\(total) requests", seconds: 30) { shards.received.count >= total ? true : nil }
        #expect(shards.received.all.map(\.count) == [total / 2, total / 2])
        await peer.close()
        try await shards.stop()
    }

    /// RFC 3261 §18.2.2: one TCP connection carries requests of both shards; each shard's
    /// response goes back on that connection, whichever shard's transport accepted it.
    @Test func aShardAnswersOnAConnectionTheOtherShardHolds() async throws {
        let shards = try await Shards.start(answer: true)
        let tcp = try #require(shards.bound.first { $0.kind == .tcp })
        let peer = try await RawTCPPeer(connectingTo: tcp)
        let local = try #require(peer.localTarget)
        for shard in 0..<2 {
            try await peer.write(
                Self.request(
                    callID: "tcp-s\(shard)", from: "sip:w@partner.example", toTag: ShardMark.tag("k", shard: shard),
                    via: "TCP \(local.hostPort)"))
        }
        let bytes = try await waitFor("both 200s", seconds: 30) { () -> String? in
            let text = String(decoding: peer.bytes, as: UTF8.self)
            return text.contains("Call-ID: tcp-s0") && text.contains("Call-ID: tcp-s1") ? text : nil
        }
        #expect(bytes.components(separatedBy: "SIP/2.0 200").count == 3)
        let got = shards.received.all
        #expect(got[0].map(\.callID) == ["tcp-s0"] && got[1].map(\.callID) == ["tcp-s1"])
        #expect(got.joined().allSatisfy { $0.onOwnLoop })
        #expect(!peer.isClosed)
        await peer.close()
        try await shards.stop()
    }

    /// RFC 3261 §18.1.1: a request to a peer's address goes on the connection the peer opened,
    /// whichever shard holds it. Each shard sends a NOTIFY to the address the peer connected
    /// from, where nothing listens, so only that connection reaches it: both arrive there.
    @Test func eachShardSendsOnTheConnectionAPeerOpened() async throws {
        let shards = try await Shards.start()
        let tcp = try #require(shards.bound.first { $0.kind == .tcp })
        let peer = try await RawTCPPeer(connectingTo: tcp)
        let local = try #require(peer.localTarget)
        try await peer.write(Self.request(callID: "hello", from: "sip:w@partner.example", toTag: nil, via: "TCP \(local.hostPort)"))
        _ = try await waitFor("the peer's request", seconds: 30) { shards.received.count == 1 ? true : nil }
        for shard in 0..<2 {
            let text = Self.request(callID: "notify-s\(shard)", from: "sip:bob@gateway.test", toTag: "w", via: "TCP \(tcp.hostPort)")
            let notify = try SIPMessage(parsing: Array(text.utf8))
            let transport = shards.sockets.shard(shard)
            try await transport.eventLoop.flatSubmit {
                transport.send(notify, to: SIPTarget(.tcp, host: "127.0.0.1", port: local.port), connection: nil)
            }.get()
        }
        let bytes = try await waitFor("both requests", seconds: 30) { () -> String? in
            let text = String(decoding: peer.bytes, as: UTF8.self)
            return text.contains("Call-ID: notify-s0") && text.contains("Call-ID: notify-s1") ? text : nil
        }
        #expect(bytes.components(separatedBy: "SUBSCRIBE sip:bob@gateway.test").count == 3)
        #expect(!peer.isClosed)
        await peer.close()
        try await shards.stop()
    }

    /// The limits count a side's connections, not a shard's: the kernel spreads one address's
    /// connections over both listeners, and still only `maxInboundConnectionsPerAddress` stay.
    /// Waits are on what the shards hold (bounded: a loaded machine is slow, never wrong).
    @Test func theConnectionLimitsHoldAcrossShards() async throws {
        let shards = try await Shards.start(perAddress: 2)
        let tcp = try #require(shards.bound.first { $0.kind == .tcp })
        func held() async throws -> Int {
            var total = 0
            for member in shards.sockets.members { total += try await member.openConnections(offset: 0, limit: 0).get().total }
            return total
        }
        func until(_ what: String, _ done: () async throws -> Bool) async throws {
            for _ in 0..<3_000 where try await !done() { try await Task.sleep(for: .milliseconds(10)) }
            try #require(try await done(), "timed out waiting for \(what)")
        }
        var peers: [RawTCPPeer] = []
        for _ in 0..<8 { peers.append(try await RawTCPPeer(connectingTo: tcp)) }
        try await until("six refused") { peers.filter(\.isClosed).count == 6 }
        #expect(try await held() == 2)
        let third = try await RawTCPPeer(connectingTo: tcp)
        try await until("a third refused while two are open") { third.isClosed }
        // A slot given back on one shard is free for a connection accepted by either.
        let admitted = peers.filter { !$0.isClosed }
        await admitted[0].close()
        try await until("the slot given back") { try await held() == 1 }
        let next = try await RawTCPPeer(connectingTo: tcp)
        try await until("the next admitted") { try await held() == 2 }
        #expect(!next.isClosed)
        for peer in peers + [third, next] { await peer.close() }
        try await shards.stop()
    }
}
