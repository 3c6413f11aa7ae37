import Foundation
import NIOPosix
import PeerTestSupport
import PresenceGateway
import Prometheus
import SIPMessages
import Testing

/// The shipped multi-node front (deploy/kamailio-front.cfg; docs/security.md, "Behind a front")
/// with real Kamailio, attacked over real sockets: a gateway node in process behind it on the OMA
/// side, the OMA server (the front's `PEER`) and the enterprise edge as bare UDP sockets, and
/// strangers on 127.0.0.2 and up. Behind the front the node sees one configured peer, the front;
/// so the front takes requests from outside only from its peer, and sends them only to a node.
@Suite(.serialized, .enabled(if: PeerAssets.kamailioInstalled, "needs Kamailio (scripts/setup.sh)"))
struct FrontRelayTests {
    @Test func theFrontIsNoRelayAndLetsOnlyItsPeerIn() async throws {
        let directory = NSTemporaryDirectory() + "front-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try LoopbackDatagramPeer(), edge = try LoopbackDatagramPeer()
        let nodePort = try LoopbackPorts.free()
        let front = try await SharedStateProcessTests.Front.start(
            directory: directory, name: "oma", peer: server.port, nodes: [(nodePort, 8)])
        defer { front.child.killGroup() }
        let yaml = """
            state: { store: memory }
            listen:
              - { side: oma, transport: udp, address: 127.0.0.1, port: \(nodePort) }
              - { side: enterprise, transport: udp, address: 127.0.0.1, port: 0 }
            enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(edge.port);transport=udp" }
            oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(front.port);transport=udp" }
            peers:
              - { name: edge, address: 127.0.0.1, port: \(edge.port), side: enterprise, network: sameEnterprise, trusted: true }
              - { name: oma-front, address: 127.0.0.1, port: \(front.port), side: oma }
            presentities:
              "sip:mary@oma.example":
                defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
            subscriptions: { piggyback-wait-ms: 300 }
            """
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let gateway = try GatewayServer(
            configuration: try GatewayConfiguration(yaml: yaml), registry: PrometheusCollectorRegistry(), eventLoop: group.next())
        try await gateway.start()
        defer {
            Task {
                await gateway.stop(grace: .milliseconds(200))
                try? await group.shutdownGracefully()
            }
        }
        let enterprise = UInt16(try #require(gateway.bound[.enterprise]?.first?.port))

        // A pair: bob behind the edge watches carol; the leg goes through the front to the server.
        edge.send("""
            SUBSCRIBE sip:carol@oma.example SIP/2.0
            Via: SIP/2.0/UDP \(edge.hostPort);branch=z9hG4bKfr1;rport
            Max-Forwards: 70
            From: <sip:bob@contoso.com>;tag=fr1
            To: <sip:carol@oma.example>
            Call-ID: fr1@contoso
            CSeq: 1 SUBSCRIBE
            Contact: <sip:bob@\(edge.hostPort)>
            Event: presence
            Accept: application/pidf+xml

            """, to: enterprise)
        let subscribe = try #require(await server.request(.subscribe, within: 5), "no SUBSCRIBE came through the front")
        let recordRoute = try #require(subscribe.headers[.recordRoute], "the front did not record-route")
        server.answer(subscribe, to: front.port, toTag: "s1", extra: "Expires: 600\n")
        // The watcher's first NOTIFY, waited for (a loaded machine may send it past a fixed
        // window, where the checks below would take it for a relayed one), then any other.
        let first = try #require(await edge.request(.notify, within: 5), "the watcher got no first NOTIFY")
        edge.answer(first, to: enterprise)
        for notify in await edge.receive(for: 0.3).compactMap(\.request) where notify.method == .notify {
            edge.answer(notify, to: enterprise)
        }
        let from = try #require(try subscribe.headers.from)
        let nodeContact = try #require(try subscribe.headers.contact.first?.address?.uri)
        let body = Array("""
            <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="sip:carol@oma.example"><tuple id="t"><status><basic>closed</basic></status></tuple></presence>
            """.utf8)
        func notify(_ cseq: Int, from peer: LoopbackDatagramPeer, uri: String = "\(nodeContact)", routes: String = recordRoute) {
            peer.send("""
                NOTIFY \(uri) SIP/2.0
                Via: SIP/2.0/UDP \(peer.hostPort);branch=z9hG4bKfrn\(cseq);rport
                Max-Forwards: 70
                Route: \(routes)
                From: <sip:carol@oma.example>;tag=s1
                To: <\(from.uri)>;tag=\(from.tag ?? "")
                Call-ID: \(subscribe.headers.callID ?? "")
                CSeq: \(cseq) NOTIFY
                Event: presence
                Subscription-State: active;expires=600
                Content-Type: application/pidf+xml

                """, body: body, to: front.port)
        }
        func relayedToTheEdge() async -> Bool {
            await edge.receive(for: 0.6).compactMap(\.request).contains { $0.method == .notify }
        }

        // A stranger's NOTIFY in the live leg: refused at the front, never relayed to the watcher.
        let stranger = try LoopbackDatagramPeer(host: "127.0.0.2")
        notify(10, from: stranger)
        #expect(await stranger.response(within: 5)?.statusCode == 403)
        #expect(await !relayedToTheEdge(), "a stranger's NOTIFY reached the watcher")

        // The peer itself cannot aim the front elsewhere: not with a Route after the front's, not
        // with a Request-URI that is no node.
        let elsewhere = try LoopbackDatagramPeer(host: "127.0.0.3")
        notify(11, from: server, routes: "\(recordRoute), <sip:\(elsewhere.hostPort);lr>")
        #expect(await server.response(200, within: 5) != nil)
        notify(12, from: server, uri: "sip:x@\(elsewhere.hostPort)")
        #expect(await server.response(403, within: 5) != nil)
        #expect(await elsewhere.receive(for: 0.5).isEmpty, "the front relayed to a host the sender chose")

        // Watcher information with a forged From, from a stranger: refused at the front.
        stranger.send("""
            SUBSCRIBE sip:mary@oma.example SIP/2.0
            Via: SIP/2.0/UDP \(stranger.hostPort);branch=z9hG4bKfrw;rport
            Max-Forwards: 70
            From: <sip:mary@oma.example>;tag=frw
            To: <sip:mary@oma.example>
            Call-ID: frw@evil
            CSeq: 1 SUBSCRIBE
            Contact: <sip:mary@\(stranger.hostPort)>
            Event: presence.winfo
            Accept: application/watcherinfo+xml

            """, to: front.port)
        #expect(await stranger.response(within: 5)?.statusCode == 403)
    }
}
