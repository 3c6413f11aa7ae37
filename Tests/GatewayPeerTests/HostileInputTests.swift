import Foundation
import PeerTestSupport
import PresenceGateway
import Prometheus
import SIPMessages
import Testing

/// Hostile input over real sockets, on both of the gateway's faces: every test starts the
/// gateway in process (``GatewayServer``, UDP and TCP listeners on each side at ports the system
/// chose, on 127.0.0.1 only), with a UDP socket of the test as each side's next hop, sends what
/// it sends, and checks the gateway's answer against RFC 3261 §21 and that the process is
/// unharmed: a normal SUBSCRIBE from that side is still bridged and answered afterwards.
///
/// What the right refusal is: a request past a limit of the header section (size, line length,
/// header or Via count) is not malformed, the server cannot handle its length: 513 Message Too
/// Large (§21.5.14); a Content-Length announcing a body past the limit: 413 Request Entity Too
/// Large (§21.4.11), and over a stream the connection closes after the answer, since framing
/// cannot resume (§18.3); a body that cannot be understood (XML with a DTD, external or nested
/// entities, nesting past the parser's depth limit): 400 Bad Request (§21.4.1; RFC 3470 §4.14:
/// no DTDs in IETF XML). No entity is ever expanded (XMLBridge: no DTD, no entities).
@Suite(.serialized)
struct HostileInputTests {
    enum Side: String, CaseIterable, CustomTestStringConvertible {
        case enterprise, oma
        var testDescription: String { rawValue }
        var configured: GatewayConfiguration.Side { self == .oma ? .oma : .enterprise }
    }

    /// The gateway and one UDP socket of the test per side as that side's next hop.
    final class Gateway: @unchecked Sendable {
        let server: GatewayServer
        let enterprisePeer: RawSIPSocket
        let omaPeer: RawSIPSocket
        var calls = 0

        init() async throws {
            enterprisePeer = try RawSIPSocket.udp()
            omaPeer = try RawSIPSocket.udp()
            let yaml = """
                state: { store: memory }
                listen:
                  - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }
                  - { side: oma, transport: tcp, address: 127.0.0.1, port: 0 }
                  - { side: enterprise, transport: udp, address: 127.0.0.1, port: 0 }
                  - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 0 }
                enterprise:
                  domains: [contoso.com]
                  next-hop: "sip:127.0.0.1:\(enterprisePeer.port);transport=udp"
                oma:
                  domains: [oma.example]
                  next-hop: "sip:127.0.0.1:\(omaPeer.port);transport=udp"
                peers:
                  - { name: enterprise-edge, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }
                  - { name: oma-proxy, address: 127.0.0.1, side: oma, network: federated }
                presentities:
                  default:
                    defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
                subscriptions:
                  piggyback-wait-ms: 300
                  default-expires: 600
                """
            server = try GatewayServer(configuration: try GatewayConfiguration(yaml: yaml), registry: PrometheusCollectorRegistry())
            try await server.start()
        }

        func stop() async {
            await server.stop(grace: .milliseconds(200))
            enterprisePeer.close()
            omaPeer.close()
        }

        func port(_ side: Side, tcp: Bool = false) throws -> UInt16 {
            let target = try #require(server.bound[side.configured]?.first { $0.kind == (tcp ? .tcp : .udp) })
            return target.port
        }

        func peer(_ side: Side) -> RawSIPSocket { side == .oma ? omaPeer : enterprisePeer }

        func nextCall() -> Int {
            calls += 1
            return calls
        }
    }

    static func with(_ body: (Gateway) async throws -> Void) async throws {
        let gateway = try await Gateway()
        try await withCleanup { try await body(gateway) } cleanup: { await gateway.stop() }
    }

    // MARK: Messages

    /// A watcher's SUBSCRIBE from `side` to a presentity of the other side: on the enterprise
    /// side a single category SUBSCRIBE ([MS-PRES] §4.6), on the OMA side a PIDF SUBSCRIBE
    /// (RFC 3856). `transport` and `port` make the Via; `extraHeaders` go before Content-Length.
    static func subscribe(from side: Side, call: Int, transport: String = "UDP", port: UInt16,
                          extraHeaders: String = "", body: String? = nil, contentLength: Int? = nil) -> [UInt8] {
        let (watcher, resource) = side == .enterprise
            ? ("sip:alice\(call)@contoso.com", "sip:carol\(call)@oma.example") : ("sip:dave\(call)@oma.example", "sip:bob\(call)@contoso.com")
        let batch = body ?? (side == .enterprise ? """
            <batchSub xmlns="http://schemas.microsoft.com/2006/01/sip/batch-subscribe" uri="\(watcher)" name=""><action name="subscribe" id="1">\
            <adhocList><resource uri="\(resource)"/></adhocList><categoryList xmlns="http://schemas.microsoft.com/2006/09/sip/categorylist">\
            <category name="state"/><category name="note"/></categoryList></action></batchSub>
            """ : "")
        let typed = side == .enterprise
            ? "Accept: application/msrtc-event-categories+xml, application/rlmi+xml, multipart/related\r\nSupported: ms-benotify, ms-piggyback-first-notify\r\nContent-Type: application/msrtc-adrl-categorylist+xml\r\n"
            : "Accept: application/pidf+xml\r\n" + (batch.isEmpty ? "" : "Content-Type: application/pidf+xml\r\n")
        let head = "SUBSCRIBE \(resource) SIP/2.0\r\nVia: SIP/2.0/\(transport) 127.0.0.1:\(port);branch=z9hG4bKh\(call)x\(port)\r\n"
            + "Max-Forwards: 70\r\nFrom: <\(watcher)>;tag=w\(call)\r\nTo: <\(resource)>\r\nCall-ID: hostile-\(call)-\(port)@127.0.0.1\r\n"
            + "CSeq: 1 SUBSCRIBE\r\nContact: <sip:watcher@127.0.0.1:\(port);transport=\(transport.lowercased())>\r\nEvent: presence\r\n"
            + typed + "Expires: 600\r\n" + extraHeaders + "Content-Length: \(contentLength ?? batch.utf8.count)\r\n\r\n"
        return Array(head.utf8) + Array(batch.utf8)
    }

    /// The answer of the test's next-hop socket to a request the gateway sent it: 200 with a To
    /// tag, the granted Expires and a Contact (RFC 6665 §4.2.1.1), sent to the top Via's sent-by.
    static func answer(_ request: SIPRequest, from peer: RawSIPSocket, tag: String) throws {
        let via = try #require(try request.headers.via.first)
        var headers: SIPHeaders = [(.contact, "<sip:peer@127.0.0.1:\(peer.port)>")]
        if request.method == .subscribe { headers.append(.expires, "600") }
        let response = SIPResponse(replyingTo: request, statusCode: 200, toTag: tag, headers: headers)
        peer.send(SIPMessage.response(response).serialized(), to: via.port ?? 5060)
    }

    /// A normal SUBSCRIBE from `side` is bridged (the gateway subscribes at the other side's next
    /// hop, which answers 200) and answered with a 2xx: the process is unharmed.
    static func normalSubscribeIsAnswered(_ gateway: Gateway, from side: Side) async throws {
        let watcher = try RawSIPSocket.udp()
        defer { watcher.close() }
        let call = gateway.nextCall()
        watcher.send(subscribe(from: side, call: call, port: watcher.port), to: try gateway.port(side))
        let other = gateway.peer(side == .oma ? .enterprise : .oma)
        let leg = await other.receive(within: 10) { $0.request?.method == .subscribe }
        let request = try #require(leg?.request, "the gateway did not subscribe at the \(side == .oma ? "enterprise" : "OMA") side")
        try answer(request, from: other, tag: "leg\(call)")
        let final = await watcher.receive(within: 10) { ($0.response?.statusCode ?? 0) >= 200 && (try? $0.headers.cseq)?.method == .subscribe }
        let status = try #require(final?.response?.statusCode, "no final answer to a normal SUBSCRIBE from the \(side) side")
        #expect((200..<300).contains(status), "a normal SUBSCRIBE from the \(side) side got \(status)")
    }

    // MARK: Size limits (RFC 3261 §21.4.11, §21.5.14)

    /// The largest UDP datagram IPv4 carries (65,507 bytes), one header line filling it: past the
    /// 8 KiB line limit of the parser (SIPParserLimits), so 513 Message Too Large (RFC 3261
    /// §21.5.14), and the gateway goes on.
    @Test(arguments: Side.allCases)
    func udpDatagramOf64KiBIsRefusedWith513(side: Side) async throws {
        try await Self.with { gateway in
            let client = try RawSIPSocket.udp()
            defer { client.close() }
            let plain = Self.subscribe(from: side, call: 9000, port: client.port)
            let fill = 65_507 - plain.count - "X-Fill: \r\n".utf8.count
            let datagram = Self.subscribe(from: side, call: 9000, port: client.port,
                                          extraHeaders: "X-Fill: " + String(repeating: "a", count: fill) + "\r\n")
            #expect(datagram.count == 65_507)
            #expect(client.send(datagram, to: try gateway.port(side)) == 65_507, "the datagram was not sent whole: errno \(errno)")
            let answer = await client.receive(within: 5) { $0.response != nil }
            #expect(answer?.response?.statusCode == 513, "got \(answer?.response.map { "\($0.statusCode) \($0.reasonPhrase)" } ?? "no answer")")
            try await Self.normalSubscribeIsAnswered(gateway, from: side)
        }
    }

    /// 1,000 Via header fields (about 45 KB, one datagram): past the parser's header and Via
    /// counts, so 513 (RFC 3261 §21.5.14), answered to the top Via (§18.2.2).
    @Test(arguments: Side.allCases)
    func requestWithAThousandViasIsRefusedWith513(side: Side) async throws {
        try await Self.with { gateway in
            let client = try RawSIPSocket.udp()
            defer { client.close() }
            let vias = (1..<1000).map { "Via: SIP/2.0/UDP 10.0.\($0 / 250).\($0 % 250 + 1):5060;branch=z9hG4bKv\($0)\r\n" }.joined()
            var request = Self.subscribe(from: side, call: 9001, port: client.port)
            // The 999 more Vias follow the test's own (the first header line).
            let firstLineEnd = try #require(request.firstRange(of: Array("\r\n".utf8))?.upperBound)
            let viaEnd = try #require(request[firstLineEnd...].firstRange(of: Array("\r\n".utf8))?.upperBound)
            request.insert(contentsOf: Array(vias.utf8), at: viaEnd)
            #expect(request.count < 65_507)
            #expect(client.send(request, to: try gateway.port(side)) == request.count)
            let answer = await client.receive(within: 5) { $0.response != nil }
            #expect(answer?.response?.statusCode == 513, "got \(answer?.response.map { "\($0.statusCode) \($0.reasonPhrase)" } ?? "no answer")")
            try await Self.normalSubscribeIsAnswered(gateway, from: side)
        }
    }

    /// A 5 MB body announced over TCP: refused as soon as the header section is in, before the
    /// body (413 Request Entity Too Large, RFC 3261 §21.4.11), and the connection closed, since
    /// the stream cannot be framed past a body it will not read (§18.3).
    @Test(arguments: Side.allCases)
    func fiveMegabyteBodyOverTCPIsRefusedWith413AndTheConnectionClosed(side: Side) async throws {
        try await Self.with { gateway in
            let connection = try RawSIPSocket.tcp(to: try gateway.port(side, tcp: true))
            defer { connection.close() }
            let size = 5 * 1024 * 1024
            let head = Self.subscribe(from: side, call: 9002, transport: "TCP", port: connection.port, body: "", contentLength: size)
            // The header section and the first KiB of the body; the answer is expected before the rest.
            #expect(connection.write(head + [UInt8](repeating: 0x20, count: 1024)))
            let answer = await connection.receive(within: 5)
            #expect(answer?.response?.statusCode == 413, "got \(answer?.response.map { "\($0.statusCode) \($0.reasonPhrase)" } ?? "no answer")")
            #expect(await connection.closedByPeer(within: 5), "the connection stayed open after a refused 5 MB body")
            // The rest of the body finds the connection gone.
            #expect(!connection.write([UInt8](repeating: 0x20, count: size - 1024)))
            try await Self.normalSubscribeIsAnswered(gateway, from: side)
        }
    }

    // MARK: Hostile XML (RFC 3261 §21.4.1; RFC 3470 §4.14)

    enum HostileXML: String, CaseIterable, CustomTestStringConvertible {
        /// 10,000 nested elements (start tags: a closed document that deep does not fit in a
        /// 64 KiB SIP message; the parser's depth limit, 64, is reached first either way).
        case deep
        /// A DOCTYPE with an internal entity used in the document.
        case doctype
        /// An external entity (XXE) naming a local file.
        case xxe
        /// Nested entities, a billion "lol"s when expanded (billion laughs).
        case billionLaughs

        var testDescription: String { rawValue }

        /// Text that appears only if an entity was expanded.
        static let injected = "INJECTED-BY-ENTITY"

        /// The body for a document whose root is `root` in `namespace`.
        func body(root: String, namespace: String, inner: String) -> String {
            switch self {
            case .deep:
                return "<\(root) xmlns=\"\(namespace)\">" + String(repeating: "<a>", count: 10_000)
            case .doctype:
                return "<?xml version=\"1.0\"?>\n<!DOCTYPE \(root) [<!ENTITY n \"\(Self.injected)\">]>\n"
                    + "<\(root) xmlns=\"\(namespace)\">\(inner.replacingOccurrences(of: "NOTE", with: "&n;"))</\(root)>"
            case .xxe:
                return "<?xml version=\"1.0\"?>\n<!DOCTYPE \(root) [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>\n"
                    + "<\(root) xmlns=\"\(namespace)\">\(inner.replacingOccurrences(of: "NOTE", with: "&x;"))</\(root)>"
            case .billionLaughs:
                var entities = "<!ENTITY lol \"lol\">"
                for i in 1...9 {
                    let previous = i == 1 ? "lol" : "lol\(i - 1)"
                    entities += "<!ENTITY lol\(i) \"" + String(repeating: "&\(previous);", count: 10) + "\">"
                }
                return "<?xml version=\"1.0\"?>\n<!DOCTYPE \(root) [\(entities)]>\n"
                    + "<\(root) xmlns=\"\(namespace)\">\(inner.replacingOccurrences(of: "NOTE", with: "&lol9;"))</\(root)>"
            }
        }

        /// A PIDF document (RFC 3863) around it, the note where the entity is used.
        func pidf(entity: String) -> String {
            body(root: "presence", namespace: "urn:ietf:params:xml:ns:pidf",
                 inner: "<tuple id=\"t\"><status><basic>open</basic></status><note>NOTE</note></tuple>")
                .replacingOccurrences(of: "<presence xmlns=\"urn:ietf:params:xml:ns:pidf\">",
                                      with: "<presence xmlns=\"urn:ietf:params:xml:ns:pidf\" entity=\"\(entity)\">")
        }

        /// A categories document ([MS-PRES] §2.2.2.1), a note category carrying the entity.
        func categories(uri: String) -> String {
            body(root: "categories", namespace: "http://schemas.microsoft.com/2006/09/sip/categories",
                 inner: "<category name=\"note\" instance=\"0\" publishTime=\"2026-11-22T10:00:00.000\">"
                    + "<note xmlns=\"http://schemas.microsoft.com/2006/09/sip/note\"><body type=\"personal\" uri=\"\">NOTE</body></note></category>")
                .replacingOccurrences(of: "<categories xmlns=\"http://schemas.microsoft.com/2006/09/sip/categories\">",
                                      with: "<categories xmlns=\"http://schemas.microsoft.com/2006/09/sip/categories\" uri=\"\(uri)\">")
        }

        /// A batchSub document ([MS-PRES] §2.2.2.4.1) listing one resource in the entity.
        func batchSub(watcher: String) -> String {
            body(root: "batchSub", namespace: "http://schemas.microsoft.com/2006/01/sip/batch-subscribe",
                 inner: "<action name=\"subscribe\" id=\"1\"><adhocList><resource uri=\"sip:NOTE@oma.example\"/></adhocList>"
                    + "<categoryList xmlns=\"http://schemas.microsoft.com/2006/09/sip/categorylist\"><category name=\"state\"/></categoryList></action>")
                .replacingOccurrences(of: "<batchSub xmlns=\"http://schemas.microsoft.com/2006/01/sip/batch-subscribe\">",
                                      with: "<batchSub xmlns=\"http://schemas.microsoft.com/2006/01/sip/batch-subscribe\" uri=\"\(watcher)\">")
        }

        /// Whether `bytes` shows an expansion: the internal entity's text, a line of the file,
        /// or laughs beyond the ten the document spells.
        static func expanded(_ bytes: [UInt8]) -> Bool {
            let text = String(decoding: bytes, as: UTF8.self)
            return text.contains(injected) || text.contains("root:") || text.contains(String(repeating: "lol", count: 20))
        }
    }

    /// A NOTIFY with a hostile body in a bridged subscription's dialog, from the notifier at
    /// `side`: on the OMA side a PIDF NOTIFY to the gateway's PIDF subscription (flow 1), on the
    /// enterprise side a categories NOTIFY to its category subscription (flow 2). A benign NOTIFY
    /// first shows the dialog works (200, RFC 6665 §4.1.3); the hostile one must get 400 and its
    /// content must reach no watcher; then a normal SUBSCRIBE from that side is still answered.
    @Test(arguments: Side.allCases, HostileXML.allCases)
    func hostileXMLInANotifyIsRefusedWith400(side: Side, xml: HostileXML) async throws {
        try await Self.with { gateway in
            // The watcher is on the other side; the notifier (the test's next-hop socket) on `side`.
            let watcherSide: Side = side == .oma ? .enterprise : .oma
            let watcher = try RawSIPSocket.udp()
            defer { watcher.close() }
            let call = gateway.nextCall()
            watcher.send(Self.subscribe(from: watcherSide, call: call, port: watcher.port), to: try gateway.port(watcherSide))
            let notifier = gateway.peer(side)
            let leg = try #require(await notifier.receive(within: 10) { $0.request?.method == .subscribe }?.request,
                                   "the gateway did not subscribe at the \(side) side")
            try Self.answer(leg, from: notifier, tag: "n\(call)")
            let answered = await watcher.receive(within: 10) { ($0.response?.statusCode ?? 0) >= 200 && (try? $0.headers.cseq)?.method == .subscribe }
            #expect(answered.map { (200..<300).contains($0.response?.statusCode ?? 0) } == true, "the watcher's SUBSCRIBE was not accepted")

            let resource = try #require(try leg.headers.to?.uri.description)
            let batchResource = side == .enterprise ? "sip:bob\(call)@contoso.com" : resource
            func notify(_ cseq: Int, _ body: String) throws -> [UInt8] {
                let contentType = side == .oma ? "application/pidf+xml" : "application/msrtc-event-categories+xml"
                let target = try #require(try leg.headers.contact.first?.address?.uri.description)
                let head = "NOTIFY \(target) SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:\(notifier.port);branch=z9hG4bKn\(call)c\(cseq)\r\n"
                    + "Max-Forwards: 70\r\nFrom: \(leg.headers.values(named: .to).first ?? "");tag=n\(call)\r\n"
                    + "To: \(leg.headers.values(named: .from).first ?? "")\r\nCall-ID: \(leg.headers.callID ?? "")\r\nCSeq: \(cseq) NOTIFY\r\n"
                    + "Contact: <sip:peer@127.0.0.1:\(notifier.port)>\r\nEvent: presence\r\nSubscription-State: active;expires=600\r\n"
                    + "Content-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
                return Array(head.utf8) + Array(body.utf8)
            }
            let benign = side == .oma
                ? "<presence xmlns=\"urn:ietf:params:xml:ns:pidf\" entity=\"\(resource)\"><tuple id=\"t\"><status><basic>open</basic></status></tuple></presence>"
                : "<categories xmlns=\"http://schemas.microsoft.com/2006/09/sip/categories\" uri=\"\(batchResource)\"><category name=\"state\" instance=\"1\" "
                    + "publishTime=\"2026-11-22T10:00:00.000\"><state xmlns=\"http://schemas.microsoft.com/2006/09/sip/state\" "
                    + "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"aggregateState\"><availability>3500</availability></state></category></categories>"
            let gatewayPort = try gateway.port(side)
            func sendNotify(_ cseq: Int, _ body: String) async throws -> Int? {
                notifier.send(try notify(cseq, body), to: gatewayPort)
                let response = await notifier.receive(within: 5) { message in
                    (try? message.headers.cseq).map { $0.method == .notify && $0.sequence == UInt32(cseq) } == true && message.response != nil
                }
                return response?.response?.statusCode
            }
            #expect(try await sendNotify(1, benign) == 200, "a benign NOTIFY in the dialog was not accepted: the test's dialog is wrong")

            let hostile = side == .oma ? xml.pidf(entity: resource) : xml.categories(uri: batchResource)
            let status = try await sendNotify(2, hostile)
            #expect(status == 400, "a NOTIFY with \(xml.rawValue) XML from the \(side) side got \(status.map(String.init) ?? "no answer")")
            #expect(status != nil, "no answer to the hostile NOTIFY")
            // Nothing the watcher gets shows an expanded entity.
            while let message = await watcher.receive(within: 1.5) {
                #expect(!HostileXML.expanded(message.body), "an entity was expanded into what the watcher received")
            }
            try await Self.normalSubscribeIsAnswered(gateway, from: side)
        }
    }

    /// The same hostile XML as a batched category SUBSCRIBE's body ([MS-PRES] §2.2.2.4.1), which
    /// the gateway reads on arrival from the enterprise side: 400 (RFC 3261 §21.4.1), and nothing
    /// is sent to the OMA side for it.
    @Test(arguments: HostileXML.allCases)
    func hostileXMLInACategorySubscribeIsRefusedWith400(xml: HostileXML) async throws {
        try await Self.with { gateway in
            let watcher = try RawSIPSocket.udp()
            defer { watcher.close() }
            let call = gateway.nextCall()
            watcher.send(Self.subscribe(from: .enterprise, call: call, port: watcher.port, body: xml.batchSub(watcher: "sip:alice\(call)@contoso.com")),
                         to: try gateway.port(.enterprise))
            let answer = await watcher.receive(within: 5) { ($0.response?.statusCode ?? 0) >= 200 }
            #expect(answer?.response?.statusCode == 400, "got \(answer?.response.map { "\($0.statusCode) \($0.reasonPhrase)" } ?? "no answer")")
            if let leg = await gateway.omaPeer.receive(within: 1)?.request {
                Issue.record("the gateway sent \(leg.method) \(leg.uri) to the OMA side for a hostile SUBSCRIBE")
                #expect(!HostileXML.expanded(SIPMessage.request(leg).serialized()))
            }
            try await Self.normalSubscribeIsAnswered(gateway, from: .enterprise)
        }
    }
}
