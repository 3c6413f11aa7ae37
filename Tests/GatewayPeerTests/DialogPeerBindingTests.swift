import Foundation
import NIOPosix
import PeerTestSupport
import PresenceGateway
import Prometheus
import SIPMessages
import Testing

/// Every dialog the gateway holds has a peer (docs/security.md, "Requests inside a dialog"),
/// attacked over real sockets: the gateway's own watcher-information subscription at the OMA
/// presence server (a server watch, which no watcher asked for) admits NOTIFYs from that server
/// alone, its refreshes go nowhere a NOTIFY's Contact points, a listed watcher whose URI does not
/// parse speaks for nobody, and a dialog is bound to its peer rather than to a transport (RFC
/// 3261 §18.1.1: a large request moves from UDP to TCP).
@Suite(.serialized) struct DialogPeerBindingTests {
    static let mirror = """
        linked-identities:
          - { oma: "sip:alice@oma.example", enterprise: "sip:alice@contoso.com", publish-to-oma: true, mirror-watchers: true }
        """

    /// A watcher information document for alice (RFC 3858 §4).
    static func winfo(version: Int, state: String, _ watchers: [(id: String, uri: String)]) -> [UInt8] {
        let listed = watchers.map { "<watcher id=\"\($0.id)\" event=\"subscribe\" status=\"active\">\($0.uri)</watcher>" }
        return Array("""
            <?xml version="1.0"?>
            <watcherinfo xmlns="urn:ietf:params:xml:ns:watcherinfo" version="\(version)" state="\(state)">
            <watcher-list resource="sip:alice@oma.example" package="presence">\(listed.joined())</watcher-list>
            </watcherinfo>
            """.utf8)
    }

    /// A NOTIFY in the dialog `subscribe` made (the server's tag `toTag`), sent as `via` says.
    static func notify(
        in subscribe: SIPRequest, toTag: String, cseq: Int, via: String, event: String, contentType: String,
        body: [UInt8], contact: String? = nil
    ) throws -> String {
        let from = try #require(try subscribe.headers.from)
        let gatewayContact = try #require(try subscribe.headers.contact.first?.address?.uri)
        return """
            NOTIFY \(gatewayContact) SIP/2.0
            Via: \(via);branch=z9hG4bKdp\(cseq)x\(UInt32.random(in: 0...UInt32.max));rport
            Max-Forwards: 70
            From: <\(subscribe.uri)>;tag=\(toTag)
            To: <\(from.uri)>;tag=\(from.tag ?? "")
            Call-ID: \(subscribe.headers.callID ?? "")
            CSeq: \(cseq) NOTIFY
            Event: \(event)
            Subscription-State: active;expires=600
            Content-Type: \(contentType)
            \(contact.map { "Contact: <\($0)>\n" } ?? "")
            """
    }

    static func fromURI(_ message: SIPMessage) -> String? {
        guard case .request(let request) = message, request.method == .subscribe else { return nil }
        return ((try? request.headers.from) ?? nil)?.uri.description
    }

    @Test func theWatcherInfoSubscriptionAdmitsOnlyItsServerAndSpeaksForNobodyElse() async throws {
        // The edge is reached over TCP: a stand-in's SUBSCRIBE carries the subscriber-list
        // context and is over UDP's 1,300 bytes (RFC 3261 §18.1.1).
        let gw = try await HostilePeerTests.Edge(tcp: true, subscriberList: true, edgeTransport: "tcp", extra: Self.mirror)
        defer { Task { await gw.stop() } }
        let tcpEdge = try RawSIPSocket.listening(on: gw.edge.port)
        var connections: [RawSIPSocket] = []
        /// The Froms of the SUBSCRIBEs the edge receives within `seconds`.
        func subscribersAtTheEdge(for seconds: Double) async -> [String] {
            var froms: [String] = []
            let end = Date().addingTimeInterval(seconds)
            while end.timeIntervalSinceNow > 0 {
                if let new = await tcpEdge.accept(within: 0.05) { connections.append(new) }
                for connection in connections {
                    while let message = await connection.receive(within: 0.05) { froms += [Self.fromURI(message)].compactMap { $0 } }
                }
            }
            return froms
        }
        // The gateway's own presence.winfo subscription reaches the OMA server, which accepts it.
        var found: SIPRequest?
        let deadline = Date().addingTimeInterval(5)
        while found == nil, Date() < deadline {
            found = await gw.kamailio.request(.subscribe, within: 0.5).flatMap {
                $0.headers[.event]?.hasPrefix("presence.winfo") == true ? $0 : nil
            }
        }
        let subscribe = try #require(found, "no presence.winfo SUBSCRIBE reached the OMA server")
        gw.kamailio.answer(subscribe, to: gw.oma, toTag: "w1", extra: "Expires: 600\n")

        // Copies of the server's NOTIFY from strangers: over UDP from 127.0.0.2 and from another
        // port of the server's host, over TCP from 127.0.0.2. Each refused, nothing stood in for.
        let invented = Self.winfo(version: 1, state: "full", [("c1", "sip:ceo@fabrikam.com"), ("c2", "sip:cfo@fabrikam.com")])
        for host in ["127.0.0.2", "127.0.0.1"] {
            let stranger = try LoopbackDatagramPeer(host: host)
            stranger.send(
                try Self.notify(in: subscribe, toTag: "w1", cseq: 2, via: "SIP/2.0/UDP \(stranger.hostPort)",
                                event: "presence.winfo", contentType: "application/watcherinfo+xml", body: invented),
                body: invented, to: gw.oma)
            #expect(await stranger.response(within: 5)?.statusCode == 403, "\(stranger.hostPort)")
        }
        let tcp = try RawSIPSocket.tcp(to: try #require(gw.omaTCP), from: "127.0.0.2")
        let head = try Self.notify(in: subscribe, toTag: "w1", cseq: 3, via: "SIP/2.0/TCP 127.0.0.2:\(tcp.port)",
                                   event: "presence.winfo", contentType: "application/watcherinfo+xml", body: invented)
        #expect(tcp.write(Array((head + "Content-Length: \(invented.count)\n\n").replacingOccurrences(of: "\n", with: "\r\n").utf8) + invented))
        let overTCP = await tcp.receive(within: 1) { if case .response = $0 { true } else { false } }
        #expect(overTCP.flatMap { if case .response(let r) = $0 { r.statusCode } else { nil } } == 403)
        let afterForgeries = await subscribersAtTheEdge(for: 1)
        #expect(!afterForgeries.contains { $0.contains("fabrikam") }, "stand-ins for invented watchers: \(afterForgeries)")

        // The server's own NOTIFY: a real watcher is stood in for; one whose URI does not parse
        // is left out and counted, never turned into a request from alice herself.
        let listed = Self.winfo(version: 0, state: "full", [("d1", "sip:dave@fabrikam.com"), ("x1", "sip:a b@evil.example")])
        gw.kamailio.send(
            try Self.notify(in: subscribe, toTag: "w1", cseq: 4, via: "SIP/2.0/UDP \(gw.kamailio.hostPort)",
                            event: "presence.winfo", contentType: "application/watcherinfo+xml", body: listed),
            body: listed, to: gw.oma)
        #expect(await gw.kamailio.response(200, within: 5) != nil)
        let standIns = await subscribersAtTheEdge(for: 1)
        #expect(standIns.contains("sip:dave@fabrikam.com"), "\(standIns)")
        #expect(!standIns.contains("sip:alice@contoso.com"), "a request into the enterprise from alice herself: \(standIns)")
        #expect(!standIns.contains { $0.contains("evil") }, "\(standIns)")

        // A partial document that skips versions asks for full state with a refresh; the NOTIFY's
        // Contact names another host, which the refresh must not reach.
        let elsewhere = try LoopbackDatagramPeer(host: "127.0.0.3")
        let skipped = Self.winfo(version: 7, state: "partial", [])
        gw.kamailio.send(
            try Self.notify(in: subscribe, toTag: "w1", cseq: 5, via: "SIP/2.0/UDP \(gw.kamailio.hostPort)",
                            event: "presence.winfo", contentType: "application/watcherinfo+xml", body: skipped,
                            contact: "sip:\(elsewhere.hostPort)"),
            body: skipped, to: gw.oma)
        let refresh = await gw.kamailio.request(.subscribe, within: 2)
        #expect(refresh?.headers.callID == subscribe.headers.callID, "no refresh reached the OMA server")
        #expect(await elsewhere.receive(for: 0.3).isEmpty, "the refresh went where the NOTIFY's Contact pointed")
    }

    @Test func aNotifyTooLargeForUDPComesOverTCPFromTheSamePeer() async throws {
        // The OMA server is a configured peer by its address (any port): its TCP connections
        // come from ports of their own.
        let gw = try await HostilePeerTests.Edge(kamailio: "127.0.0.4", anyPort: true, tcp: true)
        defer { Task { await gw.stop() } }
        gw.edge.send("""
            SUBSCRIBE sip:carol@oma.example SIP/2.0
            Via: SIP/2.0/UDP \(gw.edge.hostPort);branch=z9hG4bKbig1;rport
            Max-Forwards: 70
            From: <sip:bob@contoso.com>;tag=big1
            To: <sip:carol@oma.example>
            Call-ID: big1@contoso
            CSeq: 1 SUBSCRIBE
            Contact: <sip:bob@\(gw.edge.hostPort)>
            Event: presence
            Accept: application/pidf+xml

            """, to: gw.enterprise)
        let subscribe = try #require(await gw.kamailio.request(.subscribe, within: 2))
        gw.kamailio.answer(subscribe, to: gw.oma, toTag: "k1", extra: "Expires: 600\n")
        for notify in await gw.edge.receive(for: 0.8).compactMap(\.request) where notify.method == .notify {
            gw.edge.answer(notify, to: gw.enterprise)
        }
        // Over 1,300 bytes: a note long enough that the OMA server sends it over TCP.
        let note = String(repeating: "in a meeting about the budget; ", count: 60)
        let body = Array("""
            <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="sip:carol@oma.example"><tuple id="t"><status><basic>open</basic></status><note>\(note)</note></tuple></presence>
            """.utf8)
        func send(from host: String, cseq: Int) async throws -> Int? {
            let tcp = try RawSIPSocket.tcp(to: try #require(gw.omaTCP), from: host)
            let head = try Self.notify(in: subscribe, toTag: "k1", cseq: cseq, via: "SIP/2.0/TCP \(host):\(tcp.port)",
                                       event: "presence", contentType: "application/pidf+xml", body: body)
            _ = tcp.write(Array((head + "Content-Length: \(body.count)\n\n").replacingOccurrences(of: "\n", with: "\r\n").utf8) + body)
            let answer = await tcp.receive(within: 1) { if case .response = $0 { true } else { false } }
            return answer.flatMap { if case .response(let r) = $0 { r.statusCode } else { nil } }
        }
        #expect(try await send(from: "127.0.0.2", cseq: 10) == 403)
        // Accepted into the leg (relayed on: into the enterprise it is too large for UDP as well,
        // and goes over TCP, where this test's edge does not listen).
        #expect(try await send(from: "127.0.0.4", cseq: 11) == 200)
    }

    /// A reload that moves a configured peer to another address moves its dialogs with it: the
    /// gateway's requests in them go to the new address, not to the old one (where nothing may
    /// answer any more, and the dialog would end).
    @Test func aReloadThatMovesAPeerMovesItsDialogs() async throws {
        let kamailio = try LoopbackDatagramPeer()
        let oldEdge = try LoopbackDatagramPeer(host: "127.0.0.5"), newEdge = try LoopbackDatagramPeer(host: "127.0.0.6")
        func yaml(_ edge: LoopbackDatagramPeer) -> String {
            """
            state: { store: memory }
            listen:
              - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }
              - { side: enterprise, transport: udp, address: 127.0.0.1, port: 0 }
            enterprise: { domains: [contoso.com], next-hop: "sip:\(edge.hostPort);transport=udp" }
            oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(kamailio.port);transport=udp" }
            peers:
              - { name: edge, address: \(edge.host), port: \(edge.port), side: enterprise, network: sameEnterprise, trusted: true }
              - { name: kamailio, address: 127.0.0.1, port: \(kamailio.port), side: oma }
            presentities:
              default:
                defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
            subscriptions: { piggyback-wait-ms: 300 }
            """
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("move-\(UInt32.random(in: 0...UInt32.max)).yaml")
        try yaml(oldEdge).write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try GatewayServer(
            configuration: try GatewayConfiguration(yaml: yaml(oldEdge)), configurationFile: file.path,
            registry: PrometheusCollectorRegistry(), eventLoop: group.next())
        try await server.start()
        defer {
            Task {
                await server.stop(grace: .milliseconds(200))
                try? await group.shutdownGracefully()
            }
        }
        let oma = UInt16(try #require(server.bound[.oma]?.first?.port))
        func watch(cseq: Int, expires: Int, toTag: String? = nil) {
            kamailio.send("""
                SUBSCRIBE sip:bob@contoso.com SIP/2.0
                Via: SIP/2.0/UDP \(kamailio.hostPort);branch=z9hG4bKmv\(cseq);rport
                Max-Forwards: 70
                From: <sip:dave@oma.example>;tag=mv1
                To: <sip:bob@contoso.com>\(toTag.map { ";tag=\($0)" } ?? "")
                Call-ID: move1@oma
                CSeq: \(cseq) SUBSCRIBE
                Contact: <sip:dave@\(kamailio.hostPort)>
                Event: presence
                Accept: application/pidf+xml
                Expires: \(expires)

                """, to: oma)
        }
        watch(cseq: 1, expires: 600)
        let leg = try #require(await oldEdge.request(.subscribe, within: 2), "the leg did not reach the edge")
        oldEdge.answer(leg, to: UInt16(try #require(server.bound[.enterprise]?.first?.port)), toTag: "e1", extra: "Expires: 600\n")
        // Polled for up to 5 s: the 200 waits for the leg's first state (piggyback-wait-ms), and a
        // loaded machine may send it past a fixed window.
        var toTag: String?
        let end = Date().addingTimeInterval(5)
        while toTag == nil, end.timeIntervalSinceNow > 0 {
            for message in await kamailio.receive(for: 0.2) {
                if let response = message.response, response.statusCode == 200 { toTag = (try? response.headers.to)?.tag }
                if let notify = message.request { kamailio.answer(notify, to: oma) }
            }
        }
        let watcherTag = try #require(toTag, "dave was not answered")

        // The edge moves to 127.0.0.6; dave leaves: the leg's unsubscribe goes to the edge's new address.
        try yaml(newEdge).write(to: file, atomically: true, encoding: .utf8)
        _ = try await server.reload()
        watch(cseq: 2, expires: 0, toTag: watcherTag)
        let unsubscribe = await newEdge.request(.subscribe, within: 2)
        #expect(unsubscribe?.headers.callID == leg.headers.callID, "the leg's unsubscribe did not reach the edge's new address")
        #expect(unsubscribe?.headers[.expires] == "0")
        #expect(await oldEdge.receive(for: 0.3).compactMap(\.request).filter { $0.method == .subscribe }.isEmpty)
    }
}
