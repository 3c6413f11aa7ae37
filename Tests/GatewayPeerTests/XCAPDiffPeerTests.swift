import Foundation
import PeerTestSupport
import PresenceGateway
import Prometheus
import SIPMessages
import Testing

/// Pres-rules changes announced over SIP (RFC 5875; docs/flows.md, "Policy from XCAP"): the
/// gateway subscribes to Erin's `xcap-diff` event at Kamailio's presence server (`presence_xml`,
/// which serves the event from what is PUBLISHed for it), and fetches her pres-rules from
/// Kamailio's XCAP server as soon as a NOTIFY names them, long before its hourly poll. The test
/// changes the document over HTTP, as Erin's XCAP client would, and PUBLISHes the RFC 5874
/// document, as an XCAP server that announces changes over SIP does. Carol, an enterprise
/// watcher behind the edge, is a UDP socket of the test.
@Suite(.serialized) struct XCAPDiffPeerTests {
    static let carol = "sip:carol@contoso.com"
    static let erin = "sip:erin@oma.example"

    /// One PUBLISH (RFC 3903) of `body` for `event` of `user` to Kamailio's UDP `port`; the status.
    static func publish(_ event: String, of user: String, type: String, body: String, port: UInt16) async throws -> Int? {
        let socket = try RawSIPSocket.udp()
        defer { socket.close() }
        let head = "PUBLISH \(user) SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:\(socket.port);branch=z9hG4bKxd\(socket.port)\r\n"
            + "Max-Forwards: 70\r\nFrom: <\(user)>;tag=xd\(socket.port)\r\nTo: <\(user)>\r\n"
            + "Call-ID: xcap-diff-\(socket.port)@127.0.0.1\r\nCSeq: 1 PUBLISH\r\nEvent: \(event)\r\nExpires: 600\r\n"
            + "Content-Type: \(type)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        socket.send(Array(head.utf8), to: port)
        let answer = await socket.receive(within: 5) { ($0.response?.statusCode ?? 0) >= 200 }
        return answer?.response?.statusCode
    }

    /// Erin's owner decides every watcher (`confirm`) until her document says otherwise; the
    /// document is fetched at start, then polled only hourly. Carol waits, pending. Erin allows
    /// her, and the change is announced: within a second the gateway has fetched the document
    /// (`gateway_xcap_fetches_total{result="changed"}`) and decided Carol, subscribing to Erin
    /// at Kamailio on her behalf. (The multipart BENOTIFY that activates Carol then goes over
    /// TCP, being over 1300 bytes, RFC 3261 §18.1.1, which this UDP socket does not take.)
    @Test func anAnnouncedChangeDecidesTheWaitingWatcherAtOnce() async throws {
        let kamailio = try await RLSKamailio.start()
        try await withCleanup {
            let yaml = """
                state: { store: memory }
                listen:
                  - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }
                  - { side: enterprise, transport: udp, address: 127.0.0.1, port: 0 }
                enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(try LoopbackPorts.free());transport=udp" }
                oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(kamailio.sipPort);transport=udp" }
                peers:
                  - { name: edge, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }
                  - { name: kamailio, address: 127.0.0.1, port: \(kamailio.sipPort), side: oma }
                presentities:
                  default:
                    defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
                  "\(Self.erin)":
                    defaults: { sameEnterprise: confirm, federated: confirm, publicCloud: confirm }
                    pres-rules: xcap
                xcap: { root: "\(kamailio.root)", poll: 3600, timeout: 5, xcap-diff: true }
                subscriptions: { piggyback-wait-ms: 300 }
                """
            let registry = PrometheusCollectorRegistry()
            let server = try GatewayServer(configuration: try GatewayConfiguration(yaml: yaml), registry: registry)
            try await withCleanup {
                try await server.startRunning()
                let gatewayOMA = try #require(server.bound[.oma]?.first?.port)
                let enterprise = try #require(server.bound[.enterprise]?.first?.port)
                func fromGateway() -> [String] { kamailio.subscribes.filter { $0.contains("src=127.0.0.1:\(gatewayOMA) ") } }
                let carolsLeg = "ruri=\(Self.erin) from=\(Self.carol) "

                // Carol waits for Erin's owner: listed pending, and nothing asked of Kamailio for her.
                let watcher = try await EnterpriseWatcher(watcher: Self.carol, resource: Self.erin, gatewayPort: UInt16(enterprise))
                #expect(watcher.subscribeStatus == 200)
                await watcher.settle(quiet: 0.5, within: 3)
                #expect(watcher.transcript.first?.contains("state=\"pending\"") == true, "\(watcher.transcript)")
                #expect(fromGateway().contains { $0.contains("ruri=\(Self.erin) from=\(Self.erin) ") },
                        "no xcap-diff SUBSCRIBE: \(fromGateway().joined(separator: "\n"))")
                #expect(!fromGateway().contains { $0.contains(carolsLeg) })

                // Erin allows Carol; her XCAP server announces the change.
                let put = try await loopbackHTTP(
                    port: Int(kamailio.xcapPort), "PUT", XCAPKamailio.presRulesPath(Self.erin),
                    body: PresRulesPeerTests.rules([(Self.carol, "allow")]),
                    headers: ["Content-Type: application/auth-policy+xml"])
                #expect(put.status == 200 || put.status == 201)
                let announced = try await Self.publish(
                    "xcap-diff", of: Self.erin, type: "application/xcap-diff+xml",
                    body: """
                        <?xml version="1.0" encoding="UTF-8"?>
                        <xcap-diff xmlns="urn:ietf:params:xml:ns:xcap-diff" xcap-root="\(kamailio.root)/">\
                        <document new-etag="2" sel="pres-rules/users/\(Self.erin)/index"/></xcap-diff>
                        """, port: kamailio.sipPort)
                #expect(announced == 200)
                let deadline = Date().addingTimeInterval(3)
                while !fromGateway().contains(where: { $0.contains(carolsLeg) }), Date() < deadline {
                    try await Task.sleep(nanoseconds: 50_000_000)
                }
                #expect(fromGateway().contains { $0.contains(carolsLeg) }, "\(fromGateway().joined(separator: "\n"))")
                #expect(await metricValue(registry, #"gateway_xcap_fetches_total{result="changed"}"#, reaching: 1) == 1)
            } cleanup: {
                await server.stop(grace: .zero)
            }
        } cleanup: {
            kamailio.stop()
        }
    }
}
