import NIOCore
import NIOEmbedded
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// Two transaction layers talking over the loopback network, with loss.
@Suite struct TransactionEndToEndTests {
    final class Pair {
        let loop = EmbeddedEventLoop()
        let network: SIPLoopbackNetwork
        let alice: SIPTransactionLayer
        let bob: SIPTransactionLayer
        let bobAddress = SIPTarget(.udp, host: "127.0.0.1", port: 5062)
        let requestsAtBob = Recorder<SIPRequest>()
        let start: NIODeadline

        init(latency: TimeAmount = .milliseconds(20)) {
            network = SIPLoopbackNetwork(eventLoop: loop, latency: latency)
            alice = SIPTransactionLayer(transport: network.endpoint(SIPTarget(.udp, host: "127.0.0.1", port: 5061)))
            bob = SIPTransactionLayer(transport: network.endpoint(bobAddress))
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

    @Test func aRequestIsAnsweredAcrossTheNetwork() throws {
        let p = Pair()
        let events = Recorder<SIPClientTransactionEvent>()
        try p.alice.send(TransactionHarness.outgoing(), to: p.bobAddress) { [events] in events.items.append($0) }
        p.advance(to: 0.1)
        #expect(events.items.map(\.response.statusCode) == [200])
        #expect(p.requestsAtBob.items.count == 1)
        p.advance(to: 40)
        #expect(p.alice.clientTransactionCount == 0)
        #expect(p.bob.serverTransactionCount == 0)
    }

    @Test func aBENOTIFYReachesTheTUWithoutAServerTransactionOrAResponse() throws {
        let p = Pair()
        let received = Recorder<SIPRequest>()
        p.bob.setRequestHandler(for: [.benotify]) { [received] incoming in received.items.append(incoming.request) }
        let text = [
            "BENOTIFY sip:bob@127.0.0.1:5062 SIP/2.0",
            "Via: SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bKbn1",
            "Max-Forwards: 70",
            "From: <sip:alice@contoso.com>;tag=a1",
            "To: <sip:bob@contoso.com>;tag=b1",
            "Call-ID: bn1@127.0.0.1",
            "CSeq: 2 BENOTIFY",
            "Event: presence",
            "Subscription-State: active;expires=100",
            "Content-Length: 0", "", "",
        ].joined(separator: "\r\n")
        let alice = p.network.endpoint(SIPTarget(.udp, host: "127.0.0.1", port: 5061))
        _ = alice.send(try SIPMessage(parsing: Array(text.utf8)), to: p.bobAddress, connection: nil)
        p.advance(to: 0.1)
        #expect(received.items.map(\.method) == [.benotify])
        #expect(p.bob.serverTransactionCount == 0)
        // Nothing went back to the sender.
        #expect(!p.network.delivered.contains { $0.to == SIPTarget(.udp, host: "127.0.0.1", port: 5061) })
    }

    @Test func aLostResponseIsRecoveredByTheRequestRetransmissionAndTheServersCompletedState() throws {
        let p = Pair()
        p.network.dropNext { $0.message?.response != nil }
        let events = Recorder<SIPClientTransactionEvent>()
        try p.alice.send(TransactionHarness.outgoing(), to: p.bobAddress) { [events] in events.items.append($0) }
        p.advance(to: 0.4)
        #expect(events.items.isEmpty)
        // Timer E at 0.5 s retransmits; Bob's server transaction, in Completed, resends its 200
        // without asking the TU again.
        p.advance(to: 0.6)
        #expect(events.items.map(\.response.statusCode) == [200])
        #expect(p.requestsAtBob.items.count == 1)
    }

    @Test func aPeerThatNeverAnswersTimesOutWith408() throws {
        let p = Pair()
        let bob = p.bobAddress
        p.network.dropNext(100) { $0.to == bob }
        let events = Recorder<SIPClientTransactionEvent>()
        try p.alice.send(TransactionHarness.outgoing(), to: p.bobAddress) { [events] in events.items.append($0) }
        p.advance(to: 33)
        #expect(events.items.map(\.response.statusCode) == [408])
        #expect(p.network.log.filter(\.dropped).count == 11)
    }
}
