import NIOCore
import NIOEmbedded
import PresenceGateway
import PresenceMapping
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// RFC 3263 §4.3 failover in the runtime: the enterprise side's next hop is `dns`, and the
/// resolver returns two loopback targets of which the first fails. The loop is a
/// `NIOAsyncTestingEventLoop` (thread-safe, manual clock), because resolution is asynchronous.
@Suite struct TargetFailoverTests {
    static let omaSide = SIPTarget(.udp, host: "127.0.0.1", port: 5060)
    static let enterpriseSide = SIPTarget(.tcp, host: "127.0.0.1", port: 5061)
    static let edge = SIPTarget(.tcp, host: "127.0.0.1", port: 5062)

    static let yaml = """
        state: { store: memory }
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1, port: 5060 }
          - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 5061 }
        enterprise: { domains: [contoso.com], next-hop: dns }
        oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:5070;transport=udp" }
        peers:
          - { name: edge, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }
          - { name: kamailio, address: 127.0.0.1, port: 5070, side: oma, network: federated }
        """

    /// Everything the peers received, kept on the loop.
    final class Inbox: @unchecked Sendable {
        var messages: [SIPTarget: [SIPMessage]] = [:]
    }

    struct Setup {
        let loop = NIOAsyncTestingEventLoop()
        let network: SIPLoopbackNetwork
        let runtime: GatewayRuntime
        let inbox = Inbox()
        let endpoints: [SIPTarget: SIPLoopbackNetwork.Endpoint]

        /// `targets`: what the resolver returns for every enterprise URI; `listening`: the peers
        /// that exist (they record what they receive and never answer).
        init(targets: [SIPTarget], listening: [SIPTarget]) async throws {
            let network = SIPLoopbackNetwork(eventLoop: loop)
            self.network = network
            let configuration = try GatewayConfiguration(yaml: Self.yamlText)
            let core = GatewayCore(
                configuration: configuration, mapper: PresenceMapper(tables: try MappingTables.builtIn()),
                contacts: [.oma: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5060")),
                           .enterprise: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5061;transport=tcp"))],
                ids: .random())
            let loop = self.loop
            let inbox = self.inbox
            let built = try await loop.submit { () -> (GatewayRuntime, [SIPTarget: SIPLoopbackNetwork.Endpoint]) in
                let oma = SIPTransactionLayer(transport: network.endpoint(TargetFailoverTests.omaSide),
                                              configuration: GatewayRuntime.transactionConfiguration())
                let enterprise = SIPTransactionLayer(transport: network.endpoint(TargetFailoverTests.enterpriseSide),
                                                     configuration: GatewayRuntime.transactionConfiguration())
                let runtime = GatewayRuntime(
                    core: core, router: FederationRouter(configuration: configuration, localAddresses: ["127.0.0.1:5060", "127.0.0.1:5061"]),
                    layers: [.oma: oma, .enterprise: enterprise], eventLoop: loop,
                    resolveTargets: { uri, side in side == .enterprise ? targets : [] })
                var endpoints: [SIPTarget: SIPLoopbackNetwork.Endpoint] = [:]
                for address in listening + [SIPTarget(.udp, host: "127.0.0.1", port: 5070)] {
                    let endpoint = network.endpoint(address)
                    endpoint.setMessageHandler { inbox.messages[address, default: []].append($0.message) }
                    endpoints[address] = endpoint
                }
                runtime.start()
                return (runtime, endpoints)
            }.get()
            runtime = built.0
            endpoints = built.1
        }

        static let yamlText = TargetFailoverTests.yaml

        func send(_ message: SIPMessage, from: SIPTarget, to: SIPTarget) async throws {
            let endpoint = try #require(endpoints[from])
            try await loop.submit { _ = endpoint.send(message, to: to, connection: nil) }.get()
        }

        func received(at address: SIPTarget) async throws -> [SIPRequest] {
            let inbox = self.inbox
            return try await loop.submit { inbox.messages[address, default: []].compactMap(\.request) }.get()
        }

        /// Runs the loop until `address` has received a request (the resolver answers on another
        /// thread): at most 2,000 rounds of run + yield, no clock involved.
        func waitForRequest(at address: SIPTarget, count: Int = 1) async throws -> [SIPRequest] {
            for _ in 0..<2_000 {
                await loop.run()
                let requests = try await received(at: address)
                if requests.count >= count { return requests }
                await Task.yield()
            }
            return try await received(at: address)
        }
    }

    static func omaSubscribe(to resource: String, callID: String) throws -> SIPMessage {
        let lines = [
            "SUBSCRIBE \(resource) SIP/2.0",
            "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK\(callID);rport",
            "Max-Forwards: 70",
            "From: <sip:alice@oma.example>;tag=\(callID)",
            "To: <\(resource)>",
            "Call-ID: \(callID)@127.0.0.1",
            "CSeq: 1 SUBSCRIBE",
            "Contact: <sip:alice@127.0.0.1:5070>",
            "Event: presence",
            "Accept: application/pidf+xml",
            "Expires: 600",
        ]
        return try SIPMessage(parsing: Array((lines + ["Content-Length: 0", "", ""]).joined(separator: "\r\n").utf8))
    }

    static func branch(_ request: SIPRequest) -> String? {
        (try? request.headers.via)?.first?.branch
    }

    @Test func transportErrorAtTheFirstTargetSendsTheRequestToTheSecond() async throws {
        // Nobody listens on 5063: the send fails (RFC 3261 §8.1.3.1: a transport error is a 503).
        let dead = SIPTarget(.tcp, host: "127.0.0.1", port: 5063)
        let s = try await Setup(targets: [dead, Self.edge], listening: [Self.edge])
        try await s.send(try Self.omaSubscribe(to: "sip:bob@contoso.com", callID: "f1"),
                         from: SIPTarget(.udp, host: "127.0.0.1", port: 5070), to: Self.omaSide)
        let subscribes = try await s.waitForRequest(at: Self.edge)
        #expect(subscribes.count == 1)
        #expect(subscribes.first?.method == .subscribe)
        #expect(try subscribes.first?.headers.from?.uri.description == "sip:alice@oma.example")
        // The edge's answer reaches the core, which answers the OMA watcher 200: the failure of
        // the first target never reached it.
        let subscribe = try #require(subscribes.first)
        try await s.send(.response(GatewayRuntimeTests.categoriesOK(subscribe, "sip:bob@contoso.com", availability: 3500, tag: "e1")),
                         from: Self.edge, to: Self.enterpriseSide)
        let kamailio = SIPTarget(.udp, host: "127.0.0.1", port: 5070)
        var statuses: [Int] = []
        for _ in 0..<2_000 where statuses.isEmpty {
            await s.loop.run()
            let inbox = s.inbox
            statuses = try await s.loop.submit { inbox.messages[kamailio, default: []].compactMap(\.response).map(\.statusCode) }.get()
            await Task.yield()
        }
        #expect(statuses == [200])
        await s.loop.shutdownGracefully()
    }

    @Test func timeoutAtTheFirstTargetRetriesWithANewBranchAndLaterRequestsSkipIt() async throws {
        // 5064 takes the SUBSCRIBE and never answers: Timer F (64·T1 = 32 s) ends the transaction.
        let silent = SIPTarget(.tcp, host: "127.0.0.1", port: 5064)
        let s = try await Setup(targets: [silent, Self.edge], listening: [silent, Self.edge])
        try await s.send(try Self.omaSubscribe(to: "sip:bob@contoso.com", callID: "t1"),
                         from: SIPTarget(.udp, host: "127.0.0.1", port: 5070), to: Self.omaSide)
        let first = try await s.waitForRequest(at: silent)
        #expect(first.count == 1)
        #expect(try await s.received(at: Self.edge).isEmpty)

        await s.loop.advanceTime(by: .seconds(33))
        let retried = try await s.waitForRequest(at: Self.edge)
        #expect(retried.count == 1)
        let original = try #require(first.first)
        let again = try #require(retried.first)
        // The same request as a new transaction (RFC 3263 §4.3): same Call-ID and CSeq, new branch.
        #expect(again.headers.callID == original.headers.callID)
        #expect(try again.headers.cseq == original.headers.cseq)
        #expect(Self.branch(again) != nil && Self.branch(again) != Self.branch(original))

        // A later request skips the target that failed: it goes straight to the edge.
        try await s.send(try Self.omaSubscribe(to: "sip:carol@contoso.com", callID: "t2"),
                         from: SIPTarget(.udp, host: "127.0.0.1", port: 5070), to: Self.omaSide)
        let both = try await s.waitForRequest(at: Self.edge, count: 2)
        #expect(both.count == 2)
        #expect(try await s.received(at: silent).count == 1)
        await s.loop.shutdownGracefully()
    }

    @Test func serviceUnavailableFromTheFirstTargetSendsTheRequestToTheSecond() async throws {
        // RFC 3263 §4.3: "If a 503 error response is received, the client SHOULD try the next element".
        let overloaded = SIPTarget(.tcp, host: "127.0.0.1", port: 5065)
        let s = try await Setup(targets: [overloaded, Self.edge], listening: [overloaded, Self.edge])
        try await s.send(try Self.omaSubscribe(to: "sip:bob@contoso.com", callID: "u1"),
                         from: SIPTarget(.udp, host: "127.0.0.1", port: 5070), to: Self.omaSide)
        let refused = try #require(try await s.waitForRequest(at: overloaded).first)
        try await s.send(.response(SIPResponse(replyingTo: refused, statusCode: 503, toTag: "o1", headers: [(.retryAfter, "60")])),
                         from: overloaded, to: Self.enterpriseSide)
        let retried = try await s.waitForRequest(at: Self.edge)
        #expect(retried.count == 1)
        #expect(retried.first?.headers.callID == refused.headers.callID)
        #expect(Self.branch(try #require(retried.first)) != Self.branch(refused))
        await s.loop.shutdownGracefully()
    }

    @Test func failedTargetsAreForgottenAfterTheirDurationAndBounded() {
        var failed = FailedTargets(limits: .init(duration: .seconds(30), capacity: 2))
        let a = SIPTarget(.tcp, host: "192.0.2.1", port: 5061)
        let b = SIPTarget(.tcp, host: "192.0.2.2", port: 5061)
        let c = SIPTarget(.tcp, host: "192.0.2.3", port: 5061)
        let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
        failed.record(a, now: t0)
        #expect(failed.usable([a, b], now: t0 + .seconds(1)) == [b])
        // Every target failed: all are tried again, in order, rather than none.
        failed.record(b, now: t0 + .seconds(2))
        #expect(failed.usable([a, b], now: t0 + .seconds(3)) == [a, b])
        // After the duration a failure is forgotten.
        #expect(failed.usable([a, b], now: t0 + .seconds(31)) == [a])
        // At capacity the failure that ends first makes room.
        failed.record(c, now: t0 + .seconds(4))
        #expect(failed.count(now: t0 + .seconds(4)) == 2)
        #expect(!failed.hasFailed(a, now: t0 + .seconds(4)))
        #expect(failed.hasFailed(b, now: t0 + .seconds(4)) && failed.hasFailed(c, now: t0 + .seconds(4)))
    }
}
