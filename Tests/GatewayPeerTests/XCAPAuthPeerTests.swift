import Foundation
import PeerTestSupport
import PresenceGateway
import Prometheus
import SIPMessages
import Testing

/// The gateway as an XDM client behind an Aggregation Proxy (PacketCable Presence §6.2.18: every
/// XCAP request goes to it; §6.7: it authenticates with HTTP Digest and asserts the identity to
/// the XDMS): Apache httpd (``AggregationProxy``) in front of Kamailio's `xcap_server`, the
/// gateway's `xcap-auth:` giving its Digest credentials in a password file (docs/security.md,
/// "XCAP credentials").
@Suite(.serialized) struct XCAPAuthPeerTests {
    typealias Gateway = AdminAPITests.Gateway
    static let user = "gw@contoso.com"
    static let password = "Circle of Life"
    static let erin = PresRulesPeerTests.erin
    static let carol = PresRulesPeerTests.carol

    /// A directory holding the password file `xcap-ap`, removed after `body`.
    static func withPasswordFile<T>(_ password: String, _ body: (String) async throws -> T) async throws -> T {
        let directory = NSTemporaryDirectory() + "xcap-credentials-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try (password + "\n").write(toFile: directory + "/xcap-ap", atomically: true, encoding: .utf8)
        return try await withCleanup { try await body(directory) } cleanup: {
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    static let presentities = """
          "\(erin)":
            defaults: { sameEnterprise: allow, federated: allow, publicCloud: allow }
            pres-rules: xcap
        """

    static func xcap(_ proxy: AggregationProxy, directory: String) -> String {
        """
        xcap: { root: "\(proxy.root)", poll: 1, timeout: 2 }
        xcap-auth:
          "\(proxy.root)": { username: "\(user)", password-file: \(directory)/xcap-ap }
        """
    }

    /// `/health`'s entry for `root`.
    static func health(_ gw: Gateway, root: String) async throws -> (text: String, entry: [String: Any]?) {
        let (status, text) = try await gw.http("GET", "/health", authorized: false)
        #expect(status == 200, "\(text)")
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        let roots = object?["xcap"] as? [[String: Any]] ?? []
        return (text, roots.first { $0["root"] as? String == root })
    }

    /// Carol subscribes to Erin before the proxy can reach the XDMS (it answers 503): she waits.
    /// The XDMS comes up with Erin's rules allowing her; the gateway's next poll, answered with a
    /// Digest challenge, authenticates and fetches them, and Carol is decided: her OMA leg starts.
    /// The nonce is used again (RFC 7616 §3.4: nc counting) until it goes stale after 3 s (§3.3),
    /// without any failure counted.
    @Test func rulesComeThroughTheProxyWithDigestAndAPendingWatcherIsDecided() async throws {
        let backend = try LoopbackPorts.free()
        let proxy = try await AggregationProxy.start(backend: backend, users: [Self.user: Self.password], nonceLifetime: 3)
        defer { proxy.stop() }
        try await Self.withPasswordFile(Self.password) { directory in
            let gw = try await Gateway(presentities: Self.presentities, extra: Self.xcap(proxy, directory: directory))
            try await withCleanup {
                try await PresRulesPeerTests.fetched(gw, "failed", 1)
                gw.carolSubscribes(to: Self.erin, callID: "carol-x")
                let waiting = await PresRulesPeerTests.edge(gw, for: 1)
                #expect(waiting.contains { String(decoding: $0.body, as: UTF8.self).contains("pending") }, "\(waiting)")
                #expect(try await Self.health(gw, root: proxy.root).entry?["awaiting"] as? Int == 1)

                let xcap = try await XCAPKamailio.start(port: backend)
                defer { xcap.stop() }
                try await xcap.putPresRules(Self.erin, PresRulesPeerTests.rules([(Self.carol, "allow")]))
                try await PresRulesPeerTests.fetched(gw, "changed", 1)
                let leg = await gw.kamailio.request(.subscribe, within: 5)
                #expect(leg?.uri.description == Self.erin, "the waiting watcher was not decided")

                // Polled through stale nonces for 7 s: every fetch authenticated, none refused.
                let before = proxy.requests.count
                try await Task.sleep(nanoseconds: 7_000_000_000)
                let polled = proxy.requests.dropFirst(before)
                let answered = polled.filter { $0.status == 304 }
                let challenged = polled.filter { $0.status == 401 }
                #expect(answered.count >= 4 && answered.allSatisfy { $0.user == Self.user }, "\(polled)")
                #expect(!challenged.isEmpty, "the nonce never went stale in 7 s: \(polled)")
                #expect(challenged.count < answered.count, "a challenge per request: the nonce is not used again: \(polled)")
                #expect(gw.metric(#"gateway_xcap_auth_failures_total{root="\#(proxy.root)"}"#) == 0)
                let health = try await Self.health(gw, root: proxy.root)
                #expect(health.entry?["authentication"] as? String == "ok", "\(health.text)")
                #expect(health.entry?["awaiting"] as? Int == 0, "\(health.text)")
            } cleanup: {
                await gw.stop()
            }
        }
    }

    /// Wrong credentials: each poll is refused (one challenge answered, refused again: never a
    /// loop), `gateway_xcap_auth_failures_total{root}` counts each, `/health` shows the root failing
    /// with 401 and Erin's watcher waiting, the log names the root and the status, and neither
    /// shows the password. Carol's subscription is answered pending, not left unanswered; once
    /// the password file is right and the configuration reloaded, the next poll decides her.
    @Test func wrongCredentialsAreCountedShownAndRetried() async throws {
        let xcap = try await XCAPKamailio.start()
        defer { xcap.stop() }
        try await xcap.putPresRules(Self.erin, PresRulesPeerTests.rules([(Self.carol, "allow")]))
        let proxy = try await AggregationProxy.start(backend: xcap.port, users: [Self.user: Self.password])
        defer { proxy.stop() }
        try await Self.withPasswordFile("not the password") { directory in
            let extra = Self.xcap(proxy, directory: directory)
            let gw = try await Gateway(presentities: Self.presentities, extra: extra)
            try await withCleanup {
                let series = #"gateway_xcap_auth_failures_total{root="\#(proxy.root)"}"#
                let first = await metricValue(gw.registry, series, reaching: 1, within: 10) ?? 0
                #expect(first >= 1)
                gw.carolSubscribes(to: Self.erin, callID: "carol-x")
                let waiting = await PresRulesPeerTests.edge(gw, for: 1)
                #expect(waiting.contains { String(decoding: $0.body, as: UTF8.self).contains("pending") }, "\(waiting)")
                #expect(await gw.kamailio.receive(for: 1).compactMap(\.request).allSatisfy { $0.method != .subscribe })

                // Tried again at each poll (1 s), each time refused.
                let later = await metricValue(gw.registry, series, reaching: first + 2, within: 10) ?? 0
                #expect(later >= first + 2)
                #expect((gw.metric(#"gateway_xcap_fetches_total{result="unauthorized"}"#) ?? 0) >= 3)
                let health = try await Self.health(gw, root: proxy.root)
                #expect(health.entry?["authentication"] as? String == "failed", "\(health.text)")
                #expect(health.entry?["status"] as? Int == 401 && health.entry?["method"] as? String == "digest", "\(health.text)")
                #expect(health.entry?["awaiting"] as? Int == 1, "\(health.text)")
                #expect((health.entry?["failures"] as? Int ?? 0) >= 3, "\(health.text)")
                #expect(!health.text.contains("not the password") && !health.text.contains(Self.user), "\(health.text)")
                // Per fetch one request without credentials and one answering the challenge.
                let refused = proxy.requests.filter { $0.status == 401 }
                let failures = Int(gw.metric(series) ?? 0)
                #expect(refused.count <= 2 * (failures + 1), "\(refused.count) refusals for \(failures) failures")
                #expect(proxy.requests.allSatisfy { $0.status == 401 }, "\(proxy.requests)")

                // The right password, reloaded: the next poll fetches, and Carol is decided.
                try (Self.password + "\n").write(toFile: directory + "/xcap-ap", atomically: true, encoding: .utf8)
                let text = Gateway.yaml(kamailio: gw.kamailio.port, edge: gw.edge.port, token: Gateway.testToken,
                                        presentities: Self.presentities, extra: extra)
                try text.write(to: gw.file, atomically: true, encoding: .utf8)
                let (status, answer) = try await gw.http("POST", "/reload", body: "{}")
                #expect(status == 200 && !answer.contains("xcap"), "\(answer)")
                try await PresRulesPeerTests.fetched(gw, "changed", 1)
                let leg = await gw.kamailio.request(.subscribe, within: 5)
                #expect(leg?.uri.description == Self.erin, "the waiting watcher was not decided")
                let healed = try await Self.health(gw, root: proxy.root)
                #expect(healed.entry?["authentication"] as? String == "ok" && healed.entry?["awaiting"] as? Int == 0, "\(healed.text)")
            } cleanup: {
                await gw.stop()
            }
        }
    }

    /// Flow 1 toward an OMA RLS (RFC 4662; docs/flows.md, "Lists toward the OMA side") whose XCAP
    /// server sits behind the proxy: the gateway PUTs Carol's rls-services document through it
    /// with Digest (RFC 4826), Kamailio's RLS reads the list and notifies John's and Mary's
    /// states, which reach Carol (6500 busy, 15500 away); the stop DELETEs the document, again
    /// authenticated.
    @Test func theGatewaysListIsWrittenThroughTheProxyAndUsed() async throws {
        let kamailio = try await RLSKamailio.start()
        defer { kamailio.stop() }
        let proxy = try await AggregationProxy.start(backend: kamailio.xcapPort, users: [Self.user: Self.password])
        defer { proxy.stop() }
        try await Self.withPasswordFile(Self.password) { directory in
            let yaml = """
                state: { store: memory }
                listen:
                  - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }
                  - { side: enterprise, transport: udp, address: 127.0.0.1, port: 0 }
                enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(try LoopbackPorts.free());transport=udp" }
                oma:
                  domains: [oma.example]
                  next-hop: "sip:127.0.0.1:\(kamailio.sipPort);transport=udp"
                  rls: { oma.example: "\(proxy.root)" }
                peers:
                  - { name: edge, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }
                  - { name: kamailio, address: 127.0.0.1, port: \(kamailio.sipPort), side: oma }
                presentities:
                  default:
                    defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
                subscriptions: { piggyback-wait-ms: 2000 }
                xcap-auth:
                  "\(proxy.root)": { username: "\(Self.user)", password-file: \(directory)/xcap-ap }
                """
            let registry = PrometheusCollectorRegistry()
            let server = try GatewayServer(configuration: try GatewayConfiguration(yaml: yaml), registry: registry)
            try await withCleanup {
                try await server.start()
                try await OMAResourceListPeerTests.publish("john", "busy", port: kamailio.sipPort)
                try await OMAResourceListPeerTests.publish("mary", "away", port: kamailio.sipPort)
                let enterprise = try #require(server.bound[.enterprise]?.first?.port)
                // Two resources: a batch, which becomes one list at the OMA RLS.
                let watcher = try await EnterpriseWatcher(
                    watcher: Self.carol, resources: [OMAResourceListPeerTests.john, OMAResourceListPeerTests.mary],
                    gatewayPort: UInt16(enterprise))
                #expect(watcher.subscribeStatus == 200)
                #expect(await watcher.sees(6500, for: OMAResourceListPeerTests.john, within: 10),
                        "\(watcher.transcript.joined(separator: "\n---\n"))")
                #expect(await watcher.sees(15500, for: OMAResourceListPeerTests.mary, within: 10),
                        "\(watcher.transcript.joined(separator: "\n---\n"))")
                let put = proxy.requests.filter { $0.method == "PUT" }
                #expect(put.contains { $0.user == Self.user && (200..<300).contains($0.status) && $0.path.contains("/rls-services/users/") },
                        "\(proxy.requests)")
                #expect(metricValue(registry, #"gateway_xcap_auth_failures_total{root="\#(proxy.root)"}"#) == 0)
                await server.stop(grace: .milliseconds(500))
                #expect(proxy.requests.contains { $0.method == "DELETE" && $0.user == Self.user && (200..<300).contains($0.status) },
                        "\(proxy.requests)")
            } cleanup: {
                await server.stop(grace: .zero)
            }
        }
    }
}
