import MetricsTestKit
import NIOCore
import NIOPosix
import PeerTestSupport
import SIPMessages
import SIPTransport
import Testing

/// The transport against hostile peers on real loopback sockets: connection floods from one
/// address, slow drips, stalled TLS handshakes, and TLS servers presenting the wrong name.
/// Timeouts are configured short (a fraction of a second); every wait is bounded.
@Suite(.serialized) struct SIPNetworkTransportHardeningTests {
    typealias Configuration = SIPNetworkTransport.Configuration

    /// A loop of its own: this suite's floods and timers stay off NIO's shared loops, where
    /// other suites run clock-bounded work (the DNS client tests give an answer 5 s, and the
    /// 30,000-datagram test keeps a shared loop busy for about as long on a loaded machine).
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    private func start(_ configuration: Configuration) async throws -> Harness {
        try await Harness.start(configuration, eventLoop: Self.group.next())
    }

    private func connect(_ target: SIPTarget, from source: String? = nil) async throws -> RawTCPPeer {
        try await RawTCPPeer(connectingTo: target, from: source, group: Self.group)
    }

    private func refused(_ h: Harness, _ transport: String, _ reason: String) -> Int64 {
        h.counter("sip_transport_connections_refused_total", [("transport", transport), ("reason", reason)])
    }

    private func timeouts(_ h: Harness, _ transport: String, _ kind: String) -> Int64 {
        h.counter("sip_transport_timeouts_total", [("transport", transport), ("kind", kind)])
    }

    /// Opens `count` idle connections from 127.0.0.1 (kept open by the caller until the end).
    private func flood(_ target: SIPTarget, count: Int) async throws -> [RawTCPPeer] {
        var peers: [RawTCPPeer] = []
        for _ in 0..<count { peers.append(try await connect(target, from: "127.0.0.1")) }
        return peers
    }

    private func request(from peer: RawTCPPeer, branch: String, callID: String) throws -> String {
        let local = try #require(peer.localTarget)
        return TestMessages.raw(viaHost: local.host, viaPort: local.port, transport: "TCP", branch: branch, callID: callID)
    }

    // MARK: Connection limits

    @Test func refusalAndTimeoutCountersExistAtZeroFromTheStart() async throws {
        let gateway = try await start(Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
        for reason in ["inbound-limit", "address-limit", "outbound-limit"] {
            #expect(try gateway.metrics.expectCounter("sip_transport_connections_refused_total",
                                                      [("transport", "tcp"), ("reason", reason)]).totalValue == 0)
        }
        for reason in ["certificate-name", "no-certificate-name"] {
            #expect(try gateway.metrics.expectCounter("sip_transport_connections_refused_total",
                                                      [("transport", "tls"), ("reason", reason)]).totalValue == 0)
        }
        for kind in ["idle", "header"] {
            #expect(try gateway.metrics.expectCounter("sip_transport_timeouts_total", [("transport", "tcp"), ("kind", kind)]).totalValue == 0)
        }
        #expect(try gateway.metrics.expectCounter("sip_transport_timeouts_total", [("transport", "tls"), ("kind", "tls-handshake")]).totalValue == 0)
        await gateway.transport.shutdown()
    }

    @Test func idleConnectionsFromOneAddressDoNotStopAClientFromAnotherAddress() async throws {
        var configuration = Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)])
        configuration.maxInboundConnectionsPerAddress = 4
        let gateway = try await start(configuration)
        let attackers = try await flood(gateway.bound[0], count: 10)
        _ = try await waitFor("six refusals from 127.0.0.1") {
            refused(gateway, "tcp", "address-limit") == 6 ? true : nil
        }
        _ = try await waitFor("the refused connections to close") {
            attackers.filter(\.isClosed).count == 6 ? true : nil
        }
        let client = try await connect(gateway.bound[0], from: "127.0.0.2")
        try await client.write(try request(from: client, branch: "other1", callID: "from-127.0.0.2"))
        let inbound = try await gateway.inbox.next()
        #expect(inbound.message.headers.callID == "from-127.0.0.2")
        #expect(inbound.source.host == "127.0.0.2")
        #expect(refused(gateway, "tcp", "inbound-limit") == 0)
        for peer in attackers { await peer.close() }
        await client.close()
        await gateway.transport.shutdown()
    }

    @Test func fullInboundTableNeitherBlocksTheGatewaysOutboundConnectionNorItsAnswers() async throws {
        var configuration = Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)])
        configuration.maxInboundConnections = 4
        configuration.maxInboundConnectionsPerAddress = 4
        let gateway = try await start(configuration)
        let edge = try await start(Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
        let attackers = try await flood(gateway.bound[0], count: 4)
        let late = try await connect(gateway.bound[0], from: "127.0.0.2")
        try await late.waitUntilClosed()
        #expect(refused(gateway, "tcp", "inbound-limit") == 1)
        // The gateway's own connection to its edge is counted apart, and the edge's answer comes
        // back on it.
        let via = try #require(gateway.transport.advertisedAddress(for: .tcp))
        let subscribe = try TestMessages.request("SUBSCRIBE", via: via, branch: "out1", callID: "to-the-edge")
        try await gateway.transport.send(.request(subscribe), to: edge.bound[0], connection: nil).get()
        let atEdge = try await edge.inbox.next()
        let received = try #require(atEdge.message.request)
        try await edge.transport.send(.response(SIPResponse(replyingTo: received, statusCode: 200, toTag: "e")),
                                      to: atEdge.source, connection: atEdge.connection).get()
        let answer = try await gateway.inbox.next()
        #expect(answer.message.response?.statusCode == 200)
        #expect(refused(gateway, "tcp", "outbound-limit") == 0)
        for peer in attackers { await peer.close() }
        await edge.transport.shutdown()
        await gateway.transport.shutdown()
    }

    /// Strangers holding every shared inbound slot do not keep a configured peer out: its
    /// address has slots of its own.
    @Test func strangersHoldingEveryInboundSlotDoNotLockAPeerOut() async throws {
        var configuration = Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)])
        configuration.maxInboundConnections = 4
        configuration.maxInboundConnectionsPerAddress = 4
        configuration.peerHosts = ["127.0.0.3"]
        let gateway = try await start(configuration)
        let strangers = try await flood(gateway.bound[0], count: 4)
        let late = try await connect(gateway.bound[0], from: "127.0.0.2")
        try await late.waitUntilClosed()
        #expect(refused(gateway, "tcp", "inbound-limit") == 1)
        let peer = try await connect(gateway.bound[0], from: "127.0.0.3")
        try await peer.write(try request(from: peer, branch: "peer1", callID: "from-the-peer"))
        let inbound = try await gateway.inbox.next()
        #expect(inbound.message.headers.callID == "from-the-peer")
        #expect(refused(gateway, "tcp", "inbound-limit") == 1)
        for stranger in strangers { await stranger.close() }
        await peer.close()
        await gateway.transport.shutdown()
    }

    @Test func connectionsToOtherAddressesNeverUseUpTheRoomForThePeers() async throws {
        var configuration = Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)])
        configuration.maxOutboundConnections = 1
        configuration.peerHosts = ["127.0.0.1"]
        let gateway = try await start(configuration)
        // Two addresses of someone else's choosing (127.0.0.2), and the gateway's peer (127.0.0.1).
        let elsewhere = try await start(Configuration(listeners: [.init(.tcp, host: "127.0.0.2", port: 0)]))
        let elsewhere2 = try await start(Configuration(listeners: [.init(.tcp, host: "127.0.0.2", port: 0)]))
        let peer = try await start(Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
        let via = try #require(gateway.transport.advertisedAddress(for: .tcp))
        func options(_ callID: String) throws -> SIPMessage {
            .request(try TestMessages.request("OPTIONS", via: via, branch: callID, callID: callID))
        }
        try await gateway.transport.send(try options("fills-the-room"), to: elsewhere.bound[0], connection: nil).get()
        await #expect {
            try await gateway.transport.send(try options("one-too-many"), to: elsewhere2.bound[0], connection: nil).get()
        } throws: { error in
            (error as? SIPTransportError)?.code == .connectFailed
        }
        #expect(refused(gateway, "tcp", "outbound-limit") == 1)
        try await gateway.transport.send(try options("to-the-peer"), to: peer.bound[0], connection: nil).get()
        #expect(try await peer.inbox.next().message.headers.callID == "to-the-peer")
        for harness in [elsewhere, elsewhere2, peer, gateway] { await harness.transport.shutdown() }
    }

    // MARK: Timeouts

    @Test func slowDripIsClosedAfterTheHeaderTimeoutWhileKeepAlivesAreNot() async throws {
        var configuration = Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)])
        // Two seconds: the in-time message below, split by a 10 ms pause, must not lose the race
        // when the whole suite runs in parallel (with one second and 100 ms it did, once in a while).
        configuration.headerTimeout = .seconds(2)
        configuration.idleTimeout = .seconds(30)
        let gateway = try await start(configuration)
        let dripper = try await connect(gateway.bound[0])
        let keepAlive = try await connect(gateway.bound[0])
        // A lone CRLF may be the first half of a ping (RFC 5626 §3.5.1): no message, no clock.
        try await keepAlive.write("\r\n")
        let text = Array(try request(from: dripper, branch: "drip", callID: "drip").utf8)
        // One byte every 100 ms keeps the idle timer from ever firing; 80 bytes take 8 s, four
        // times the header timeout, and are far from the whole request.
        for byte in text.prefix(80) where !dripper.isClosed {
            try? await dripper.write([byte])
            try await Task.sleep(for: .milliseconds(100))
        }
        try await dripper.waitUntilClosed()
        #expect(timeouts(gateway, "tcp", "header") == 1)
        #expect(timeouts(gateway, "tcp", "idle") == 0)
        #expect(!keepAlive.isClosed)
        // A message split across writes that arrives in time is delivered.
        let split = Array(try request(from: keepAlive, branch: "split", callID: "in-time").utf8)
        try await keepAlive.write(Array(split.prefix(30)))
        try await Task.sleep(for: .milliseconds(10))
        try await keepAlive.write(Array(split.dropFirst(30)))
        #expect(try await gateway.inbox.next().message.headers.callID == "in-time")
        #expect(gateway.inbox.count == 0)
        await keepAlive.close()
        await gateway.transport.shutdown()
    }

    @Test func stalledTLSHandshakesAreClosedAfterTheHandshakeTimeout() async throws {
        var configuration = Configuration(listeners: [.init(.tls, host: "127.0.0.1", port: 0)],
                                          tls: try tls(TestCertificates.serverCertificate, TestCertificates.serverKey))
        configuration.tlsHandshakeTimeout = .milliseconds(300)
        let gateway = try await start(configuration)
        // Connected, no ClientHello: without the handshake timeout only the 300 s idle timeout
        // would close these.
        var stalled: [RawTCPPeer] = []
        for _ in 0..<3 { stalled.append(try await connect(gateway.bound[0])) }
        for peer in stalled { try await peer.waitUntilClosed(seconds: 30) }
        _ = try await waitFor("three handshake timeouts") { timeouts(gateway, "tls", "tls-handshake") == 3 ? true : nil }
        #expect(timeouts(gateway, "tls", "idle") == 0)
        await gateway.transport.shutdown()
    }

    // MARK: Outgoing TLS names (RFC 5922 §4, RFC 6125 §6.4)

    private func tls(_ certificate: String, _ key: String) throws -> SIPNetworkTransport.TLS {
        try SIPNetworkTransport.TLS(certificateChainPEM: certificate, privateKeyPEM: key, trustRootsPEM: TestCertificates.bothCAs)
    }

    /// A TLS server on 127.0.0.1 with `certificate`, and a gateway that expects `names` there.
    private func edgeAndGateway(_ certificate: String, _ key: String, expecting names: [String]) async throws
        -> (edge: Harness, gateway: Harness)
    {
        let edge = try await start(Configuration(listeners: [.init(.tls, host: "127.0.0.1", port: 0)],
                                                         tls: try tls(certificate, key)))
        var configuration = Configuration(listeners: [.init(.tls, host: "127.0.0.1", port: 0)],
                                          tls: try tls(TestCertificates.serverCertificate, TestCertificates.serverKey))
        configuration.knownServers = [.init(host: "127.0.0.1", names: names)]
        return (edge, try await start(configuration))
    }

    /// Sends an OPTIONS from `gateway` to `edge` by IP address only (no server name).
    private func send(from gateway: Harness, to edge: Harness, callID: String) async throws {
        let via = try #require(gateway.transport.advertisedAddress(for: .tls))
        let request = try TestMessages.request("OPTIONS", via: via, branch: callID, callID: callID)
        try await gateway.transport.send(.request(request), to: edge.bound[0], connection: nil).get()
    }

    @Test func outgoingTLSRefusesACertificateForAnotherNameThatCarriesTheRightIP() async throws {
        let (evil, gateway) = try await edgeAndGateway(TestCertificates.evilCertificate, TestCertificates.evilKey,
                                                       expecting: ["edge.contoso.com"])
        await #expect {
            try await send(from: gateway, to: evil, callID: "to-evil")
        } throws: { error in
            (error as? SIPTransportError)?.code == .tlsFailed
        }
        #expect(refused(gateway, "tls", "certificate-name") == 1)
        try await Task.sleep(for: .milliseconds(100))
        #expect(evil.inbox.count == 0)
        await evil.transport.shutdown()
        await gateway.transport.shutdown()
    }

    @Test func outgoingTLSAcceptsTheGenuineNameWithoutAnIP() async throws {
        let (edge, gateway) = try await edgeAndGateway(TestCertificates.edgeCertificate, TestCertificates.edgeKey,
                                                       expecting: ["edge.contoso.com"])
        try await send(from: gateway, to: edge, callID: "to-edge")
        let inbound = try await edge.inbox.next()
        #expect(inbound.message.headers.callID == "to-edge")
        #expect(inbound.peerCertificateNames == ["gateway.test"])
        #expect(refused(gateway, "tls", "certificate-name") == 0)
        await edge.transport.shutdown()
        await gateway.transport.shutdown()
    }

    /// (expected name, accepted by a `*.fabrikam.com` certificate)
    @Test(arguments: [("sip.fabrikam.com", true), ("a.b.fabrikam.com", false), ("fabrikam.com", false)])
    func wildcardCertificateStandsForExactlyOneLabel(_ name: String, _ accepted: Bool) async throws {
        let (edge, gateway) = try await edgeAndGateway(TestCertificates.wildcardCertificate, TestCertificates.wildcardKey,
                                                       expecting: [name])
        if accepted {
            try await send(from: gateway, to: edge, callID: "wild-\(name)")
            #expect(try await edge.inbox.next().message.headers.callID == "wild-\(name)")
        } else {
            await #expect {
                try await send(from: gateway, to: edge, callID: "wild-\(name)")
            } throws: { error in
                (error as? SIPTransportError)?.code == .tlsFailed
            }
            #expect(refused(gateway, "tls", "certificate-name") == 1)
        }
        await edge.transport.shutdown()
        await gateway.transport.shutdown()
    }

    @Test func aReplacedCertificateIsWhatNewConnectionsPresent() async throws {
        // The edge starts with a certificate for another name: refused by name.
        let (edge, gateway) = try await edgeAndGateway(TestCertificates.evilCertificate, TestCertificates.evilKey,
                                                       expecting: ["edge.contoso.com"])
        await #expect(throws: SIPTransportError.self) { try await send(from: gateway, to: edge, callID: "before") }
        try await Task.sleep(for: .milliseconds(200))   // the refused connection closes
        // Renewed while running: the next connection presents the genuine one and is accepted.
        try edge.transport.replaceTLS(try tls(TestCertificates.edgeCertificate, TestCertificates.edgeKey))
        try await send(from: gateway, to: edge, callID: "after")
        #expect(try await edge.inbox.next().message.headers.callID == "after")
        // Material that does not load is refused, and the contexts in use stay.
        #expect(throws: (any Error).self) {
            try edge.transport.replaceTLS(try tls(TestCertificates.edgeCertificate, TestCertificates.evilKey))
        }
        await edge.transport.shutdown()
        await gateway.transport.shutdown()
    }

    @Test func everyMessageOnAnInboundTLSConnectionCarriesThePeerCertificateNames() async throws {
        let (edge, gateway) = try await edgeAndGateway(TestCertificates.edgeCertificate, TestCertificates.edgeKey,
                                                       expecting: ["edge.contoso.com"])
        for index in 0..<3 { try await send(from: gateway, to: edge, callID: "same-conn-\(index)") }
        var connections: Set<SIPConnectionID> = []
        for index in 0..<3 {
            let inbound = try await edge.inbox.next()
            #expect(inbound.message.headers.callID == "same-conn-\(index)")
            #expect(inbound.peerCertificateNames == ["gateway.test"])
            if let connection = inbound.connection { connections.insert(connection) }
        }
        #expect(connections.count == 1)
        await edge.transport.shutdown()
        await gateway.transport.shutdown()
    }
}
