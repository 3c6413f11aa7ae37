import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import Prometheus
import SIPMessages
import Testing

/// The admin API over real sockets (README, "Runtime control"): the gateway in process on UDP
/// listeners with its configuration in a file, the OMA server and the enterprise edge as bare
/// UDP sockets, and HTTP requests on the admin port.
@Suite(.serialized) struct AdminAPITests {
    final class Gateway: @unchecked Sendable {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let registry = PrometheusCollectorRegistry()
        let server: GatewayServer
        let kamailio: LoopbackDatagramPeer
        let edge: LoopbackDatagramPeer
        let oma: UInt16
        let admin: Int
        let file: URL
        /// The NOTIFYs ``bridgeOMAWatcher(accept:)`` received.
        var bridgedNotifies: [SIPRequest] = []

        static func yaml(kamailio: UInt16, edge: UInt16, token: String?, presentities: String = "", extra: String = "") -> String {
            """
            state: { store: memory }
            listen:
              - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }
              - { side: enterprise, transport: udp, address: 127.0.0.1, port: 0 }
            enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(edge);transport=udp" }
            oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(kamailio);transport=udp" }
            peers:
              - { name: edge, address: 127.0.0.1, port: \(edge), side: enterprise, network: sameEnterprise, trusted: true }
              - { name: kamailio, address: 127.0.0.1, port: \(kamailio), side: oma }
            presentities:
              default:
                defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
            \(presentities)
            subscriptions: { piggyback-wait-ms: 300 }
            admin: { address: 127.0.0.1, port: 0\(token.map { ", token: \($0)" } ?? "") }
            \(extra)
            """
        }

        /// The token the tests' gateways have unless a test says otherwise: state-changing
        /// requests need one (docs/security.md, "The admin endpoint").
        static let testToken = "test-admin-token-0123456789"
        let token: String?

        /// `presentities` and `extra` as ``yaml(kamailio:edge:token:presentities:extra:)`` takes them.
        init(token: String? = Gateway.testToken, presentities: String = "", extra: String = "") async throws {
            self.token = token
            kamailio = try LoopbackDatagramPeer()
            edge = try LoopbackDatagramPeer()
            file = FileManager.default.temporaryDirectory.appendingPathComponent("admin-api-\(UInt32.random(in: 0...UInt32.max)).yaml")
            let text = Self.yaml(kamailio: kamailio.port, edge: edge.port, token: token, presentities: presentities, extra: extra)
            try text.write(to: file, atomically: true, encoding: .utf8)
            server = try GatewayServer(configuration: try GatewayConfiguration(yaml: text), configurationFile: file.path,
                                       registry: registry, eventLoop: group.next())
            try await server.startRunning()
            oma = UInt16(server.bound[.oma]?.first?.port ?? 0)
            admin = try #require(server.adminAddress?.port)
        }

        func stop() async {
            await server.stop(grace: .milliseconds(200))
            try? FileManager.default.removeItem(at: file)
            try? await group.shutdownGracefully()
        }

        func metric(_ series: String) -> Double? { metricValue(registry, series) }

        /// One HTTP/1.1 request to the admin port, with the gateway's token unless `authorized` is
        /// false or `headers` carry an Authorization of their own; the status and the body.
        func http(_ method: String, _ path: String, body: String = "", headers: [String] = [], authorized: Bool = true,
                  host: String = "127.0.0.1") async throws -> (Int, String) {
            var headers = headers
            if authorized, let token, !headers.contains(where: { $0.lowercased().hasPrefix("authorization:") }) {
                headers.append("Authorization: Bearer \(token)")
            }
            let answer = try await loopbackHTTP(port: admin, method, path, body: body, headers: headers, host: host)
            return (answer.status, answer.body)
        }

        func json(_ method: String, _ path: String, body: String = "", headers: [String] = []) async throws -> (Int, [String: Any]) {
            let (status, text) = try await http(method, path, body: body, headers: headers)
            let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            return (status, try #require(object, "not a JSON object: \(text)"))
        }

        /// Carol (or `user`), behind the edge, subscribes to the OMA `resource` with a batched
        /// category SUBSCRIBE for its state ([MS-PRES] §3.4.5.1.1, the §4.5 headers) in dialog `callID`.
        func carolSubscribes(to resource: String, callID: String, as user: String = "carol") {
            let batch = """
                <batchSub xmlns="http://schemas.microsoft.com/2006/01/sip/batch-subscribe" uri="sip:\(user)@contoso.com" name=""><action name="subscribe" id="1">\
                <adhocList><resource uri="\(resource)"/></adhocList><categoryList xmlns="http://schemas.microsoft.com/2006/09/sip/categorylist">\
                <category name="state"/></categoryList></action></batchSub>
                """
            edge.send("""
                SUBSCRIBE sip:\(user)@contoso.com SIP/2.0
                Via: SIP/2.0/UDP \(edge.hostPort);branch=z9hG4bK\(callID);rport
                Max-Forwards: 70
                From: <sip:\(user)@contoso.com>;tag=\(callID);epid=5e434f57d3
                To: <sip:\(user)@contoso.com>
                Call-ID: \(callID)@contoso
                CSeq: 1 SUBSCRIBE
                Contact: <sip:\(user)@\(edge.hostPort);transport=udp>
                Event: presence
                Accept: application/msrtc-event-categories+xml, application/rlmi+xml, multipart/related
                Supported: ms-benotify, ms-piggyback-first-notify, eventlist
                Require: adhoclist, categoryList
                Expires: 600
                Content-Type: application/msrtc-adrl-categorylist+xml

                """, body: Array(batch.utf8), to: UInt16(server.bound[.enterprise]?.first?.port ?? 0))
        }

        /// OMA watcher dave@oma.example subscribes to bob@contoso.com; the edge answers the
        /// gateway's SUBSCRIBE with bob online, the watcher gets its answer and first NOTIFY.
        /// Returns the watcher's To tag and the gateway's SUBSCRIBE into the enterprise; the
        /// NOTIFYs the watcher got are in ``bridgedNotifies``.
        func bridgeOMAWatcher(accept: String = "application/pidf+xml") async throws -> (toTag: String, leg: SIPRequest) {
            kamailio.send("""
                SUBSCRIBE sip:bob@contoso.com SIP/2.0
                Via: SIP/2.0/UDP \(kamailio.hostPort);branch=z9hG4bKad1;rport
                Max-Forwards: 70
                From: <sip:dave@oma.example>;tag=ad1
                To: <sip:bob@contoso.com>
                Call-ID: ad1@oma
                CSeq: 1 SUBSCRIBE
                Contact: <sip:dave@\(kamailio.hostPort)>
                Event: presence
                Accept: \(accept)
                Expires: 600

                """, to: oma)
            let leg = try #require(await edge.request(.subscribe, within: 5))
            let state = CategoriesDocument(uri: "sip:bob@contoso.com", categories: [
                Category(name: .state, instance: 1, publishTime: "2026-11-25T10:00:00.000",
                         payload: .state(MSState(type: .aggregateState, availability: 3500))),
            ])
            let body = BatchSubscribeResponse(list: RLMIList(uri: "sip:dave@oma.example"), categories: [state]).multipart(boundary: "b7").bytes
            edge.answer(leg, to: UInt16(server.bound[.enterprise]?.first?.port ?? 0), toTag: "edge7", extra: """
                Expires: 600
                Event: presence
                Subscription-State: active;expires=600
                ms-piggyback-cseq: 1
                Content-Type: multipart/related; type="application/rlmi+xml"; start=\(BatchSubscribeResponse.rlmiContentID); boundary=b7

                """, body: body)
            let answers = await kamailio.receive(for: 1)
            for notify in answers.compactMap(\.request) where notify.method == .notify {
                kamailio.answer(notify, to: oma)
                bridgedNotifies.append(notify)
            }
            let ok = try #require(answers.compactMap(\.response).first { $0.statusCode == 200 })
            return (try #require(try ok.headers.to?.tag), leg)
        }
    }

    @Test func subscriptionsPeersAndEndingOneOverHTTP() async throws {
        let gw = try await Gateway()
        let (_, leg) = try await gw.bridgeOMAWatcher()
        let (status, page) = try await gw.json("GET", "/subscriptions?side=oma&limit=10")
        #expect(status == 200)
        #expect(page["total"] as? Int == 1 && page["offset"] as? Int == 0 && page["limit"] as? Int == 10)
        let first = try #require((page["subscriptions"] as? [[String: Any]])?.first)
        #expect(first["watcher"] as? String == "sip:dave@oma.example")
        #expect(first["state"] as? String == "active" && first["format"] as? String == "application/pidf+xml")
        let resource = try #require((first["resources"] as? [[String: Any]])?.first)
        #expect(resource["uri"] as? String == "sip:bob@contoso.com")
        #expect((resource["leg"] as? [String: Any])?["callID"] as? String == leg.headers.callID)
        let id = try #require(first["id"] as? String)
        // Pages and filters.
        #expect((try await gw.json("GET", "/subscriptions?offset=1").1["subscriptions"] as? [Any])?.isEmpty == true)
        #expect(try await gw.json("GET", "/subscriptions?uri=sip%3Abob%40contoso.com").1["total"] as? Int == 1)
        #expect(try await gw.json("GET", "/subscriptions?side=enterprise").1["total"] as? Int == 0)

        // The peers: the edge answered the gateway's SUBSCRIBE, kamailio sent two requests.
        let (peersStatus, peers) = try await gw.json("GET", "/peers")
        #expect(peersStatus == 200)
        let list = try #require(peers["peers"] as? [[String: Any]])
        let edge = try #require(list.first { $0["name"] as? String == "edge" })
        #expect(edge["lastSuccess"] is String && edge["lastFailure"] == nil)
        let kamailio = try #require(list.first { $0["name"] as? String == "kamailio" })
        #expect(kamailio["requests"] as? Int == 1 && kamailio["rejections"] as? Int == 0)
        #expect(kamailio["requestsPerSecond"] is Double && kamailio["rejectionsPerSecond"] is Double)

        // An unknown id is a JSON 404; the real one ends with a final NOTIFY and an unsubscribe.
        let (missing, error) = try await gw.json("DELETE", "/subscriptions/o4242")
        #expect(missing == 404 && (error["error"] as? String)?.contains("o4242") == true)
        let (ended, answer) = try await gw.json("DELETE", "/subscriptions/\(id)", body: #"{"reason": "rejected"}"#)
        #expect(ended == 200 && answer["ended"] as? String == id)
        let final = try #require(await gw.kamailio.request(.notify, within: 5))
        #expect(try final.headers.subscriptionState?.state == .terminated && final.headers.subscriptionState?.reason == "rejected")
        let unsubscribe = try #require(await gw.edge.first(within: 5) { $0.request?.headers.callID == leg.headers.callID }?.request)
        #expect(try unsubscribe.headers.expires == 0)

        // The status page lists the same in HTML.
        let (pageStatus, html) = try await gw.http("GET", "/")
        #expect(pageStatus == 200 && html.contains("<h1>PresenceGateway</h1>") && html.contains("kamailio"))
        await gw.stop()
    }

    /// `GET /status.json`: what the status page draws, from the sampler's first sample (taken at
    /// the start) and the runtime's counts.
    @Test func statusJSONGivesVersionUptimeStoreCountsPeersAndSamples() async throws {
        let gw = try await Gateway()
        _ = try await gw.bridgeOMAWatcher()
        try await Task.sleep(nanoseconds: 300_000_000)
        let (status, report) = try await gw.json("GET", "/status.json")
        #expect(status == 200)
        #expect(report["version"] as? String == GatewayVersion.version && report["swift"] as? String == GatewayVersion.swift)
        #expect(report["startedAt"] is String && (report["uptimeSeconds"] as? Int ?? -1) >= 0)
        #expect(report["sampleIntervalSeconds"] as? Int == 5)
        let store = try #require(report["store"] as? [String: Any])
        #expect(store["kind"] as? String == "memory" && store["available"] as? Bool == true && store["location"] == nil)
        let counts = try #require(report["counts"] as? [String: Any])
        #expect(counts["omaWatchers"] as? Int == 1 && counts["enterpriseLegs"] as? Int == 1 && counts["running"] as? Bool == true)
        let peers = try #require(report["peers"] as? [[String: Any]])
        #expect(Set(peers.compactMap { $0["name"] as? String }).isSuperset(of: ["edge", "kamailio"]))
        // The first sample is taken as the gateway starts; it has no rate yet, and the counts.
        let samples = try #require(report["samples"] as? [[String: Any]])
        #expect(samples.count >= 1 && samples.first?["time"] is String && samples.first?["notifiesPerSecond"] == nil)
        #expect((samples.first?["subscriptions"] as? [String: Int])?["oma_watchers"] != nil)
        #expect(try await gw.http("POST", "/status.json").0 == 405)
        await gw.stop()
    }

    @Test func badRequestsGetAClearJSONError() async throws {
        let gw = try await Gateway()
        for (method, path, body, expected) in [
            ("DELETE", "/subscriptions/o1", "{not json", 400),
            ("DELETE", "/subscriptions/o1", #"{"reason": "because"}"#, 400),
            ("DELETE", "/subscriptions/o1", String(repeating: "x", count: 5000), 413),
            ("GET", "/subscriptions?limit=0", "", 400),
            ("GET", "/subscriptions?side=moon", "", 400),
            ("PUT", "/peers", "", 405),
            ("GET", "/nothing", "", 404),
            ("POST", "/reload", "[1, 2", 400),
        ] {
            let (status, text) = try await gw.http(method, path, body: body)
            #expect(status == expected, "\(method) \(path)")
            let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            #expect(object?["error"] is String, "\(method) \(path): \(text)")
        }
        // /metrics and /health are as before.
        #expect(try await gw.http("GET", "/health").0 == 200)
        await gw.stop()
    }

    @Test func aTokenIsRequiredWhenConfigured() async throws {
        let gw = try await Gateway(token: "s3cret-token-0123456789")
        #expect(try await gw.http("GET", "/peers", authorized: false).0 == 401)
        #expect(try await gw.http("GET", "/peers", headers: ["Authorization: Bearer wrong-token-0123456789"]).0 == 401)
        #expect(try await gw.http("GET", "/peers", headers: ["Authorization: Bearer s3cret-token-0123456789"]).0 == 200)
        // The status page and its JSON as well: a browser sends no token (README, "Runtime control").
        #expect(try await gw.http("GET", "/status.json", authorized: false).0 == 401)
        #expect(try await gw.http("GET", "/", authorized: false).0 == 401)
        #expect(try await gw.http("GET", "/status.json", headers: ["Authorization: Bearer s3cret-token-0123456789"]).0 == 200)
        // Metrics and health stay open to the scraper.
        #expect(try await gw.http("GET", "/metrics").0 == 200)
        await gw.stop()
    }

    /// A web page in the operator's browser reaches 127.0.0.1 too: through a name rebound to it
    /// (its Host is that name) or by a cross-site form or fetch (its Origin is the page's). Neither
    /// lists, ends or reloads anything; without a token nothing changes the gateway at all.
    @Test func aWebPageCannotUseTheAdminAPI() async throws {
        let gw = try await Gateway(token: nil)
        let (_, leg) = try await gw.bridgeOMAWatcher()
        for (method, path) in [("GET", "/subscriptions"), ("GET", "/"), ("GET", "/status.json"), ("POST", "/reload"),
                               ("DELETE", "/subscriptions/o1")] {
            #expect(try await gw.http(method, path, host: "evil.example:\(gw.admin)").0 == 421, "\(method) \(path)")
            #expect(try await gw.http(method, path, headers: ["Origin: http://evil.example"]).0 == 403, "\(method) \(path)")
            #expect(try await gw.http(method, path, headers: ["Origin: null"]).0 == 403, "\(method) \(path)")
        }
        // Without a token nothing that changes the gateway is taken, even from loopback.
        let (_, listed) = try await gw.json("GET", "/subscriptions?side=oma")
        let subscriptions = try #require(listed["subscriptions"] as? [[String: Any]])
        let id = try #require(subscriptions.first?["id"] as? String)
        #expect(try await gw.http("DELETE", "/subscriptions/\(id)").0 == 403)
        #expect(try await gw.http("POST", "/reload").0 == 403)
        // The operator's own tools: an IP literal, localhost, the page's own origin. The
        // subscription is still there.
        let (status, page) = try await gw.json("GET", "/subscriptions?side=oma")
        #expect(status == 200 && (page["total"] as? Int) == 1)
        #expect(try await gw.http("GET", "/peers", host: "localhost:\(gw.admin)").0 == 200)
        #expect(try await gw.http("GET", "/peers", headers: ["Origin: http://127.0.0.1"]).0 == 200)
        // The status page's script fetches /status.json from the page's own origin, port included.
        #expect(try await gw.http("GET", "/status.json", headers: ["Origin: http://127.0.0.1:\(gw.admin)"],
                                  host: "127.0.0.1:\(gw.admin)").0 == 200)
        #expect(await gw.edge.receive(for: 0.3).compactMap(\.request).allSatisfy { $0.headers[.expires] != "0" },
                "the leg \(leg.headers.callID ?? "") was unsubscribed")
        await gw.stop()
    }

    @Test func aReloadAppliesPolicyWithoutDroppingADialogAndAnInvalidFileChangesNothing() async throws {
        let gw = try await Gateway()
        let (toTag, leg) = try await gw.bridgeOMAWatcher()
        // An invalid file: refused with its line and column, the running configuration stays.
        try "listen: [\n  - { side: moon }\n".write(to: gw.file, atomically: true, encoding: .utf8)
        let (refused, error) = try await gw.json("POST", "/reload")
        #expect(refused == 400)
        #expect((error["error"] as? String)?.hasPrefix("\(gw.file.path):2:") == true, "\(error)")
        // A valid one with a new rate limit for kamailio and a new presentity: applied.
        let text = Gateway.yaml(kamailio: gw.kamailio.port, edge: gw.edge.port, token: nil, presentities: """
              "sip:carol@oma.example":
                defaults: { sameEnterprise: polite-block, federated: allow, publicCloud: polite-block }
            """).replacingOccurrences(of: "side: oma }", with: "side: oma, rate-limit: 100 }")
        try text.write(to: gw.file, atomically: true, encoding: .utf8)
        let (applied, answer) = try await gw.json("POST", "/reload", body: "{}")
        #expect(applied == 200, "\(answer)")
        #expect(gw.server.configuration.peers.first { $0.name == "kamailio" }?.rateLimit == 100)
        #expect(gw.server.configuration.policies["sip:carol@oma.example"] != nil)
        // The bridged pair lives on: the edge's BENOTIFY reaches the watcher in its dialog.
        #expect(gw.server.status?.omaWatches == 1 && gw.server.status?.enterpriseLegs == 1)
        let (benotify, body) = try Self.benotify(gw, in: leg, cseq: 2, availability: 15500)
        gw.edge.send(benotify, body: body, to: UInt16(gw.server.bound[.enterprise]?.first?.port ?? 0))
        let relayed = try #require(await gw.kamailio.request(.notify, within: 5))
        #expect(try relayed.headers.to?.tag == "ad1" && relayed.headers.callID == "ad1@oma" && (try relayed.headers.from?.tag) == toTag)
        #expect(String(decoding: relayed.body, as: UTF8.self).contains("away"))
        await gw.stop()
    }

    /// A BENOTIFY from the edge in `leg`'s dialog with bob at `availability`.
    static func benotify(_ gw: Gateway, in leg: SIPRequest, cseq: Int, availability: UInt32) throws -> (String, [UInt8]) {
        let document = CategoriesDocument(uri: "sip:bob@contoso.com", categories: [
            Category(name: .state, instance: 1, publishTime: "2026-11-25T10:05:00.000",
                     payload: .state(MSState(type: .aggregateState, availability: availability))),
        ])
        return try benotify(gw, in: leg, cseq: cseq, body: document.serialized())
    }

    /// A BENOTIFY from the edge in `leg`'s dialog carrying the categories `body`.
    static func benotify(_ gw: Gateway, in leg: SIPRequest, cseq: Int, body: [UInt8]) throws -> (String, [UInt8]) {
        let from = try #require(try leg.headers.from)
        return ("""
            BENOTIFY sip:gateway@127.0.0.1 SIP/2.0
            Via: SIP/2.0/UDP \(gw.edge.hostPort);branch=z9hG4bKld\(cseq);rport
            Max-Forwards: 70
            From: <sip:bob@contoso.com>;tag=edge7
            To: <\(from.uri)>;tag=\(from.tag ?? "")
            Call-ID: \(leg.headers.callID ?? "")
            CSeq: \(cseq) BENOTIFY
            Event: presence
            Subscription-State: active;expires=600
            Content-Type: application/msrtc-event-categories+xml

            """, body)
    }

    @Test func aReloadUnderLoadLosesNoNotificationAndNoDialog() async throws {
        let gw = try await Gateway()
        let (_, leg) = try await gw.bridgeOMAWatcher()
        let enterprise = UInt16(gw.server.bound[.enterprise]?.first?.port ?? 0)
        // 1,000 state changes at 400 a second (bounded: 2.5 s), each relayed as one NOTIFY to the
        // watcher, while the configuration is reloaded ten times (a presentity's policy toggled).
        let changes = 1000
        let sent = NIOLockedValueBox<Date?>(nil)
        let watcher = Task.detached { () -> Set<Int> in
            var seen = Set<Int>()
            // Until all arrived, or 10 s after the last change was sent.
            while seen.count < changes, sent.withLockedValue({ $0.map { Date().timeIntervalSince($0) < 10 } ?? true }) {
                for notify in await gw.kamailio.receive(for: 0.1).compactMap(\.request) where notify.method == .notify {
                    gw.kamailio.answer(notify, to: gw.oma)
                    if let cseq = try? notify.headers.cseq?.sequence { seen.insert(Int(cseq)) }
                }
            }
            return seen
        }
        var reloads: [Int] = []
        let start = Date()
        for n in 0..<changes {
            let (text, body) = try Self.benotify(gw, in: leg, cseq: 10 + n, availability: n % 2 == 0 ? 15500 : 3500)
            gw.edge.send(text, body: body, to: enterprise)
            if n % 100 == 50 {
                let policy = n % 200 == 50 ? "allow" : "polite-block"
                try Gateway.yaml(kamailio: gw.kamailio.port, edge: gw.edge.port, token: nil, presentities: """
                      "sip:carol@oma.example":
                        defaults: { sameEnterprise: \(policy), federated: allow, publicCloud: polite-block }
                    """).write(to: gw.file, atomically: true, encoding: .utf8)
                reloads.append(try await gw.http("POST", "/reload").0)
            }
            let due = start.addingTimeInterval(Double(n + 1) / 400)
            if due > Date() { try await Task.sleep(nanoseconds: UInt64(due.timeIntervalSinceNow * 1e9)) }
        }
        sent.withLockedValue { $0 = Date() }
        let seen = await watcher.value
        #expect(reloads == Array(repeating: 200, count: 10))
        #expect(seen.count == changes, "\(changes - seen.count) of \(changes) notifications lost")
        #expect(gw.server.status?.omaWatches == 1 && gw.server.status?.enterpriseLegs == 1)
        await gw.stop()
    }
}
