import NIOCore
import NIOEmbedded
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// RFC 4475 vectors fed through the wire to the transaction layer: §3.2.1 (transaction layer) and
/// the §3.3 requests and response, answered as the gateway answers them.
@Suite struct TransactionRFC4475Tests {
    /// A gateway listening on UDP, TCP and TLS, and a sender at 192.0.2.99 on the same kinds
    /// (port 5060, 5061 for TLS, the default ports the vectors' Vias imply).
    final class Setup {
        let loop = EmbeddedEventLoop()
        let network: SIPLoopbackNetwork
        let layer: SIPTransactionLayer
        let sender: SIPLoopbackNetwork.Endpoint
        let inbox = Recorder<SIPReceivedMessage>()
        let tu = Recorder<SIPTransactionLayer.IncomingRequest>()

        init(_ configuration: SIPTransactionLayer.Configuration = .init()) {
            network = SIPLoopbackNetwork(eventLoop: loop)
            let gateway = network.endpoint(SIPTarget(.udp, host: "127.0.0.1", port: 5060),
                                           SIPTarget(.tcp, host: "127.0.0.1", port: 5060),
                                           SIPTarget(.tls, host: "127.0.0.1", port: 5061))
            sender = network.endpoint(SIPTarget(.udp, host: "192.0.2.99", port: 5060),
                                      SIPTarget(.tcp, host: "192.0.2.99", port: 5060),
                                      SIPTarget(.tls, host: "192.0.2.99", port: 5061))
            layer = SIPTransactionLayer(transport: gateway, configuration: configuration)
            layer.start()
            layer.setRequestHandler(for: [.subscribe, .notify, .message, .publish]) { [tu] in tu.items.append($0) }
            sender.setMessageHandler { [inbox] in inbox.items.append($0) }
        }

        /// Sends a vector over the transport its top Via names (UDP for a response).
        func send(_ file: String) throws {
            let message = try RFC4475.message(file)
            let kind = (try? message.headers.via.first).flatMap { SIPTransportKind(viaToken: $0.transport) } ?? .udp
            let port: UInt16 = kind == .tls ? 5061 : 5060
            _ = sender.send(message, to: SIPTarget(kind, host: "127.0.0.1", port: port), connection: nil)
            loop.run()
        }

        var responses: [SIPResponse] { inbox.items.compactMap { $0.message.response } }
    }

    static let expectedOverTheWire: [String: Int] = [
        "unkscm.dat": 416, "novelsc.dat": 416, "unksm2.dat": 405, "bext01.dat": 420, "invut.dat": 405,
        "regaut01.dat": 405, "zeromf.dat": 200, "cparam01.dat": 405, "cparam02.dat": 405,
        "regescrt.dat": 405, "sdp01.dat": 405,
    ]

    @Test(arguments: expectedOverTheWire.keys.sorted())
    func eachApplicationLayerRequestGetsTheGatewaysAnswer(_ file: String) throws {
        let s = Setup()
        try s.send(file)
        #expect(s.responses.map(\.statusCode) == [Self.expectedOverTheWire[file] ?? 0], "\(file)")
        #expect(s.tu.items.isEmpty)
        let request = try #require(try RFC4475.message(file).request)
        // The answer is a response to this request: same Call-ID and CSeq (§8.2.6.2).
        #expect(s.responses.first?.headers.callID == request.headers.callID)
        #expect(try s.responses.first?.headers.cseq == request.headers.cseq)
    }

    @Test func zeroMaxForwardsOptionsIsAnsweredWithWhatTheGatewaySupports() throws {
        // RFC 4475 §3.3.11 and RFC 3261 §11.2: a UAS answers OPTIONS even with Max-Forwards 0.
        let s = Setup()
        try s.send("zeromf.dat")
        let r = try #require(s.responses.first)
        #expect(r.statusCode == 200)
        #expect(r.headers[.allow] == "SUBSCRIBE, NOTIFY, MESSAGE, PUBLISH, OPTIONS")
    }

    @Test func aBroadcastViaResponseIsDiscarded() throws {
        // §3.3.10: "an endpoint receiving this message should simply discard it" — it matches no
        // client transaction, and nothing is forwarded anywhere.
        let s = Setup()
        let before = s.network.log.count
        try s.send("bcast.dat")
        #expect(s.layer.counters.unmatchedResponses == 1)
        #expect(s.network.log.count == before + 1)  // only the vector itself crossed
        #expect(s.inbox.items.isEmpty)
    }

    @Test func aBranchThatIsOnlyTheMagicCookieGetsAStateless400() throws {
        // §3.2.1: "An element receiving this request could reject the request with a 400
        // Response (preferably statelessly ...)".
        let s = Setup()
        try s.send("badbranch.dat")
        try s.send("badbranch.dat")
        #expect(s.responses.map(\.statusCode) == [400, 400])
        #expect(s.layer.serverTransactionCount == 0)
        #expect(s.layer.counters.statelessResponses == 2)
        #expect(try s.responses.first?.headers.via.first?.branch == "z9hG4bK")
    }

    @Test func aBranchThatIsOnlyTheMagicCookieCanFallBackToRFC2543Matching() throws {
        // §3.2.1: "... or it could fall back to the RFC 2543-style transaction identifier."
        let s = Setup(.init(bareMagicCookie: .rfc2543Fallback))
        try s.send("badbranch.dat")
        #expect(s.responses.map(\.statusCode) == [200])
        #expect(s.layer.serverTransactionKeys.first?.isRFC3261 == false)
        try s.send("badbranch.dat")
        // The retransmission matched the same transaction: the same 200 again, one transaction.
        #expect(s.responses.map(\.statusCode) == [200, 200])
        #expect(s.layer.serverTransactionCount == 1)
        #expect(Set(s.responses.map { (try? $0.headers.to)?.tag }).count == 1)
    }
}

/// RFC 4475 §3.3 requests that do not parse: the loopback network answers them as the socket
/// transport does, before any transaction exists.
@Suite struct TransactionRFC4475MalformedTests {
    @Test(arguments: [("multi01.dat", true), ("mcl01.dat", true), ("insuf.dat", false)])
    func malformedRequestsGet400WhenAResponseCanBeFormed(_ file: String, _ answered: Bool) throws {
        // §3.3.8 multi01: "An element receiving this message would respond with a 400 Bad
        // Request." §3.3.9 mcl01: "should respond with an error". §3.3.1 insuf lacks Call-ID,
        // From and To: RFC 3261 §8.2.6.2 needs them to form any response, so it is dropped.
        let s = TransactionRFC4475Tests.Setup()
        let bytes = RFC4475.bytes(file)
        #expect(!bytes.isEmpty)
        #expect(throws: SIPParseError.self) { try SIPMessage(parsing: bytes) }
        _ = s.sender.sendRaw(bytes, to: SIPTarget(.udp, host: "127.0.0.1", port: 5060))
        s.loop.run()
        #expect(s.responses.map(\.statusCode) == (answered ? [400] : []), "\(file)")
        #expect(s.tu.items.isEmpty)
        #expect(s.layer.serverTransactionCount == 0)
        #expect(s.network.unparseableCount == 1)
    }
}
