import NIOCore
import SIPMessages
import SIPTransport
import Testing

/// The send and receive batching of ``SIPNetworkTransport`` on real loopback sockets: sends made
/// in one loop turn are flushed together, and a UDP listener reads several datagrams per system
/// call. Counts are bounded; waits are bounded (`waitFor`); nothing is timed.
@Suite(.serialized) struct SIPNetworkTransportBatchingTests {
    typealias Configuration = SIPNetworkTransport.Configuration

    @Test func responsesSentInOneLoopTurnAllArriveAndEachSendSucceedsAndIsCounted() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
        let peer = try await RawUDPPeer()
        let target = SIPTarget(.udp, host: "127.0.0.1", port: peer.port)
        let count = 20
        let responses = try (0..<count).map { index in
            let request = try TestMessages.request(via: target, branch: "batch\(index)", callID: "batch-\(index)@partner.example")
            return SIPResponse(replyingTo: request, statusCode: 200, toTag: "gw\(index)")
        }
        // All sends in one task on the loop: none is flushed before the task returns.
        let transport = gateway.transport
        let sends = try await transport.eventLoop.submit {
            responses.map { transport.send(.response($0), to: target, connection: nil) }
        }.get()
        for send in sends { try await send.get() }
        var callIDs: Set<String> = []
        for _ in 0..<count {
            let reply = try SIPMessage(parsing: try await peer.next())
            #expect(reply.response?.statusCode == 200)
            if let callID = reply.headers.callID { callIDs.insert(callID) }
        }
        #expect(callIDs == Set((0..<count).map { "batch-\($0)@partner.example" }))
        #expect(gateway.counter("sip_transport_messages_sent_total", [("transport", "udp")]) == Int64(count))
        await peer.close()
        await gateway.transport.shutdown()
    }

    @Test func requestsSentInOneLoopTurnOnOneTCPConnectionArriveInOrder() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
        let server = try await Harness.start(Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
        let via = gateway.bound[0]
        let count = 10
        let requests = try (0..<count).map { index in
            try TestMessages.request("MESSAGE", via: via, branch: "tcp\(index)", callID: "tcp-\(index)@gateway.test",
                                     cseq: index + 1)
        }
        let transport = gateway.transport
        let target = server.bound[0]
        let sends = try await transport.eventLoop.submit {
            requests.map { transport.send(.request($0), to: target, connection: nil) }
        }.get()
        for send in sends { try await send.get() }
        for index in 0..<count {
            let received = try await server.inbox.next()
            #expect(received.message.headers.callID == "tcp-\(index)@gateway.test")
        }
        #expect(gateway.counter("sip_transport_messages_sent_total", [("transport", "tcp")]) == Int64(count))
        await gateway.transport.shutdown()
        await server.transport.shutdown()
    }

    @Test func burstOfDatagramsUpToTheUDPMaximumIsReadWhole() async throws {
        // RFC 3261 §18.1.1 lets a UDP message be as large as a datagram carries (65,507 bytes
        // over IPv4); a vector read must give each datagram its own 64 KiB.
        let gateway = try await Harness.start(Configuration(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
        let peer = try await RawUDPPeer()
        let sizes = [0, 60_000, 10, 4_000, 0, 60_000, 100, 0, 10, 30_000, 60_000, 1]
        for (index, size) in sizes.enumerated() {
            try await peer.send(TestMessages.raw("MESSAGE", viaHost: "127.0.0.1", viaPort: peer.port, branch: "burst\(index)",
                                                 callID: "burst-\(index)", body: String(repeating: "x", count: size)),
                                to: gateway.bound[0])
        }
        var bodies: [String: Int] = [:]
        for _ in sizes {
            let message = try await gateway.inbox.next()
            bodies[message.message.headers.callID ?? ""] = message.message.body.count
        }
        #expect(bodies == Dictionary(uniqueKeysWithValues: sizes.enumerated().map { ("burst-\($0.offset)", $0.element) }))
        await peer.close()
        await gateway.transport.shutdown()
    }
}
