import NIOCore
import NIOEmbedded
import SIPMessages
import SIPTransport
import Testing

/// Collects what an endpoint receives (the loop and the test share one thread).
final class LoopbackInbox: @unchecked Sendable {
    var messages: [SIPReceivedMessage] = []
}

/// The outcome of an already completed future on an `EmbeddedEventLoop` (`wait()` would trap there).
final class LoopbackSendOutcome: @unchecked Sendable {
    var succeeded = false
    var code: SIPTransportError.Code?

    init(_ future: EventLoopFuture<Void>) {
        future.whenComplete { [self] result in
            switch result {
            case .success: self.succeeded = true
            case .failure(let error): self.code = (error as? SIPTransportError)?.code
            }
        }
    }
}

private func options(via: String) throws -> SIPMessage {
    try SIPMessage(parsing: Array("""
        OPTIONS sip:gw@127.0.0.1 SIP/2.0\r
        Via: \(via)\r
        Max-Forwards: 70\r
        From: <sip:alice@example.com>;tag=a1\r
        To: <sip:gw@example.com>\r
        Call-ID: loop-1@example.com\r
        CSeq: 1 OPTIONS\r
        Content-Length: 0\r
        \r

        """.utf8))
}

@Suite struct SIPLoopbackNetworkTests {
    let loop = EmbeddedEventLoop()
    let network: SIPLoopbackNetwork
    let a: SIPLoopbackNetwork.Endpoint
    let b: SIPLoopbackNetwork.Endpoint
    let inbox = LoopbackInbox()

    init() {
        network = SIPLoopbackNetwork(eventLoop: loop)
        a = network.endpoint(SIPTarget(.udp, host: "127.0.0.1", port: 5070), SIPTarget(.tcp, host: "127.0.0.1", port: 5070))
        b = network.endpoint(SIPTarget(.udp, host: "127.0.0.1", port: 5060), SIPTarget(.tcp, host: "127.0.0.1", port: 5060))
        b.setMessageHandler { [inbox] in inbox.messages.append($0) }
    }

    @Test func deliveryHappensOnTheLoopNotInsideSend() throws {
        _ = a.send(try options(via: "SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK1"), to: b.address, connection: nil)
        #expect(inbox.messages.isEmpty)
        loop.run()
        try #require(inbox.messages.count == 1)
        #expect(inbox.messages[0].source == a.address)
        #expect(inbox.messages[0].local == b.address)
        #expect(inbox.messages[0].connection == nil)
    }

    @Test func receiverAddsReceivedWhenSentByDiffersFromTheSource() throws {
        // RFC 3261 §18.2.1: an address in sent-by that differs from the packet source gets `received`.
        _ = a.send(try options(via: "SIP/2.0/UDP 192.0.2.7:5070;branch=z9hG4bK2"), to: b.address, connection: nil)
        loop.run()
        let via = try #require(try inbox.messages.first?.message.headers.via.first)
        #expect(via.received == "127.0.0.1")
        #expect(via.rport == nil)
    }

    @Test func receiverFillsInRportAndReceivedWhenRportIsRequested() throws {
        // RFC 3581 §4: rport without value is set to the source port, and received is added even
        // when the address matches.
        _ = a.send(try options(via: "SIP/2.0/UDP 127.0.0.1:9999;branch=z9hG4bK3;rport"), to: b.address, connection: nil)
        loop.run()
        let via = try #require(try inbox.messages.first?.message.headers.via.first)
        #expect(via.rport == .port(5070))
        #expect(via.received == "127.0.0.1")
        #expect(via.branch == "z9hG4bK3")
    }

    @Test func matchingSentByWithoutRportIsLeftAlone() throws {
        _ = a.send(try options(via: "SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK4"), to: b.address, connection: nil)
        loop.run()
        let via = try #require(try inbox.messages.first?.message.headers.via.first)
        #expect(via.received == nil)
    }

    @Test func latencyDelaysDeliveryOnTheLoopClock() throws {
        network.latency = .milliseconds(100)
        _ = a.send(try options(via: "SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK5"), to: b.address, connection: nil)
        loop.advanceTime(by: .milliseconds(99))
        #expect(inbox.messages.isEmpty)
        loop.advanceTime(by: .milliseconds(1))
        #expect(inbox.messages.count == 1)
    }

    @Test func sendingToAnUnknownTargetFailsWithATransportError() throws {
        let future = a.send(try options(via: "SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK6"),
                            to: SIPTarget(.udp, host: "127.0.0.1", port: 1), connection: nil)
        #expect(LoopbackSendOutcome(future).code == .connectFailed)
    }

    @Test func sendingOverATransportTheEndpointLacksFails() throws {
        let udpOnly = network.endpoint(SIPTarget(.udp, host: "127.0.0.1", port: 5080))
        let future = udpOnly.send(try options(via: "SIP/2.0/TCP 127.0.0.1:5080;branch=z9hG4bK7"),
                                  to: SIPTarget(.tcp, host: "127.0.0.1", port: 5060), connection: nil)
        #expect(LoopbackSendOutcome(future).code == .unsupportedTransport)
    }

    @Test func dropNextLosesExactlyTheMatchingMessagesAndLogsThem() throws {
        network.dropNext(2) { $0.message?.request?.method == .options }
        for i in 0..<3 {
            let f = a.send(try options(via: "SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKd\(i)"), to: b.address, connection: nil)
            #expect(LoopbackSendOutcome(f).succeeded)  // a silent drop still succeeds, as a lost UDP datagram does
        }
        loop.run()
        #expect(inbox.messages.count == 1)
        #expect(try inbox.messages.first?.message.headers.via.first?.branch == "z9hG4bKd2")
        #expect(network.log.map(\.dropped) == [true, true, false])
        #expect(network.delivered.count == 1)
    }

    @Test func failingDropReportsTheDroppedCode() throws {
        network.dropNext(failingSend: true) { _ in true }
        let future = a.send(try options(via: "SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK8"), to: b.address, connection: nil)
        #expect(LoopbackSendOutcome(future).code == .dropped)
        loop.run()
        #expect(inbox.messages.isEmpty)
    }

    @Test func theLogHoldsTheWireBytes() throws {
        let message = try options(via: "SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK9")
        _ = a.send(message, to: b.address, connection: nil)
        let record = try #require(network.log.first)
        #expect(record.bytes == message.serialized())
        #expect(record.from == a.address && record.to == b.address)
        #expect(record.time == loop.now)
    }

    @Test func streamTransportsShareOneConnectionPerPairBothWays() throws {
        let tcpB = SIPTarget(.tcp, host: "127.0.0.1", port: 5060)
        let tcpA = SIPTarget(.tcp, host: "127.0.0.1", port: 5070)
        let back = LoopbackInbox()
        a.setMessageHandler { [back] in back.messages.append($0) }
        _ = a.send(try options(via: "SIP/2.0/TCP 127.0.0.1:5070;branch=z9hG4bKt1"), to: tcpB, connection: nil)
        _ = b.send(try options(via: "SIP/2.0/TCP 127.0.0.1:5060;branch=z9hG4bKt2"), to: tcpA, connection: nil)
        loop.run()
        let forward = try #require(inbox.messages.first?.connection)
        #expect(back.messages.first?.connection == forward)
        #expect(inbox.messages.first?.source == tcpA)
    }

    @Test func aRemovedEndpointNoLongerReceives() throws {
        _ = a.send(try options(via: "SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKr"), to: b.address, connection: nil)
        network.removeEndpoint(b.address)
        loop.run()
        #expect(inbox.messages.isEmpty)
        let again = a.send(try options(via: "SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKr2"), to: b.address, connection: nil)
        #expect(LoopbackSendOutcome(again).code == .connectFailed)
    }
}

@Suite struct SIPLoopbackReceivedProcessingTests {
    @Test func ipv6SentByEqualToTheSourceGetsNoReceived() throws {
        let message = try options(via: "SIP/2.0/UDP [::1]:5070;branch=z9hG4bKv6")
        let out = SIPLoopbackNetwork.applyingReceivedProcessing(message, source: SIPTarget(.udp, host: "::1", port: 5070))
        #expect(try out.headers.via.first?.received == nil)
    }

    @Test func onlyTheTopViaOfACommaListChanges() throws {
        let message = try options(via: "SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKtop, SIP/2.0/UDP 192.0.2.2;branch=z9hG4bKnext")
        let out = SIPLoopbackNetwork.applyingReceivedProcessing(message, source: SIPTarget(.udp, host: "198.51.100.1", port: 5060))
        let vias = try out.headers.via
        try #require(vias.count == 2)
        #expect(vias[0].received == "198.51.100.1")
        #expect(vias[1].received == nil && vias[1].branch == "z9hG4bKnext")
    }

    @Test func responsesAreNotTouched() throws {
        let response = SIPMessage.response(SIPResponse(statusCode: 200, reasonPhrase: "OK", headers: [(.via, "SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKr")]))
        #expect(SIPLoopbackNetwork.applyingReceivedProcessing(response, source: SIPTarget(.udp, host: "198.51.100.1", port: 5060)) == response)
    }
}
