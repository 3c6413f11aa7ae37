import Foundation
import NIOPosix
import PeerTestSupport
import PresenceGateway
import Prometheus
import SIPMessages
import SIPTransport
import Testing

private let kamailioTLSInstalled = FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/kamailio/modules/tls.so")

/// The shipped multi-node front over TLS (deploy/kamailio-front.cfg with `WITH_TLS`,
/// deploy/kamailio-front-tls.cfg; docs/security.md, "Behind a front") in real Kamailio: the
/// enterprise side, where the Access Edge speaks mutual TLS, with two gateway nodes behind one
/// front. The edge's batched category SUBSCRIBE reaches a node over TLS (the node requires the
/// front's certificate) and its answer comes back over the edge's TLS connection; a client with
/// another valid certificate from the same CA is refused by the front; and with that node gone,
/// the next SUBSCRIBE is taken by the other node.
@Suite(.serialized, .enabled(if: PeerAssets.kamailioInstalled && kamailioTLSInstalled, "needs Kamailio's tls module (scripts/setup.sh)"))
struct FrontTLSTests {
    /// A node: the enterprise side on TLS only, mutual, its one enterprise peer the front by its
    /// certificate (partner.example); the OMA side toward `oma` (a socket that never answers).
    static func node(tlsPort: UInt16, front: UInt16, oma: UInt16, files: String) throws -> GatewayServer {
        let yaml = """
            state: { store: memory }
            listen:
              - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }
              - { side: enterprise, transport: tls, address: 127.0.0.1, port: \(tlsPort) }
            tls:
              certificate-chain: \(files)/node.pem
              private-key: \(files)/node.key
              trust-roots: \(files)/ca.pem
              require-client-certificate: true
            enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(front);transport=tls" }
            oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(oma);transport=udp" }
            peers:
              # No port: the front's TLS connections come from any port; its certificate says who it is.
              - { name: enterprise-front, address: 127.0.0.1, side: enterprise, network: sameEnterprise,
                  trusted: true, certificate-names: [partner.example] }
              - { name: oma-server, address: 127.0.0.1, port: \(oma), side: oma }
            subscriptions: { piggyback-wait-ms: 300 }
            """
        return try GatewayServer(
            configuration: try GatewayConfiguration(yaml: yaml), registry: PrometheusCollectorRegistry(),
            eventLoop: MultiThreadedEventLoopGroup.singleton.next())
    }

    /// `user`'s batched category SUBSCRIBE for john@oma.example's state ([MS-PRES] §3.4.5.1.1)
    /// in dialog `call` (Call-ID `call-tls@contoso`), as the edge sends it over its TLS
    /// connection to the front.
    static func subscribe(_ user: String, call: String, via edge: TLSTestEndpoint) throws -> SIPMessage {
        let tls = try #require(edge.target(.tls))
        let batch = """
            <batchSub xmlns="http://schemas.microsoft.com/2006/01/sip/batch-subscribe" uri="sip:\(user)@contoso.com" name=""><action name="subscribe" id="1">\
            <adhocList><resource uri="sip:john@oma.example"/></adhocList><categoryList xmlns="http://schemas.microsoft.com/2006/09/sip/categorylist">\
            <category name="state"/></categoryList></action></batchSub>
            """
        let text = """
            SUBSCRIBE sip:\(user)@contoso.com SIP/2.0\r
            Via: SIP/2.0/TLS 127.0.0.1:\(tls.port);branch=z9hG4bK\(call)tls\r
            Max-Forwards: 70\r
            From: <sip:\(user)@contoso.com>;tag=\(call)t;epid=5e434f57d3\r
            To: <sip:\(user)@contoso.com>\r
            Call-ID: \(call)-tls@contoso\r
            CSeq: 1 SUBSCRIBE\r
            Contact: <sip:\(user)@127.0.0.1:\(tls.port);transport=tls>\r
            Event: presence\r
            Accept: application/msrtc-event-categories+xml, application/rlmi+xml, multipart/related\r
            Supported: ms-benotify, ms-piggyback-first-notify, eventlist\r
            Require: adhoclist, categoryList\r
            Expires: 600\r
            Content-Type: application/msrtc-adrl-categorylist+xml\r
            Content-Length: \(batch.utf8.count)\r
            \r
            \(batch)
            """
        return try SIPMessage(parsing: Array(text.utf8))
    }

    /// The final response `endpoint` got to the SUBSCRIBE in dialog `call`, within `seconds`.
    static func answer(to call: String, at endpoint: TLSTestEndpoint, within seconds: Double) async throws -> SIPReceivedMessage? {
        try await endpoint.first(within: seconds) {
            guard let response = $0.message.response, response.statusCode >= 200 else { return false }
            return response.headers.callID == "\(call)-tls@contoso"
        }
    }

    @Test func theEdgeReachesEitherNodeOverTLSAndNobodyElseGetsIn() async throws {
        let files = NSTemporaryDirectory() + "front-tls-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: files) }
        // The front's certificate is partner.example's (CN partner-cn.example); the nodes' gateway.test.
        for (name, pem) in [("front.pem", TestCertificates.clientCertificate), ("front.key", TestCertificates.clientKey),
                            ("node.pem", TestCertificates.serverCertificate), ("node.key", TestCertificates.serverKey),
                            ("ca.pem", TestCertificates.bothCAs)] {
            try pem.write(toFile: "\(files)/\(name)", atomically: true, encoding: .utf8)
        }
        let shipped = try String(contentsOf: PeerAssets.root.deletingLastPathComponent().appendingPathComponent("deploy/kamailio-front-tls.cfg"),
                                 encoding: .utf8)
        try shipped.replacingOccurrences(of: "/etc/kamailio/tls", with: files).write(toFile: "\(files)/tls.cfg", atomically: true, encoding: .utf8)

        let group = MultiThreadedEventLoopGroup.singleton
        let edge = try await TLSTestEndpoint(certificate: TestCertificates.edgeCertificate, key: TestCertificates.edgeKey, eventLoop: group.next())
        let stranger = try await TLSTestEndpoint(certificate: TestCertificates.evilCertificate, key: TestCertificates.evilKey,
                                                 eventLoop: group.next())
        let oma = try LoopbackDatagramPeer()
        let ports = (try LoopbackPorts.free(), try LoopbackPorts.free())
        let front = try await SharedStateProcessTests.Front.start(
            directory: files, name: "enterprise", peer: UInt16(try #require(edge.target(.tls)).port),
            nodes: [(ports.0, 8), (ports.1, 8)], tls: true,
            defines: [#"TLSCFG="\#(files)/tls.cfg""#, #"PEER_NAME="edge.contoso.com""#, #"NODES_NAME="gateway.test""#])
        let nodes = [try Self.node(tlsPort: ports.0, front: front.port, oma: oma.port, files: files),
                     try Self.node(tlsPort: ports.1, front: front.port, oma: oma.port, files: files)]
        defer {
            front.child.killGroup()
            // A second stop of a node does nothing.
            Task {
                for node in nodes { await node.stop(grace: .milliseconds(100)) }
                await edge.transport.shutdown()
                await stranger.transport.shutdown()
            }
        }
        for node in nodes { try await node.start() }
        let frontTarget = SIPTarget(.tls, host: "127.0.0.1", port: front.port)
        // The front's probes find both nodes over TLS.
        try await Task.sleep(nanoseconds: 2_000_000_000)

        // carol's SUBSCRIBE reaches one node over TLS; its answer comes back through the front.
        // The front's TLS workers may still be starting on a loaded machine (a handshake then
        // ends in EOF): the edge tries again for up to 10 s, as a real edge reconnects.
        let connected = Date().addingTimeInterval(10)
        while true {
            do {
                try await edge.send(try Self.subscribe("carol", call: "carol", via: edge), to: frontTarget)
                break
            } catch where Date() < connected {
                try await Task.sleep(nanoseconds: 250_000_000)
            }
        }
        let carol = try #require(try await Self.answer(to: "carol", at: edge, within: 10),
                                 "no answer through the front:\n\(front.child.output.suffix(3000))")
        #expect(carol.message.response?.statusCode == 200, "\(carol.message)")
        #expect(carol.local.kind == .tls)
        let holder = try #require(nodes.firstIndex { $0.status?.enterpriseWatches == 1 }, "no node took carol's subscription")
        #expect(nodes[1 - holder].status?.enterpriseWatches == 0)
        // The node's leg toward the OMA side is answered and john comes online: the node's
        // BENOTIFY goes to carol over TLS through the front (which knows the node by its
        // certificate) and on to the edge over the front's own TLS connection.
        let leg = try #require(await oma.request(.subscribe, within: 5), "no leg toward the OMA side")
        let omaPort = UInt16(try #require(nodes[holder].bound[.oma]?.first).port)
        oma.answer(leg, to: omaPort, toTag: "john1", extra: "Expires: 600\n")
        oma.notify(inDialogOf: leg, tag: "john1", presentity: "sip:john@oma.example", cseq: 1, to: omaPort)
        let benotify = try #require(
            try await edge.first(within: 10) { [.benotify, .notify].contains($0.message.request?.method) },
            "nothing reached the edge from the node:\n\(front.child.output.suffix(3000))")
        #expect(benotify.local.kind == .tls)
        #expect(benotify.message.request?.headers.callID == "carol-tls@contoso")
        #expect(String(decoding: benotify.message.body, as: UTF8.self).contains("availability"))

        // Another certificate of the same CA, from the edge's address: refused by the front, no node sees it.
        try await stranger.send(try Self.subscribe("mallory", call: "mallory", via: stranger), to: frontTarget)
        let refused = try #require(try await Self.answer(to: "mallory", at: stranger, within: 10), "the stranger got no answer")
        #expect(refused.message.response?.statusCode == 403, "\(refused.message)")
        #expect(nodes.allSatisfy { $0.status?.enterpriseWatches ?? 0 <= 1 })

        // carol's node goes; her next batch (the same Request-URI, so the same node by hash) is
        // taken by the other node.
        await nodes[holder].stop(grace: .milliseconds(100))
        try await edge.send(try Self.subscribe("carol", call: "carol-2", via: edge), to: frontTarget)
        let next = try #require(try await Self.answer(to: "carol-2", at: edge, within: 15),
                                "no answer after the node went:\n\(front.child.output.suffix(3000))")
        #expect(next.message.response?.statusCode == 200, "\(next.message)")
        #expect(nodes[1 - holder].status?.enterpriseWatches == 1)
    }
}
