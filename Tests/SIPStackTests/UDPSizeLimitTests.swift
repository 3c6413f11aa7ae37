import NIOCore
import NIOEmbedded
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// RFC 3261 §18.1.1: "If a request is within 200 bytes of the path MTU, or if it is larger than
/// 1300 bytes and the path MTU is unknown, the request MUST be sent using an RFC 2914 congestion
/// controlled transport protocol, such as TCP. If this causes a change in the transport protocol
/// from the one indicated in the top Via, the value in the top Via MUST be changed."
@Suite struct UDPSizeLimitTests {
    final class Pair {
        let loop = EmbeddedEventLoop()
        let network: SIPLoopbackNetwork
        let alice: SIPTransactionLayer
        let bob: SIPTransactionLayer
        let bobUDP = SIPTarget(.udp, host: "127.0.0.1", port: 5062)
        let bobTCP = SIPTarget(.tcp, host: "127.0.0.1", port: 5062)
        let requestsAtBob = Recorder<SIPRequest>()
        let start: NIODeadline

        init(aliceHasTCP: Bool = true, limit: Int? = 1300) {
            network = SIPLoopbackNetwork(eventLoop: loop, latency: .milliseconds(20))
            let aliceUDP = SIPTarget(.udp, host: "127.0.0.1", port: 5061)
            let endpoint = aliceHasTCP ? network.endpoint(aliceUDP, SIPTarget(.tcp, host: "127.0.0.1", port: 5061))
                                       : network.endpoint(aliceUDP)
            alice = SIPTransactionLayer(transport: endpoint, configuration: .init(udpRequestSizeLimit: limit))
            bob = SIPTransactionLayer(transport: network.endpoint(bobUDP, bobTCP))
            alice.start()
            bob.start()
            bob.setRequestHandler(for: [.message]) { [bob, requestsAtBob] incoming in
                requestsAtBob.items.append(incoming.request)
                try? bob.respond(SIPResponse(replyingTo: incoming.request, statusCode: 200, toTag: incoming.toTag),
                                 to: incoming.transaction)
            }
            start = loop.now
        }

        func advance(to seconds: Double) {
            loop.advanceTime(to: start + .nanoseconds(Int64(seconds * 1e9)))
        }
    }

    static func message(bodySize: Int) -> SIPRequest {
        var request = TransactionHarness.outgoing()
        request.uri = SIPURI(scheme: .sip, host: "127.0.0.1", port: 5062)
        request.headers.append(.contentType, "text/plain")
        request.body = Array(repeating: UInt8(ascii: "x"), count: bodySize)
        return request
    }

    @Test func requestLargerThan1300BytesToAUDPTargetGoesOverTCPWithATCPVia() throws {
        let p = Pair()
        let events = Recorder<SIPClientTransactionEvent>()
        try p.alice.send(Self.message(bodySize: 1400), to: p.bobUDP) { [events] in events.items.append($0) }
        p.advance(to: 0.1)
        let sent = try #require(p.network.delivered.first { $0.message?.request != nil })
        #expect(sent.to == p.bobTCP)
        #expect(try sent.message?.request?.headers.via.first?.transport.uppercased() == "TCP")
        // bob's answer comes back (over the same connection) and completes the transaction.
        #expect(events.items.count == 1)
        #expect(p.network.delivered.contains { $0.message?.response != nil && $0.to.kind == .tcp })
    }

    @Test func smallRequestStaysOnUDP() throws {
        let p = Pair()
        try p.alice.send(Self.message(bodySize: 100), to: p.bobUDP) { _ in }
        p.advance(to: 0.1)
        let sent = try #require(p.network.delivered.first { $0.message?.request != nil })
        #expect(sent.to == p.bobUDP)
        #expect(try sent.message?.request?.headers.via.first?.transport.uppercased() == "UDP")
    }

    @Test func largeRequestStaysOnUDPWithoutATCPTransportOrWithTheRuleOff() throws {
        for p in [Pair(aliceHasTCP: false), Pair(limit: nil)] {
            try p.alice.send(Self.message(bodySize: 1400), to: p.bobUDP) { _ in }
            p.advance(to: 0.1)
            let sent = try #require(p.network.delivered.first { $0.message?.request != nil })
            #expect(sent.to == p.bobUDP)
        }
    }
}
