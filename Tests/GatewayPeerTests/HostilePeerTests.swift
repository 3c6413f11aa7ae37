import Foundation
import NIOPosix
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import Prometheus
import SIPMessages
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A hostile or honest SIP peer as a bare UDP socket on a loopback address of its own, so a test
/// sees every datagram the gateway sends it (retransmissions included) and nothing else.
final class LoopbackDatagramPeer: @unchecked Sendable {
    let fd: Int32
    let host: String
    let port: UInt16

    init(host: String = "127.0.0.1") throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw PeerError("socket: \(errno)") }
        var addr = Self.address(host, 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ptr -> Int32 in
                guard bind(fd, ptr, len) == 0 else { return -1 }
                return getsockname(fd, ptr, &len)
            }
        }
        guard bound == 0 else {
            close(fd)
            throw PeerError("bind \(host): \(errno)")
        }
        self.fd = fd
        self.host = host
        port = UInt16(bigEndian: addr.sin_port)
    }

    deinit { close(fd) }

    static func address(_ host: String, _ port: UInt16) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &addr.sin_addr)
        return addr
    }

    var hostPort: String { "\(host):\(port)" }

    func send(_ text: String, body: [UInt8] = [], to port: UInt16) {
        let head = text.replacingOccurrences(of: "\n", with: "\r\n") + "Content-Length: \(body.count)\r\n\r\n"
        let bytes = Array(head.utf8) + body
        var addr = Self.address("127.0.0.1", port)
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// Answers a request 200 (RFC 3261 §8.2.6: Via, From, To, Call-ID and CSeq copied). With
    /// `toTag`, the To gets it and the answer this socket's Contact (a SUBSCRIBE accepted, RFC
    /// 6665 §4.2.1.1), then the `extra` header lines and `body`.
    func answer(_ request: SIPRequest, to port: UInt16, toTag: String? = nil, extra: String = "", body: [UInt8] = []) {
        let copied: [SIPHeaderName] = [.via, .from, .to, .callID, .cseq]
        var lines = copied.flatMap { name in request.headers.values(named: name).map { "\(name): \($0)\n" } }
        if let toTag, let to = request.headers[.to], let index = lines.firstIndex(where: { $0.hasPrefix("\(SIPHeaderName.to):") }) {
            lines[index] = "\(SIPHeaderName.to): \(to);tag=\(toTag)\n"
            lines.append("Contact: <sip:\(hostPort)>\n")
        }
        send("SIP/2.0 200 OK\n" + lines.joined() + extra, body: body, to: port)
    }

    /// A PIDF NOTIFY (`basic`: `open` unless given) for `presentity` in the dialog the gateway's
    /// `subscribe` made, with the notifier's tag `tag` (RFC 6665 §4.2.2), sent to the gateway's
    /// UDP `port`.
    func notify(
        inDialogOf subscribe: SIPRequest, tag: String, presentity: String, cseq: Int, to port: UInt16,
        basic: String = "open"
    ) {
        let from = try? subscribe.headers.from
        send("""
            NOTIFY sip:gw@127.0.0.1:\(port) SIP/2.0
            Via: SIP/2.0/UDP \(hostPort);branch=z9hG4bKn\(cseq)\(tag);rport
            Max-Forwards: 70
            From: <\(presentity)>;tag=\(tag)
            To: <\(from?.uri.description ?? "")>;tag=\(from?.tag ?? "")
            Call-ID: \(subscribe.headers.callID ?? "")
            CSeq: \(cseq) NOTIFY
            Event: presence
            Subscription-State: active;expires=600
            Content-Type: application/pidf+xml

            """,
            body: Array(#"<presence xmlns="urn:ietf:params:xml:ns:pidf" entity="\#(presentity)"><tuple id="t"><status><basic>\#(basic)</basic></status></tuple></presence>"#.utf8),
            to: port)
    }

    /// The first request with `method` that arrives within `seconds` (others are dropped): for
    /// what the gateway sends at once but a loaded test machine may delay past a fixed window.
    func request(_ method: SIPMethod, within seconds: Double) async -> SIPRequest? {
        await first(within: seconds) { $0.request?.method == method }?.request
    }

    /// The first response that arrives within `seconds` (with `status`: the first with it).
    func response(_ status: Int? = nil, within seconds: Double) async -> SIPResponse? {
        await first(within: seconds) { message in
            message.response.map { response in status.map { response.statusCode == $0 } ?? true } ?? false
        }?.response
    }

    /// The first message for which `match` holds that arrives within `seconds`: the messages
    /// before it are dropped, those after it stay to be read. Datagrams are read one at a time,
    /// so a wait ends as soon as its message is there, however loaded the machine.
    func first(within seconds: Double, where match: (SIPMessage) -> Bool) async -> SIPMessage? {
        let end = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while end.timeIntervalSinceNow > 0 {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard n > 0 else {
                try? await Task.sleep(nanoseconds: 5_000_000)
                continue
            }
            do {
                let message = try SIPMessage(parsing: Array(buffer[0..<n]))
                if match(message) { return message }
            } catch {
                Issue.record("unparsable datagram: \(error)")
            }
        }
        return nil
    }

    /// Every message that arrives within `seconds` (parsed; unparsable datagrams are a failure).
    /// The socket is polled every 5 ms without blocking a thread of the test runner.
    func receive(for seconds: Double) async -> [SIPMessage] {
        var out: [SIPMessage] = []
        let end = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while end.timeIntervalSinceNow > 0 {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard n > 0 else {
                try? await Task.sleep(nanoseconds: 5_000_000)
                continue
            }
            do { out.append(try SIPMessage(parsing: Array(buffer[0..<n]))) } catch {
                Issue.record("unparsable datagram: \(error)")
            }
        }
        return out
    }
}

/// Hostile peers against the gateway over real sockets (docs/security.md): the gateway in
/// process on UDP listeners, every peer a bare socket on a 127.0.0.x address, so each test sees
/// what the gateway sent to whom, and asserts that nothing went where it must not.
@Suite(.serialized) struct HostilePeerTests {
    final class Edge: @unchecked Sendable {
        /// A loop of its own: other suites' load on the shared loops must not delay the gateway.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server: GatewayServer
        let kamailio: LoopbackDatagramPeer
        let edge: LoopbackDatagramPeer
        let oma: UInt16
        let enterprise: UInt16
        /// The OMA side's TCP listener, with `tcp`.
        let omaTCP: UInt16?
        let registry = PrometheusCollectorRegistry()

        /// `kamailio`: where the OMA server listens (with `anyPort`, configured as a peer by its
        /// address alone); `tcp`: an OMA TCP listener too; `subscriberList`: the enterprise's
        /// subscriber-list context on; `edgeTransport`: how the enterprise edge is reached;
        /// `extra`: YAML appended.
        init(kamailio host: String = "127.0.0.1", anyPort: Bool = false, tcp: Bool = false, subscriberList: Bool = false,
             edgeTransport: String = "udp", extra: String = "") async throws {
            kamailio = try LoopbackDatagramPeer(host: host)
            edge = try LoopbackDatagramPeer()
            let yaml = """
                state: { store: memory }
                listen:
                  - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }
                  - { side: enterprise, transport: udp, address: 127.0.0.1, port: 0 }
                \(tcp ? "  - { side: oma, transport: tcp, address: 127.0.0.1, port: 0 }" : "")
                \(edgeTransport == "tcp" ? "  - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 0 }" : "")
                enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(edge.port);transport=\(edgeTransport)"\(subscriberList ? ", subscriber-list: true" : "") }
                oma: { domains: [oma.example], next-hop: "sip:\(host):\(kamailio.port);transport=udp" }
                peers:
                  - { name: edge, address: 127.0.0.1, port: \(edge.port), side: enterprise, network: sameEnterprise, trusted: true }
                  - { name: kamailio, address: \(host), \(anyPort ? "" : "port: \(kamailio.port), ")side: oma, rate-limit: 20 }
                subscriptions: { piggyback-wait-ms: 300 }

                \(extra)
                """
            server = try GatewayServer(configuration: try GatewayConfiguration(yaml: yaml), registry: registry,
                                       eventLoop: group.next())
            try await server.start()
            oma = UInt16(server.bound[.oma]?.first { $0.kind == .udp }?.port ?? 0)
            omaTCP = server.bound[.oma]?.first { $0.kind == .tcp }.map { UInt16($0.port) }
            enterprise = UInt16(server.bound[.enterprise]?.first { $0.kind == .udp }?.port ?? 0)
        }

        /// The value of `gateway_security_refusals_total{reason}` now.
        func refusals(_ reason: String) -> Int {
            metricValue(registry, "gateway_security_refusals_total{reason=\"\(reason)\"}").map { Int($0) } ?? -1
        }

        func stop() async {
            await server.stop(grace: .milliseconds(200))
            try? await group.shutdownGracefully()
        }
    }

    static func batchSubscribe(_ resources: [String], from peer: LoopbackDatagramPeer) -> (String, [UInt8]) {
        let body = BatchSubscribe(uri: "sip:bob@contoso.com", actions: [
            BatchSubscribe.Action(kind: .subscribe, resources: resources.map { .init(uri: $0) }, categories: [.state]),
        ]).serialized()
        return ("""
            SUBSCRIBE sip:bob@contoso.com SIP/2.0
            Via: SIP/2.0/UDP \(peer.hostPort);branch=z9hG4bKb\(UInt32.random(in: 0...UInt32.max));rport
            Max-Forwards: 70
            From: <sip:bob@contoso.com>;tag=b1
            To: <sip:bob@contoso.com>
            Call-ID: batch\(UInt32.random(in: 0...UInt32.max))@contoso
            CSeq: 1 SUBSCRIBE
            Contact: <sip:bob@\(peer.hostPort)>
            Event: presence
            Accept: application/msrtc-event-categories+xml, application/rlmi+xml, multipart/related
            Supported: ms-benotify, ms-piggyback-first-notify, eventlist
            Require: adhoclist, categoryList
            Content-Type: application/msrtc-adrl-categorylist+xml

            """, body)
    }

    @Test func aBatchSubscribeIsNoOpenRelayNorAmplifier() async throws {
        let gw = try await Edge()
        let silent = try LoopbackDatagramPeer()
        let resources = ["sip:carol@oma.example", "sip:x@evil.example", "sip:y@contoso.com", "sip:z@127.0.0.1:\(silent.port)",
                         "sip:t@127.0.0.1:\(silent.port);transport=tcp"]
        let (text, body) = Self.batchSubscribe(resources, from: gw.edge)
        gw.edge.send(text, body: body, to: gw.enterprise)
        let atKamailio = await gw.kamailio.receive(for: 1.5).compactMap(\.request)
        // One subscription (retransmissions of it aside), for the one OMA resource.
        #expect(Set(atKamailio.map { $0.headers.callID ?? "" }).count == 1)
        #expect(atKamailio.allSatisfy { $0.uri.description == "sip:carol@oma.example" })
        #expect(await silent.receive(for: 0.2).isEmpty)
        // The watcher was answered after the piggyback wait, the refused resources rejected.
        let answer = try #require(await gw.edge.first(within: 5) { $0.response?.statusCode == 200 }?.response)
        let multipart = try #require(try SIPMessage.response(answer).multipartBody())
        let list = try BatchSubscribeResponse(multipart: multipart).list
        for refused in resources.dropFirst() {
            #expect(list.resources.first { $0.uri == refused }?.instances.first?.reason == "rejected", "\(refused)")
        }
        await gw.stop()
    }

    @Test func aNotifyInTheOMALegsDialogFromAnotherAddressIsRefusedAndNotRelayed() async throws {
        let gw = try await Edge()
        gw.edge.send("""
            SUBSCRIBE sip:carol@oma.example SIP/2.0
            Via: SIP/2.0/UDP \(gw.edge.hostPort);branch=z9hG4bKpw1;rport
            Max-Forwards: 70
            From: <sip:bob@contoso.com>;tag=pw1
            To: <sip:carol@oma.example>
            Call-ID: pw1@contoso
            CSeq: 1 SUBSCRIBE
            Contact: <sip:bob@\(gw.edge.hostPort)>
            Event: presence
            Accept: application/pidf+xml

            """, to: gw.enterprise)
        let subscribe = try #require(await gw.kamailio.first(within: 5) { $0.request != nil }?.request)
        _ = try #require(try subscribe.headers.from)
        gw.kamailio.answer(subscribe, to: gw.oma, toTag: "k1", extra: "Expires: 600\n")
        // The watcher's answer and first NOTIFY after the piggyback wait; the NOTIFY is answered.
        let first = await gw.edge.receive(for: 0.8).compactMap(\.request).filter { $0.method == .notify }
        for notify in first { gw.edge.answer(notify, to: gw.enterprise) }
        let seen = Set(first.compactMap { try? $0.headers.cseq?.sequence })
        func newNotifies(for seconds: Double) async -> [SIPRequest] {
            await gw.edge.receive(for: seconds).compactMap(\.request).filter {
                $0.method == .notify && !seen.contains((try? $0.headers.cseq?.sequence) ?? 0)
            }
        }
        func notify(_ cseq: Int, from peer: LoopbackDatagramPeer) {
            peer.notify(inDialogOf: subscribe, tag: "k1", presentity: "sip:carol@oma.example", cseq: cseq, to: gw.oma)
        }
        for (n, host) in ["127.0.0.1", "127.0.0.2"].enumerated() {
            let attacker = try LoopbackDatagramPeer(host: host)
            notify(10 + n, from: attacker)
            #expect(await attacker.response(within: 5)?.statusCode == 403, "\(attacker.hostPort)")
        }
        #expect(await newNotifies(for: 0.3).isEmpty)
        // The dialog's peer is relayed.
        notify(20, from: gw.kamailio)
        #expect(await gw.kamailio.receive(for: 0.5).compactMap(\.response).contains { $0.statusCode == 200 })
        #expect(await !newNotifies(for: 0.5).isEmpty)
        await gw.stop()
    }
}
