import Foundation
import NIOPosix
import PeerTestSupport
import PresenceGateway
import Prometheus
import SIPMessages
import SIPTransport
import Testing

/// HEP v3 capture against a real collector (README, "Operations"): the gateway in process on UDP
/// listeners, both of its peers bare sockets (``LoopbackDatagramPeer``) that record every
/// message they send and receive, and Kamailio's `sipcapture` storing what the gateway copied
/// into SQLite. What the peers saw on the wire and what the collector stored must be the same
/// messages, with the same addresses, transport and Call-ID.
@Suite(.serialized) struct HEPCapturePeerTests {
    /// One message as a peer saw it on the wire.
    struct Wire: Hashable, Comparable, CustomStringConvertible {
        var source: String
        var destination: String
        /// The request's method, or the response's status code.
        var method: String
        var callID: String
        var cseq: String

        init(_ message: SIPMessage, from source: String, to destination: String) {
            self.source = source
            self.destination = destination
            switch message {
            case .request(let r): method = r.method.rawValue
            case .response(let r): method = String(r.statusCode)
            }
            callID = message.headers.callID ?? ""
            cseq = message.headers.values(named: .cseq).first ?? ""
        }

        init(_ row: SipcaptureKamailio.Row) {
            source = row.source
            destination = row.destination
            method = row.method
            callID = row.callID
            cseq = row.cseq
        }

        static func < (a: Wire, b: Wire) -> Bool { a.description < b.description }
        var description: String { "\(source) -> \(destination) \(method) [\(cseq)] \(callID)" }
    }

    /// The gateway with its two peers; `capture` is the YAML `capture:` value (nil: none).
    final class Gateway: @unchecked Sendable {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let registry = PrometheusCollectorRegistry()
        let server: GatewayServer
        let oma: LoopbackDatagramPeer
        let edge: LoopbackDatagramPeer
        let omaPort: UInt16
        let enterprisePort: UInt16
        /// Every message the peers sent and received, in order.
        private(set) var wire: [Wire] = []

        init(capture: String?) async throws {
            oma = try LoopbackDatagramPeer()
            edge = try LoopbackDatagramPeer()
            let yaml = """
                state: { store: memory }
                listen:
                  - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }
                  - { side: enterprise, transport: udp, address: 127.0.0.1, port: 0 }
                enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(edge.port);transport=udp" }
                oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(oma.port);transport=udp" }
                peers:
                  - { name: edge, address: 127.0.0.1, port: \(edge.port), side: enterprise, network: sameEnterprise, trusted: true }
                  - { name: kamailio, address: 127.0.0.1, port: \(oma.port), side: oma }
                subscriptions: { piggyback-wait-ms: 300 }
                \(capture.map { "capture: \($0)" } ?? "")
                """
            server = try GatewayServer(configuration: try GatewayConfiguration(yaml: yaml), registry: registry, eventLoop: group.next())
            try await server.start()
            omaPort = UInt16(server.bound[.oma]?.first?.port ?? 0)
            enterprisePort = UInt16(server.bound[.enterprise]?.first?.port ?? 0)
        }

        func stop() async {
            await server.stop(grace: .milliseconds(200))
            try? await group.shutdownGracefully()
        }

        private func listener(of peer: LoopbackDatagramPeer) -> UInt16 { peer === edge ? enterprisePort : omaPort }

        /// Sends as ``LoopbackDatagramPeer/send(_:body:to:)`` does, and records the message.
        func send(_ text: String, body: [UInt8] = [], from peer: LoopbackDatagramPeer) throws {
            let head = text.replacingOccurrences(of: "\n", with: "\r\n") + "Content-Length: \(body.count)\r\n\r\n"
            let message = try SIPMessage(parsing: Array(head.utf8) + body)
            wire.append(Wire(message, from: peer.hostPort, to: "127.0.0.1:\(listener(of: peer))"))
            peer.send(text, body: body, to: listener(of: peer))
        }

        /// What `peer` receives within `seconds`, recorded.
        func receive(_ peer: LoopbackDatagramPeer, for seconds: Double) async -> [SIPMessage] {
            let messages = await peer.receive(for: seconds)
            for message in messages { wire.append(Wire(message, from: "127.0.0.1:\(listener(of: peer))", to: peer.hostPort)) }
            return messages
        }

        /// Answers a request 200, as ``LoopbackDatagramPeer/answer(_:to:)`` does.
        func answer(_ request: SIPRequest, from peer: LoopbackDatagramPeer, toTag: String? = nil) throws {
            let copied: [SIPHeaderName] = [.via, .from, .to, .callID, .cseq]
            var lines = copied.flatMap { name in request.headers.values(named: name).map { "\(name): \($0)\n" } }
            if let toTag, let index = lines.firstIndex(where: { $0.hasPrefix("\(SIPHeaderName.to): ") }) {
                lines[index] = String(lines[index].dropLast()) + ";tag=\(toTag)\n"
            }
            let extra = request.method == .subscribe ? "Contact: <sip:\(peer.hostPort)>\nExpires: 600\n" : ""
            try send("SIP/2.0 200 OK\n" + lines.joined() + extra, from: peer)
        }

        /// An enterprise watcher subscribes to an OMA presentity; the OMA presence server accepts
        /// and notifies; the watcher answers what reaches it. Every message on both sides is
        /// recorded, and the exchange runs until both sides are quiet for 1.2 s.
        func subscribeAndNotify() async throws {
            try send("""
                SUBSCRIBE sip:carol@oma.example SIP/2.0
                Via: SIP/2.0/UDP \(edge.hostPort);branch=z9hG4bKhep1;rport
                Max-Forwards: 70
                From: <sip:bob@contoso.com>;tag=hep1
                To: <sip:carol@oma.example>
                Call-ID: hep-edge-1@contoso
                CSeq: 1 SUBSCRIBE
                Contact: <sip:bob@\(edge.hostPort)>
                Event: presence
                Accept: application/pidf+xml

                """, from: edge)
            let subscribe = try #require(await receive(oma, for: 0.3).compactMap(\.request).first { $0.method == .subscribe })
            try answer(subscribe, from: oma, toTag: "k1")
            let from = try #require(try subscribe.headers.from)
            let pidf = #"<presence xmlns="urn:ietf:params:xml:ns:pidf" entity="sip:carol@oma.example"><tuple id="t"><status><basic>open</basic></status></tuple></presence>"#
            try send("""
                NOTIFY sip:gw@127.0.0.1:\(omaPort) SIP/2.0
                Via: SIP/2.0/UDP \(oma.hostPort);branch=z9hG4bKhepn1;rport
                Max-Forwards: 70
                From: <sip:carol@oma.example>;tag=k1
                To: <\(from.uri)>;tag=\(from.tag ?? "")
                Call-ID: \(subscribe.headers.callID ?? "")
                CSeq: 1 NOTIFY
                Event: presence
                Subscription-State: active;expires=600
                Content-Type: application/pidf+xml

                """, body: Array(pidf.utf8), from: oma)
            // Short windows, so that every request is answered well within RFC 3261 T1 (500 ms).
            var quiet = 0
            while quiet < 6 {
                let atEdge = await receive(edge, for: 0.15)
                let atOMA = await receive(oma, for: 0.05)
                for request in atEdge.compactMap(\.request) { try answer(request, from: edge) }
                for request in atOMA.compactMap(\.request) { try answer(request, from: oma) }
                quiet = atEdge.isEmpty && atOMA.isEmpty ? quiet + 1 : 0
            }
        }

        /// The registry's value of a counter series (`name{labels}`), nil when absent.
        func metric(_ series: String) -> Double? { metricValue(registry, series) }
    }

    @Test func sipcaptureStoresEveryMessageBothSidesSentAndReceivedWithItsAddresses() async throws {
        let collector = try await SipcaptureKamailio.start()
        defer { collector.stop() }
        let gateway = try await Gateway(capture: #"{ hep: "udp:127.0.0.1:\#(collector.port)", id: 2001 }"#)
        let started = Int(Date().timeIntervalSince1970 * 1_000_000)
        do {
            try await gateway.subscribeAndNotify()
        } catch {
            await gateway.stop()
            throw error
        }
        let ended = Int(Date().timeIntervalSince1970 * 1_000_000)
        let wire = gateway.wire
        // The exchange happened: both SUBSCRIBEs and their 200s, the NOTIFY both ways and the
        // answers (at least 8 messages), the watcher answered and the NOTIFY relayed.
        #expect(wire.count >= 8, "\(wire)")
        #expect(wire.contains { $0.method == "200" && $0.cseq == "1 SUBSCRIBE" && $0.destination.hasSuffix(":\(gateway.edge.port)") })
        #expect(wire.contains { $0.method == "NOTIFY" && $0.destination.hasSuffix(":\(gateway.edge.port)") })
        #expect(wire.contains { $0.method == "200" && $0.cseq == "1 NOTIFY" && $0.destination.hasSuffix(":\(gateway.oma.port)") })

        var rows: [SipcaptureKamailio.Row] = []
        for _ in 0..<100 {
            rows = try await collector.rows()
            if rows.count >= wire.count { break }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        let statistics = gateway.server.captureStatistics
        let sentMetric = gateway.metric("gateway_capture_sent_total")
        await gateway.stop()
        #expect(rows.map(Wire.init).sorted() == wire.sorted(),
                "stored:\n\(rows.map(Wire.init).sorted().map(\.description).joined(separator: "\n"))\nwire:\n\(wire.sorted().map(\.description).joined(separator: "\n"))\n\(collector.log.suffix(2000))")
        for row in rows {
            #expect(row.proto == 1, "sipcapture proto 1 = UDP: \(row)")
            #expect(row.family == 2, "AF_INET: \(row)")
            #expect(row.correlationID == row.callID, "\(row)")
            #expect(row.node == "\(SipcaptureKamailio.node):2001", "the capture agent id: \(row)")
            #expect(row.microseconds >= started - 1_000_000 && row.microseconds <= ended + 1_000_000, "timestamp: \(row)")
        }
        #expect(statistics?.sent == wire.count)
        #expect(statistics?.droppedTotal == 0)
        #expect(sentMetric == Double(wire.count))
        #expect(gateway.metric(#"gateway_capture_dropped_total{reason="queue-full"}"#) == 0)
    }

    /// What the gateway's UDP exchange does not show sipcapture: TCP and TLS copies (stored as
    /// TCP, proto 2) and IPv6 addresses (family 10), one of each straight from ``HEPCapture``.
    @Test func sipcaptureReadsTCPTLSAndIPv6Copies() async throws {
        let collector = try await SipcaptureKamailio.start()
        defer { collector.stop() }
        let capture = try HEPCapture(configuration: .init(host: "127.0.0.1", port: collector.port, captureID: 9),
                                     eventLoop: MultiThreadedEventLoopGroup.singleton.next())
        try await capture.start()
        func options(_ callID: String) -> [UInt8] {
            Array(("OPTIONS sip:carol@oma.example SIP/2.0\r\nVia: SIP/2.0/TCP 192.0.2.7:5070;branch=z9hG4bK\(callID)\r\n"
                + "From: <sip:bob@contoso.com>;tag=1\r\nTo: <sip:carol@oma.example>\r\nCall-ID: \(callID)\r\n"
                + "CSeq: 7 OPTIONS\r\nContent-Length: 0\r\n\r\n").utf8)
        }
        let sent: [(SIPTarget, SIPTarget, String)] = [
            (SIPTarget(.tcp, host: "192.0.2.7", port: 40_001), SIPTarget(.tcp, host: "192.0.2.1", port: 5060), "hep-tcp@x"),
            (SIPTarget(.tls, host: "2001:db8::7", port: 40_002), SIPTarget(.tls, host: "2001:db8::1", port: 5061), "hep-tls6@x"),
        ]
        for (source, destination, callID) in sent {
            capture.capture(SIPCapturedMessage(bytes: options(callID), transport: source.kind, source: source, destination: destination))
        }
        var rows: [SipcaptureKamailio.Row] = []
        for _ in 0..<100 {
            rows = try await collector.rows()
            if rows.count >= 2 { break }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        await capture.shutdown()
        try #require(rows.count == 2, "\(rows)\n\(collector.log.suffix(2000))")
        let tcp = try #require(rows.first { $0.callID == "hep-tcp@x" })
        #expect(tcp.source == "192.0.2.7:40001" && tcp.destination == "192.0.2.1:5060")
        #expect(tcp.proto == 2 && tcp.family == 2 && tcp.method == "OPTIONS" && tcp.cseq == "7 OPTIONS")
        let tls = try #require(rows.first { $0.callID == "hep-tls6@x" })
        #expect(tls.source == "2001:db8::7:40002" && tls.destination == "2001:db8::1:5061", "\(tls)")
        #expect(tls.proto == 2 && tls.family == 10 && tls.node == "\(SipcaptureKamailio.node):9")
    }

    @Test func aCollectorThatIsDownLeavesTheRelayAlone() async throws {
        // Nothing listens there: every packet is sent into the void (UDP, no connection).
        let nobody = try LoopbackPorts.free()
        let gateway = try await Gateway(capture: #"{ hep: "udp:127.0.0.1:\#(nobody)", id: 7, queue: 64 }"#)
        do {
            try await gateway.subscribeAndNotify()
        } catch {
            await gateway.stop()
            throw error
        }
        let wire = gateway.wire
        #expect(wire.contains { $0.method == "200" && $0.cseq == "1 SUBSCRIBE" && $0.destination.hasSuffix(":\(gateway.edge.port)") })
        #expect(wire.contains { $0.method == "NOTIFY" && $0.destination.hasSuffix(":\(gateway.edge.port)") })
        #expect(wire.contains { $0.method == "200" && $0.cseq == "1 NOTIFY" && $0.destination.hasSuffix(":\(gateway.oma.port)") })
        // Each message once: no retransmission, so nothing waited on the capture.
        #expect(Set(wire).count == wire.count, "\(wire)")
        let statistics = try #require(gateway.server.captureStatistics)
        #expect(statistics.sent == wire.count)
        #expect(statistics.droppedTotal == 0)
        await gateway.stop()
    }
}
