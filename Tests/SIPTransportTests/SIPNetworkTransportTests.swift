import MetricsTestKit
import NIOCore
import NIOPosix
import PeerTestSupport
import SIPMessages
import SIPTransport
import Testing

/// Real sockets on loopback (127.0.0.1 and ::1). Waits are bounded (see `waitFor`); nothing
/// asserts how long anything took.
@Suite(.serialized) struct SIPNetworkTransportTests {
    typealias Configuration = SIPNetworkTransport.Configuration

    private func serialized(_ message: SIPMessage) -> String {
        String(decoding: message.serialized(), as: UTF8.self)
    }

    // MARK: UDP

    @Test func udpRequestArrivesWithReceivedAndRportAndTheResponseGoesBackToTheSourcePort() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
        let peer = try await RawUDPPeer()
        // sent-by names a host the packet did not come from (RFC 3261 §18.2.1) and asks for rport.
        try await peer.send(TestMessages.raw(viaHost: "client.partner.example", viaPort: 5070, branch: "u1",
                                             callID: "udp-1@partner.example"),
                            to: gateway.bound[0])
        let received = try await gateway.inbox.next()
        let request = try #require(received.message.request)
        let top = try #require(try request.headers.via.first)
        #expect(top.received == "127.0.0.1")
        #expect(top.rport == .port(peer.port))
        #expect(received.source == SIPTarget(.udp, host: "127.0.0.1", port: peer.port))
        #expect(received.connection == nil)
        #expect(received.peerCertificateNames.isEmpty)

        let response = SIPResponse(replyingTo: request, statusCode: 200, toTag: "gw1")
        let route = try SIPResponseRoute.forResponse(topVia: top, requestConnection: received.connection)
        #expect(route.target == SIPTarget(.udp, host: "127.0.0.1", port: peer.port))
        try await gateway.transport.send(.response(response), to: route.target, connection: nil).get()
        let reply = try SIPMessage(parsing: try await peer.next())
        #expect(reply.response?.statusCode == 200)
        #expect(reply.headers.callID == "udp-1@partner.example")
        #expect(gateway.counter("sip_transport_messages_received_total", [("transport", "udp")]) == 1)
        #expect(gateway.counter("sip_transport_messages_sent_total", [("transport", "udp")]) == 1)
        await peer.close()
        await gateway.transport.shutdown()
    }

    @Test func malformedDatagramIsAnsweredWith400CarryingTheRequestsViaAndCallID() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
        let peer = try await RawUDPPeer()
        let text = TestMessages.raw(viaHost: "127.0.0.1", viaPort: peer.port, branch: "bad1", callID: "malformed-1@partner.example",
                                    extra: ["Contact: <sip:alice@127.0.0.1"])
        try await peer.send(text, to: gateway.bound[0])
        let reply = try SIPMessage(parsing: try await peer.next("the 400"))
        let response = try #require(reply.response)
        #expect(response.statusCode == 400)
        #expect(response.reasonPhrase.contains("Contact"))
        #expect(response.headers.callID == "malformed-1@partner.example")
        let via = try #require(try response.headers.via.first)
        #expect(via.branch == "z9hG4bKbad1")
        #expect(via.host == "127.0.0.1" && via.port == peer.port)
        #expect(gateway.inbox.count == 0)
        // Counted once the write completed, which may be after the peer already read the reply.
        var counted: Int64 = 0
        for _ in 0..<200 {
            counted = gateway.counter("sip_transport_bad_request_sent_total", [("transport", "udp")])
            if counted > 0 { break }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        #expect(counted == 1)
        await peer.close()
        await gateway.transport.shutdown()
    }

    @Test func malformedResponseIsDroppedAndCountedNeverAnswered() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
        let peer = try await RawUDPPeer()
        let local = gateway.bound[0]
        // No Call-ID: RFC 3261 §8.1.1 makes it mandatory.
        let badResponse = [
            "SIP/2.0 200 OK",
            "Via: SIP/2.0/UDP \(local.hostPort);branch=z9hG4bKr1",
            "From: <sip:bob@gateway.test>;tag=1", "To: <sip:alice@partner.example>;tag=2",
            "CSeq: 1 OPTIONS", "Content-Length: 0",
        ].joined(separator: "\r\n") + "\r\n\r\n"
        try await peer.send(badResponse, to: local)
        // A request sent afterwards on the same socket is handled after the bad response.
        try await peer.send(TestMessages.raw(viaHost: "127.0.0.1", viaPort: peer.port, branch: "after", callID: "after-1"),
                            to: local)
        let next = try await gateway.inbox.next()
        #expect(next.message.headers.callID == "after-1")
        #expect(gateway.counter("sip_transport_malformed_dropped_total", [("transport", "udp"), ("reason", "missing-header")]) == 1)
        #expect(peer.datagramCount == 0)
        await peer.close()
        await gateway.transport.shutdown()
    }

    @Test func responseWhoseTopViaIsNotOursIsDiscarded() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
        let peer = try await RawUDPPeer()
        let local = gateway.bound[0]
        func response(via: String, callID: String) -> String {
            ["SIP/2.0 200 OK", "Via: SIP/2.0/UDP \(via);branch=z9hG4bKr1", "From: <sip:a@gateway.test>;tag=1",
             "To: <sip:b@partner.example>;tag=2", "Call-ID: \(callID)", "CSeq: 1 OPTIONS", "Content-Length: 0"]
                .joined(separator: "\r\n") + "\r\n\r\n"
        }
        try await peer.send(response(via: "192.0.2.200:5060", callID: "foreign"), to: local)
        try await peer.send(response(via: local.hostPort, callID: "ours"), to: local)
        let delivered = try await gateway.inbox.next()
        #expect(delivered.message.headers.callID == "ours")
        #expect(gateway.counter("sip_transport_malformed_dropped_total",
                                [("transport", "udp"), ("reason", "via-sent-by-mismatch")]) == 1)
        await peer.close()
        await gateway.transport.shutdown()
    }

    @Test func oversizedUDPRequestFailsWithMessageTooLargeSoTheCallerCanUseTCP() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
        let via = try #require(gateway.transport.advertisedAddress(for: .udp))
        let big = try TestMessages.request("MESSAGE", via: via, branch: "big", callID: "big-1",
                                           body: String(repeating: "x", count: 1400))
        await #expect {
            try await gateway.transport.send(.request(big), to: SIPTarget(.udp, host: "127.0.0.1", port: 9), connection: nil).get()
        } throws: { error in
            (error as? SIPTransportError)?.code == .messageTooLarge
        }
        await gateway.transport.shutdown()
    }

    @Test func udpDatagramLargerThanNIOsDefaultReadSizeArrivesWhole() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
        let peer = try await RawUDPPeer()
        let body = String(repeating: "0123456789", count: 400)
        try await peer.send(TestMessages.raw("MESSAGE", viaHost: "127.0.0.1", viaPort: peer.port, branch: "big",
                                             callID: "big-in", body: body),
                            to: gateway.bound[0])
        let message = try await gateway.inbox.next()
        #expect(message.message.body.count == 4000)
        await peer.close()
        await gateway.transport.shutdown()
    }

    @Test func crlfKeepAliveDatagramIsNeitherDeliveredNorCountedAsMalformed() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
        let peer = try await RawUDPPeer()
        try await peer.send("\r\n\r\n", to: gateway.bound[0])
        try await peer.send(TestMessages.raw(viaHost: "127.0.0.1", viaPort: peer.port, branch: "k1", callID: "after-ping"),
                            to: gateway.bound[0])
        let message = try await gateway.inbox.next()
        #expect(message.message.headers.callID == "after-ping")
        #expect(gateway.metrics.counterTotal(label: "sip_transport_malformed_dropped_total") == 0)
        await peer.close()
        await gateway.transport.shutdown()
    }

    @Test func sendAfterShutdownFailsWithShutDown() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
        let via = gateway.bound[0]
        await gateway.transport.shutdown()
        let request = try TestMessages.request(via: via, branch: "x", callID: "late")
        await #expect {
            try await gateway.transport.send(.request(request), to: via, connection: nil).get()
        } throws: { error in
            (error as? SIPTransportError)?.code == .shutDown
        }
    }

    // MARK: TCP framing

    @Test func tcpMessageSplitAcrossWritesAndTwoMessagesInOneWriteAreFramed() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
        let peer = try await RawTCPPeer(connectingTo: gateway.bound[0])
        let local = try #require(peer.localTarget)
        let first = TestMessages.raw("MESSAGE", viaHost: "127.0.0.1", viaPort: local.port, transport: "TCP", branch: "s1",
                                     callID: "split-1", body: "hello, split world")
        let bytes = Array(first.utf8)
        try await peer.write(Array(bytes[..<40]))
        try await peer.write(Array(bytes[40..<(bytes.count - 5)]))
        try await peer.write(Array(bytes[(bytes.count - 5)...]))
        let one = try await gateway.inbox.next()
        #expect(one.message.headers.callID == "split-1")
        #expect(one.message.body == Array("hello, split world".utf8))
        #expect(one.connection != nil)

        let second = TestMessages.raw(viaHost: "127.0.0.1", viaPort: local.port, transport: "TCP", branch: "s2", callID: "two-a")
        let third = TestMessages.raw("MESSAGE", viaHost: "127.0.0.1", viaPort: local.port, transport: "TCP", branch: "s3",
                                     callID: "two-b", body: "b")
        try await peer.write(second + third)
        let a = try await gateway.inbox.next()
        let b = try await gateway.inbox.next()
        #expect(a.message.headers.callID == "two-a")
        #expect(b.message.headers.callID == "two-b")
        #expect(b.message.body == Array("b".utf8))
        #expect(a.connection == one.connection && b.connection == one.connection)
        await peer.close()
        await gateway.transport.shutdown()
    }

    @Test func doubleCRLFPingIsAnsweredWithASingleCRLFPong() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
        let peer = try await RawTCPPeer(connectingTo: gateway.bound[0])
        try await peer.write("\r\n\r\n")
        let pong = try await peer.waitForBytes(atLeast: 2)
        #expect(pong == [0x0D, 0x0A])
        #expect(gateway.inbox.count == 0)
        await peer.close()
        await gateway.transport.shutdown()
    }

    @Test func malformedStreamRequestGets400OnTheSameConnectionWhichStaysOpen() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
        let peer = try await RawTCPPeer(connectingTo: gateway.bound[0])
        let local = try #require(peer.localTarget)
        try await peer.write(TestMessages.raw(viaHost: "127.0.0.1", viaPort: local.port, transport: "TCP", branch: "m1",
                                              callID: "stream-bad-1", extra: ["Contact: <sip:alice@127.0.0.1"]))
        let bytes = try await peer.waitForBytes(atLeast: 12)
        var framer = SIPStreamFramer()
        try framer.append(bytes)
        if case .message(let m)? = try framer.next() {
            let reply = try SIPMessage(parsing: m)
            #expect(reply.response?.statusCode == 400)
            #expect(reply.headers.callID == "stream-bad-1")
        } else {
            Issue.record("expected a complete 400 response")
        }
        try await peer.write(TestMessages.raw(viaHost: "127.0.0.1", viaPort: local.port, transport: "TCP", branch: "m2",
                                              callID: "stream-good-2"))
        let good = try await gateway.inbox.next()
        #expect(good.message.headers.callID == "stream-good-2")
        #expect(!peer.isClosed)
        await peer.close()
        await gateway.transport.shutdown()
    }

    // MARK: Connection reuse

    @Test func tcpConnectionIsReusedForTheResponseALaterRequestAndARequestBack() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
        let partner = try await Harness.start(Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
        let partnerVia = try #require(partner.transport.advertisedAddress(for: .tcp))
        let gatewayAddress = gateway.bound[0]

        let first = try TestMessages.request("SUBSCRIBE", via: partnerVia, branch: "c1", callID: "reuse-1")
        try await partner.transport.send(.request(first), to: gatewayAddress, connection: nil).get()
        let inbound = try await gateway.inbox.next()
        let connection = try #require(inbound.connection)
        let request = try #require(inbound.message.request)

        // The response goes back on the same connection (RFC 3261 §18.2.2).
        let topVia = try #require(try request.headers.via.first)
        let route = try SIPResponseRoute.forResponse(topVia: topVia, requestConnection: connection)
        try await gateway.transport.send(.response(SIPResponse(replyingTo: request, statusCode: 200, toTag: "g1")),
                                         to: route.target, connection: route.connection).get()
        let response = try await partner.inbox.next()
        #expect(response.message.response?.statusCode == 200)
        let partnerConnection = try #require(response.connection)

        // A later request to the same address reuses the partner's connection.
        let second = try TestMessages.request("SUBSCRIBE", via: partnerVia, branch: "c2", callID: "reuse-1", cseq: 2)
        try await partner.transport.send(.request(second), to: gatewayAddress, connection: nil).get()
        let again = try await gateway.inbox.next()
        #expect(again.connection == connection)

        // An in-dialog request from the gateway rides the same connection when given it.
        let gatewayVia = try #require(gateway.transport.advertisedAddress(for: .tcp))
        let notify = try TestMessages.request("NOTIFY", via: gatewayVia, branch: "n1", callID: "reuse-1")
        try await gateway.transport.send(.request(notify), to: partnerVia, connection: connection).get()
        let notified = try await partner.inbox.next()
        #expect(notified.message.request?.method == SIPMethod("NOTIFY"))
        #expect(notified.connection == partnerConnection)

        #expect(gateway.counter("sip_transport_connections_opened_total", [("transport", "tcp")]) == 1)
        #expect(partner.counter("sip_transport_connections_opened_total", [("transport", "tcp")]) == 1)
        await partner.transport.shutdown()
        await gateway.transport.shutdown()
    }

    @Test func responseForAClosedConnectionOpensANewOneToTheSentByAddress() async throws {
        let gateway = try await Harness.start(Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
        let partner = try await Harness.start(Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
        let partnerAddress = partner.bound[0]
        // A request whose Via names the partner's listener arrives on a connection that then closes.
        let raw = try await RawTCPPeer(connectingTo: gateway.bound[0])
        try await raw.write(TestMessages.raw(viaHost: partnerAddress.host, viaPort: partnerAddress.port, transport: "TCP",
                                             branch: "gone", callID: "closed-conn"))
        let inbound = try await gateway.inbox.next()
        let connection = try #require(inbound.connection)
        await raw.close()
        _ = try await waitFor("the gateway to see the close") {
            ((try? gateway.transport.isOpen(connection).wait()) == false) ? true : nil
        }
        let request = try #require(inbound.message.request)
        let route = try SIPResponseRoute.forResponse(topVia: try #require(try request.headers.via.first),
                                                     requestConnection: connection)
        // RFC 3261 §18.2.2: received (127.0.0.1) with the sent-by port, the partner's listener.
        #expect(route.target == partnerAddress)
        try await gateway.transport.send(.response(SIPResponse(replyingTo: request, statusCode: 200, toTag: "z")),
                                         to: route.target, connection: route.connection).get()
        let response = try await partner.inbox.next()
        #expect(response.message.response?.statusCode == 200)
        #expect(response.connection != nil)
        #expect(gateway.counter("sip_transport_connections_opened_total", [("transport", "tcp")]) == 2)
        await partner.transport.shutdown()
        await gateway.transport.shutdown()
    }

    // MARK: Limits and timeouts

    @Test func streamOverTheBufferLimitIsClosedWhileAnotherConnectionKeepsWorking() async throws {
        var configuration = Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)])
        configuration.maxBufferedBytesPerConnection = 2048
        let gateway = try await Harness.start(configuration)
        let flooder = try await RawTCPPeer(connectingTo: gateway.bound[0])
        let good = try await RawTCPPeer(connectingTo: gateway.bound[0])
        try await flooder.write(String(repeating: "A", count: 4096))
        try await flooder.waitUntilClosed()
        let local = try #require(good.localTarget)
        try await good.write(TestMessages.raw(viaHost: "127.0.0.1", viaPort: local.port, transport: "TCP", branch: "g1",
                                              callID: "still-working"))
        let message = try await gateway.inbox.next()
        #expect(message.message.headers.callID == "still-working")
        #expect(!good.isClosed)
        #expect(gateway.counter("sip_transport_malformed_dropped_total", [("transport", "tcp"), ("reason", "stream-buffer-full")]) == 1)
        await good.close()
        await gateway.transport.shutdown()
    }

    @Test func connectionsBeyondTheLimitAreClosedAndTheOthersKeepWorking() async throws {
        var configuration = Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)])
        configuration.maxInboundConnections = 1
        let gateway = try await Harness.start(configuration)
        let first = try await RawTCPPeer(connectingTo: gateway.bound[0])
        let local = try #require(first.localTarget)
        try await first.write(TestMessages.raw(viaHost: "127.0.0.1", viaPort: local.port, transport: "TCP", branch: "l1",
                                               callID: "first-conn"))
        _ = try await gateway.inbox.next()
        let second = try await RawTCPPeer(connectingTo: gateway.bound[0])
        try await second.waitUntilClosed()
        try await first.write(TestMessages.raw(viaHost: "127.0.0.1", viaPort: local.port, transport: "TCP", branch: "l2",
                                               callID: "first-again"))
        #expect(try await gateway.inbox.next().message.headers.callID == "first-again")
        await first.close()
        await gateway.transport.shutdown()
    }

    /// On a loop of its own, as SIPNetworkTransportHardeningTests: on NIO's shared loops, other
    /// suites' clock-bounded work ran the 300 ms idle timer seconds late on a loaded machine.
    static let idleGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    @Test func silentConnectionIsClosedAfterTheIdleTimeout() async throws {
        var configuration = Configuration(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)])
        configuration.idleTimeout = .milliseconds(300)
        let gateway = try await Harness.start(configuration, eventLoop: Self.idleGroup.next())
        let peer = try await RawTCPPeer(connectingTo: gateway.bound[0], group: Self.idleGroup)
        try await peer.waitUntilClosed(seconds: 30)
        _ = try await waitFor("the close to be counted") {
            gateway.counter("sip_transport_connections_closed_total", [("transport", "tcp")]) == 1 ? true : nil
        }
        await gateway.transport.shutdown()
    }

    // MARK: TLS

    private func tls(_ certificate: String, _ key: String) throws -> SIPNetworkTransport.TLS {
        try SIPNetworkTransport.TLS(certificateChainPEM: certificate, privateKeyPEM: key,
                                    trustRootsPEM: TestCertificates.caCertificate)
    }

    @Test func mutualTLSDeliversTheClientCertificateNamesAndTheServerNames() async throws {
        let gateway = try await Harness.start(Configuration(
            listeners: [.init(.tls, host: "127.0.0.1", port: 0)],
            tls: try tls(TestCertificates.serverCertificate, TestCertificates.serverKey)))
        let partner = try await Harness.start(Configuration(
            listeners: [.init(.tls, host: "127.0.0.1", port: 0)],
            tls: try tls(TestCertificates.clientCertificate, TestCertificates.clientKey)))
        let partnerVia = try #require(partner.transport.advertisedAddress(for: .tls))
        var target = gateway.bound[0]
        target.serverName = "gateway.test"
        let request = try TestMessages.request("OPTIONS", via: partnerVia, branch: "t1", callID: "tls-1")
        try await partner.transport.send(.request(request), to: target, connection: nil).get()
        let inbound = try await gateway.inbox.next()
        // subjectAltName DNS entries first, then the subject CN (RFC 5922 §7.1).
        #expect(inbound.peerCertificateNames == ["partner.example", "partner-cn.example"])
        let received = try #require(inbound.message.request)
        let route = try SIPResponseRoute.forResponse(topVia: try #require(try received.headers.via.first),
                                                     requestConnection: inbound.connection)
        try await gateway.transport.send(.response(SIPResponse(replyingTo: received, statusCode: 200, toTag: "t")),
                                         to: route.target, connection: route.connection).get()
        let response = try await partner.inbox.next()
        #expect(response.message.response?.statusCode == 200)
        #expect(response.peerCertificateNames == ["gateway.test"])
        await partner.transport.shutdown()
        await gateway.transport.shutdown()
    }

    @Test func tlsClientRefusesAServerWhoseCertificateDoesNotMatchTheServerName() async throws {
        let gateway = try await Harness.start(Configuration(
            listeners: [.init(.tls, host: "127.0.0.1", port: 0)],
            tls: try tls(TestCertificates.serverCertificate, TestCertificates.serverKey)))
        let partner = try await Harness.start(Configuration(
            listeners: [.init(.tls, host: "127.0.0.1", port: 0)],
            tls: try tls(TestCertificates.clientCertificate, TestCertificates.clientKey)))
        let partnerVia = try #require(partner.transport.advertisedAddress(for: .tls))
        var target = gateway.bound[0]
        target.serverName = "sip.other.example"
        let request = try TestMessages.request("OPTIONS", via: partnerVia, branch: "t2", callID: "tls-wrong-name")
        await #expect {
            try await partner.transport.send(.request(request), to: target, connection: nil).get()
        } throws: { error in
            (error as? SIPTransportError)?.code == .tlsFailed
        }
        #expect(gateway.inbox.count == 0)
        await partner.transport.shutdown()
        await gateway.transport.shutdown()
    }

    @Test func tlsServerRefusesAClientCertificateNoTrustedCAIssued() async throws {
        let gateway = try await Harness.start(Configuration(
            listeners: [.init(.tls, host: "127.0.0.1", port: 0)],
            tls: try tls(TestCertificates.serverCertificate, TestCertificates.serverKey)))
        let rogue = try await Harness.start(Configuration(
            listeners: [.init(.tls, host: "127.0.0.1", port: 0)],
            tls: try tls(TestCertificates.rogueCertificate, TestCertificates.rogueKey)))
        let rogueVia = try #require(rogue.transport.advertisedAddress(for: .tls))
        var target = gateway.bound[0]
        target.serverName = "gateway.test"
        let request = try TestMessages.request("OPTIONS", via: rogueVia, branch: "r1", callID: "rogue-1")
        // Under TLS 1.3 the client may finish its side before the server's alert arrives, so the
        // send can succeed; what matters is that nothing is delivered and the connection dies.
        _ = try? await rogue.transport.send(.request(request), to: target, connection: nil).get()
        _ = try await waitFor("the gateway to close the connection") {
            gateway.counter("sip_transport_connections_closed_total", [("transport", "tls")]) == 1 ? true : nil
        }
        #expect(gateway.inbox.count == 0)
        await rogue.transport.shutdown()
        await gateway.transport.shutdown()
    }

    @Test func tlsTargetWithNeitherServerNameNorKnownNamesIsRefusedNeverJudgedByItsIP() async throws {
        let gateway = try await Harness.start(Configuration(
            listeners: [.init(.tls, host: "127.0.0.1", port: 0)],
            tls: try tls(TestCertificates.serverCertificate, TestCertificates.serverKey)))
        let partner = try await Harness.start(Configuration(
            listeners: [.init(.tls, host: "127.0.0.1", port: 0)],
            tls: try tls(TestCertificates.clientCertificate, TestCertificates.clientKey)))
        let partnerVia = try #require(partner.transport.advertisedAddress(for: .tls))
        // No name to verify against: refused before connecting (RFC 5922 §4), not checked by IP.
        let request = try TestMessages.request("OPTIONS", via: partnerVia, branch: "ip1", callID: "tls-ip")
        await #expect {
            try await partner.transport.send(.request(request), to: gateway.bound[0], connection: nil).get()
        } throws: { error in
            (error as? SIPTransportError)?.code == .tlsFailed
        }
        #expect(gateway.inbox.count == 0)
        #expect(partner.counter("sip_transport_connections_refused_total", [("transport", "tls"), ("reason", "no-certificate-name")]) == 1)
        #expect(gateway.counter("sip_transport_connections_opened_total", [("transport", "tls")]) == 0)
        await partner.transport.shutdown()
        await gateway.transport.shutdown()
    }

    // MARK: IPv6

    @Test func ipv6LoopbackCarriesUDPAndTCP() async throws {
        let gateway: Harness
        do {
            gateway = try await Harness.start(Configuration(listeners: [
                .init(.udp, host: "::1", port: 0), .init(.tcp, host: "::1", port: 0),
            ]))
        } catch {
            withKnownIssue("::1 cannot be bound on this machine (no IPv6 loopback): \(error)") { throw error }
            return
        }
        let partner = try await Harness.start(Configuration(listeners: [
            .init(.udp, host: "::1", port: 0), .init(.tcp, host: "::1", port: 0),
        ]))
        for (index, kind) in [SIPTransportKind.udp, .tcp].enumerated() {
            let via = try #require(partner.transport.advertisedAddress(for: kind))
            #expect(via.host == "::1")
            let request = try TestMessages.request(via: via, branch: "v6\(index)", callID: "v6-\(kind)", rport: true)
            try await partner.transport.send(.request(request), to: gateway.bound[index], connection: nil).get()
            let inbound = try await gateway.inbox.next()
            let received = try #require(inbound.message.request)
            let top = try #require(try received.headers.via.first)
            #expect(top.received == "::1")
            #expect(inbound.source.host == "::1")
            let route = try SIPResponseRoute.forResponse(topVia: top, requestConnection: inbound.connection)
            try await gateway.transport.send(.response(SIPResponse(replyingTo: received, statusCode: 200, toTag: "6")),
                                             to: route.target, connection: route.connection).get()
            let response = try await partner.inbox.next()
            #expect(response.message.response?.statusCode == 200)
            #expect(response.message.headers.callID == "v6-\(kind)")
        }
        await partner.transport.shutdown()
        await gateway.transport.shutdown()
    }
}
