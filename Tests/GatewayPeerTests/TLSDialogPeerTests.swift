import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import Prometheus
import SIPMessages
import SIPTransport
import Testing

/// A TLS (and plain TCP) SIP endpoint for the tests, on the project's own transport over real
/// sockets: the enterprise edge (its certificate `edge.contoso.com`) or an attacker (a partner's
/// valid `*.fabrikam.com` certificate, or `evil.example` from the same CA). It keeps every message
/// it receives.
final class TLSTestEndpoint: @unchecked Sendable {
    let transport: SIPNetworkTransport
    let bound: [SIPTarget]
    private let received = NIOLockedValueBox<[SIPReceivedMessage]>([])

    init(certificate: String, key: String, tcp: Bool = false, eventLoop: any EventLoop) async throws {
        var listeners = [SIPNetworkTransport.Listener(.tls, host: "127.0.0.1", port: 0)]
        if tcp { listeners.append(.init(.tcp, host: "127.0.0.1", port: 0)) }
        // The gateway's certificate names gateway.test, not 127.0.0.1: the chain is verified, the
        // name is not (these endpoints only ever reach the gateway under test).
        let tls = try SIPNetworkTransport.TLS(certificateChainPEM: certificate, privateKeyPEM: key,
                                              trustRootsPEM: TestCertificates.bothCAs, verifyServerName: false)
        var logger = Logger(label: "tls.test.endpoint")
        logger.logLevel = .critical
        transport = try SIPNetworkTransport(configuration: .init(listeners: listeners, tls: tls), eventLoop: eventLoop, logger: logger)
        transport.setMessageHandler { [received] message in received.withLockedValue { $0.append(message) } }
        bound = try await transport.start()
    }

    func target(_ kind: SIPTransportKind) -> SIPTarget? { bound.first { $0.kind == kind } }

    var messages: [SIPReceivedMessage] { received.withLockedValue { $0 } }

    /// The first message after the first `skip` for which `match` holds, waiting at most `seconds`.
    func first(after skip: Int = 0, within seconds: Double = 5, where match: (SIPReceivedMessage) -> Bool) async throws -> SIPReceivedMessage? {
        let deadline = Date().addingTimeInterval(seconds)
        repeat {
            if let found = messages.dropFirst(skip).first(where: match) { return found }
            try await Task.sleep(nanoseconds: 20_000_000)
        } while Date() < deadline
        return nil
    }

    func send(_ message: SIPMessage, to target: SIPTarget, connection: SIPConnectionID? = nil) async throws {
        try await transport.send(message, to: target, connection: connection).get()
    }
}

/// Mutual TLS past the first request of a dialog, over real TLS sockets (docs/security.md):
/// the dialog the gateway holds with the enterprise edge belongs to the edge's certificate
/// identity, so a BENOTIFY or NOTIFY sent into it over another TLS connection, with a partner's
/// valid certificate or with another name from the same CA, is refused and never relayed; and
/// the dialog's requests stay on TLS when the edge's Contact says `transport=tcp` (RFC 5630 §3.1.3).
@Suite(.serialized) struct TLSDialogPeerTests {
    final class Edge: @unchecked Sendable {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server: GatewayServer
        let edge: TLSTestEndpoint
        let kamailio: LoopbackDatagramPeer
        let oma: UInt16
        let enterpriseTLS: SIPTarget
        let files: URL

        init() async throws {
            kamailio = try LoopbackDatagramPeer()
            edge = try await TLSTestEndpoint(certificate: TestCertificates.edgeCertificate, key: TestCertificates.edgeKey, tcp: true,
                                             eventLoop: group.next())
            files = FileManager.default.temporaryDirectory.appendingPathComponent("tls-dialog-\(UInt32.random(in: 0...UInt32.max))")
            try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
            for (name, pem) in [("chain.pem", TestCertificates.serverCertificate), ("key.pem", TestCertificates.serverKey),
                                ("roots.pem", TestCertificates.bothCAs)] {
                try pem.write(to: files.appendingPathComponent(name), atomically: true, encoding: .utf8)
            }
            let edgeTLS = edge.target(.tls)?.port ?? 0
            let yaml = """
                state: { store: memory }
                listen:
                  - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }
                  - { side: enterprise, transport: tls, address: 127.0.0.1, port: 0 }
                  - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 0 }
                tls:
                  certificate-chain: \(files.appendingPathComponent("chain.pem").path)
                  private-key: \(files.appendingPathComponent("key.pem").path)
                  trust-roots: \(files.appendingPathComponent("roots.pem").path)
                  require-client-certificate: true
                enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(edgeTLS);transport=tls" }
                oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(kamailio.port);transport=udp" }
                peers:
                  - { name: edge, address: 127.0.0.1, port: \(edgeTLS), side: enterprise, network: sameEnterprise, trusted: true,
                      certificate-names: [edge.contoso.com] }
                  - { name: kamailio, address: 127.0.0.1, port: \(kamailio.port), side: oma }
                subscriptions: { piggyback-wait-ms: 300 }
                """
            server = try GatewayServer(configuration: try GatewayConfiguration(yaml: yaml), registry: PrometheusCollectorRegistry(),
                                       eventLoop: group.next())
            try await server.start()
            oma = UInt16(server.bound[.oma]?.first?.port ?? 0)
            enterpriseTLS = try #require(server.bound[.enterprise]?.first { $0.kind == .tls })
        }

        func stop() async {
            await server.stop(grace: .milliseconds(200))
            await edge.transport.shutdown()
            try? FileManager.default.removeItem(at: files)
            try? await group.shutdownGracefully()
        }
    }

    static let watcherCallID = "tlsw1@oma"

    /// OMA watcher dave@oma.example subscribes to bob@contoso.com; the gateway's batched
    /// SUBSCRIBE reaches the edge over TLS, and the edge answers it with bob online and a Contact
    /// that offers cleartext TCP. Returns the gateway's SUBSCRIBE as the edge received it.
    static func bridge(_ gw: Edge, request: String) async throws -> SIPReceivedMessage {
        gw.kamailio.send(request, to: gw.oma)
        let subscribe = try #require(try await gw.edge.first { $0.message.request?.method == .subscribe }, "no SUBSCRIBE reached the edge")
        #expect(subscribe.local.kind == .tls)
        #expect(subscribe.peerCertificateNames == ["gateway.test"])
        let request = try #require(subscribe.message.request)
        let state = CategoriesDocument(uri: "sip:bob@contoso.com", categories: [
            Category(name: .state, instance: 1, publishTime: "2026-11-25T10:00:00.000",
                     payload: .state(MSState(type: .aggregateState, availability: 3500))),
        ])
        let cleartext = gw.edge.target(.tcp)?.port ?? 0
        var ok = SIPResponse(replyingTo: request, statusCode: 200, toTag: "edge1", headers: [
            (.contact, "<sip:edge@127.0.0.1:\(cleartext);transport=tcp>"), (.expires, "3600"),
            (.contentType, "multipart/related; type=\"application/rlmi+xml\"; start=\(BatchSubscribeResponse.rlmiContentID); boundary=b9"),
            (.event, "presence"), (.subscriptionState, "active;expires=3600"), (.msPiggybackCSeq, "1"),
        ])
        ok.body = BatchSubscribeResponse(list: RLMIList(uri: "sip:dave@oma.example"), categories: [state]).multipart(boundary: "b9").bytes
        try await gw.edge.send(.response(ok), to: subscribe.source, connection: subscribe.connection)
        return subscribe
    }

    static func watcherSubscribe(_ gw: Edge, cseq: Int, expires: Int, toTag: String? = nil) -> String {
        """
        SUBSCRIBE sip:bob@contoso.com SIP/2.0
        Via: SIP/2.0/UDP \(gw.kamailio.hostPort);branch=z9hG4bKtw\(cseq)x\(UInt32.random(in: 0...UInt32.max));rport
        Max-Forwards: 70
        From: <sip:dave@oma.example>;tag=tw1
        To: <sip:bob@contoso.com>\(toTag.map { ";tag=\($0)" } ?? "")
        Call-ID: \(watcherCallID)
        CSeq: \(cseq) SUBSCRIBE
        Contact: <sip:dave@\(gw.kamailio.hostPort)>
        Event: presence
        Accept: application/pidf+xml
        Expires: \(expires)

        """
    }

    /// A BENOTIFY (or NOTIFY) in the dialog of the gateway's `subscribe`, with bob at `availability`.
    static func notify(_ method: String, in subscribe: SIPRequest, cseq: Int, availability: UInt32,
                       state: String = "active;expires=3600", via: SIPTarget) throws -> SIPMessage {
        let from = try #require(try subscribe.headers.from)
        let document = CategoriesDocument(uri: "sip:bob@contoso.com", categories: [
            Category(name: .state, instance: 1, publishTime: "2026-11-25T10:0\(cseq % 10):00.000",
                     payload: .state(MSState(type: .aggregateState, availability: availability))),
        ])
        let head = [
            "\(method) sip:gw@127.0.0.1 SIP/2.0",
            "Via: SIP/2.0/TLS \(via.hostPort);branch=z9hG4bKtn\(cseq)x\(UInt32.random(in: 0...UInt32.max))",
            "Max-Forwards: 70",
            "From: <sip:bob@contoso.com>;tag=edge1",
            "To: <\(from.uri)>;tag=\(from.tag ?? "")",
            "Call-ID: \(subscribe.headers.callID ?? "")",
            "CSeq: \(cseq) \(method)",
            "Event: presence",
            "Subscription-State: \(state)",
            "Content-Type: application/msrtc-event-categories+xml",
        ]
        let body = document.serialized()
        let text = (head + ["Content-Length: \(body.count)", "", ""]).joined(separator: "\r\n")
        return try SIPMessage(parsing: Array(text.utf8) + body)
    }

    @Test func anotherCertificateCannotNotifyIntoTheEdgesDialogAndItsRequestsStayOnTLS() async throws {
        let gw = try await Edge()
        let subscribe = try await Self.bridge(gw, request: Self.watcherSubscribe(gw, cseq: 1, expires: 600))
        let request = try #require(subscribe.message.request)
        // The watcher is answered and gets bob's state (3500: open).
        var atWatcher = await gw.kamailio.receive(for: 1.2)
        let ok = try #require(atWatcher.compactMap(\.response).first { $0.statusCode == 200 })
        let watcherToTag = try #require(try ok.headers.to?.tag)
        var notifies = atWatcher.compactMap(\.request).filter { $0.method == .notify }
        #expect(notifies.contains { String(decoding: $0.body, as: UTF8.self).contains("<basic>open</basic>") })
        for notify in notifies { gw.kamailio.answer(notify, to: gw.oma) }
        // Those NOTIFYs may still come again before the answers reach the gateway (RFC 3261
        // §17.1.2.2, Timer E: a loaded machine), with their CSeq; a NOTIFY an attacker caused would
        // carry a new one.
        let answered = Set(notifies.compactMap { try? $0.headers.cseq?.sequence })

        // Two attackers, each over a TLS connection of its own that passes the handshake: a
        // partner's valid wildcard certificate and another name from the edge's own CA.
        for (n, (certificate, key)) in [(TestCertificates.wildcardCertificate, TestCertificates.wildcardKey),
                                        (TestCertificates.evilCertificate, TestCertificates.evilKey)].enumerated() {
            let attacker = try await TLSTestEndpoint(certificate: certificate, key: key, eventLoop: gw.group.next())
            let via = try #require(attacker.target(.tls))
            // "Do not disturb" as a BENOTIFY (which has no response, [MS-PRES] §3.4.5.2) …
            try await attacker.send(try Self.notify("BENOTIFY", in: request, cseq: 10 + n, availability: 9500, via: via), to: gw.enterpriseTLS)
            // … and an end to the subscription as a NOTIFY: refused with 403 (RFC 3261 §21.4.4).
            try await attacker.send(try Self.notify("NOTIFY", in: request, cseq: 20 + n, availability: 18500,
                                                    state: "terminated;reason=deactivated", via: via), to: gw.enterpriseTLS)
            let refused = try await attacker.first { $0.message.response?.statusCode == 403 }
            #expect(refused != nil, "attacker \(n) got \(attacker.messages.compactMap(\.message.response?.statusCode))")
            #expect(!attacker.messages.contains { $0.message.response?.statusCode == 200 })
            await attacker.transport.shutdown()
        }
        // Nothing reached the watcher, and the bridged pair is whole.
        atWatcher = await gw.kamailio.receive(for: 0.6)
        let fresh = atWatcher.compactMap(\.request).filter { request in
            request.method == .notify && !answered.contains((try? request.headers.cseq?.sequence) ?? 0)
        }
        #expect(fresh.isEmpty, "\(fresh.map { String(decoding: $0.body, as: UTF8.self) })")
        #expect(gw.server.status?.enterpriseLegs == 1 && gw.server.status?.omaWatches == 1)

        // The edge itself, on its own connection, is relayed: bob away (15500) reaches the watcher.
        try await gw.edge.send(try Self.notify("BENOTIFY", in: request, cseq: 30, availability: 15500, via: try #require(gw.edge.target(.tls))),
                               to: subscribe.source, connection: subscribe.connection)
        notifies = await gw.kamailio.receive(for: 1.0).compactMap(\.request).filter { $0.method == .notify }
        #expect(notifies.contains { String(decoding: $0.body, as: UTF8.self).contains("away") }, "the edge's BENOTIFY was not relayed")
        for notify in notifies { gw.kamailio.answer(notify, to: gw.oma) }

        // The watcher unsubscribes: the gateway ends its enterprise leg in the dialog, over TLS to
        // the edge, although the edge's Contact offered cleartext TCP and the gateway has a TCP listener.
        let seen = gw.edge.messages.count
        gw.kamailio.send(Self.watcherSubscribe(gw, cseq: 2, expires: 0, toTag: watcherToTag), to: gw.oma)
        let unsubscribe = try await gw.edge.first(after: seen) {
            $0.message.request?.method == .subscribe && $0.message.headers.callID == request.headers.callID
        }
        let ended = try #require(unsubscribe, "the enterprise leg was not ended")
        #expect(ended.local.kind == .tls)
        #expect(ended.message.request.map { (try? $0.headers.expires) == 0 } == true)
        #expect(!gw.edge.messages.contains { $0.local.kind == .tcp }, "a request of the TLS dialog went over cleartext TCP")
        await gw.stop()
    }
}
