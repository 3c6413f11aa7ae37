import Foundation
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing

/// The admin status page in a real browser: Debian's chromium, headless (scripts/setup.sh
/// installs it), loads `GET /` from the gateway on loopback, and the test reads what it rendered
/// (its DOM after parsing, and after its script has redrawn it from `/status.json`) and keeps a
/// screenshot. Set `STATUS_PAGE_SCREENSHOT=FILE` to keep the PNG for a look (docs/status-page.png
/// is the one of `thePageRedrawsRatesAndChartsFromStatusJSONWhileTrafficFlows`).
@Suite(.serialized) struct StatusPageBrowserTests {
    static var chromium: String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs headless chromium with `arguments` and the page address (at most 60 s); what it
    /// printed. Nothing but the loopback page is loaded: no first-run, sync or update traffic.
    static func chromium(_ arguments: [String], url: String) async throws -> String {
        let program = try #require(chromium, "chromium is not installed: run scripts/setup.sh")
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: profile) }
        let (status, output) = try await runProgram(program, [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
            "--user-data-dir=\(profile.path)", "--window-size=1280,900",
        ] + arguments + [url], timeout: 60)
        #expect(status == 0, "chromium exited with \(status): \(output.suffix(2000))")
        return output
    }

    @Test func theStatusPageRendersTheBridgedSubscriptionsAndPeers() async throws {
        // The browser sends no bearer token: the page is read as a loopback client without one.
        let gw = try await AdminAPITests.Gateway(token: nil)
        _ = try await gw.bridgeOMAWatcher()
        let url = "http://127.0.0.1:\(gw.admin)/"
        let dom = try await Self.chromium(["--dump-dom"], url: url)
        // What the browser built from the page: the headings, the watcher's row, the peers.
        #expect(dom.contains("<h1>PresenceGateway</h1>"))
        #expect(dom.contains("OMA watchers → enterprise presentities: 1"))
        #expect(dom.contains("Enterprise watchers → OMA presentities: 0"))
        #expect(dom.contains("sip:dave@oma.example") && dom.contains("sip:bob@contoso.com (active)"))
        #expect(dom.contains(">edge</td>") || dom.contains(" edge</td>"))
        let shot = ProcessInfo.processInfo.environment["STATUS_PAGE_SCREENSHOT"]
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("status-page-\(gw.admin).png").path
        _ = try await Self.chromium(["--screenshot=\(shot)"], url: url)
        let png = try Data(contentsOf: URL(fileURLWithPath: shot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000, "\(png.count) bytes")
        if ProcessInfo.processInfo.environment["STATUS_PAGE_SCREENSHOT"] == nil { try? FileManager.default.removeItem(atPath: shot) }
        await gw.stop()
    }

    /// The built binary between two bare UDP peers: OMA watchers subscribe to enterprise users
    /// through it for 40 s (each bridged: a SUBSCRIBE relayed, answered with the user's
    /// categories, a NOTIFY relayed back), with a request for a foreign domain refused between
    /// them. Once `/status.json` has a sample with NOTIFYs relayed, chromium loads `/` with
    /// virtual time for its script to fetch `/status.json` and draw: the DOM has the script's
    /// mark, non-zero rates in the tiles, and lines in the charts.
    @Test func thePageRedrawsRatesAndChartsFromStatusJSONWhileTrafficFlows() async throws {
        let binary = try #require(GatewayBinary.path, "presence-gateway was not built next to the tests")
        let kamailio = try LoopbackDatagramPeer(), edge = try LoopbackDatagramPeer()
        let (oma, enterprise, admin) = (try LoopbackPorts.free(), try LoopbackPorts.free(), try LoopbackPorts.free())
        let directory = NSTemporaryDirectory() + "status-page-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try """
            state: { store: memory }
            listen:
              - { side: oma, transport: udp, address: 127.0.0.1, port: \(oma) }
              - { side: enterprise, transport: udp, address: 127.0.0.1, port: \(enterprise) }
            enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(edge.port);transport=udp" }
            oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(kamailio.port);transport=udp" }
            peers:
              - { name: edge, address: 127.0.0.1, port: \(edge.port), side: enterprise, network: sameEnterprise, trusted: true }
              - { name: kamailio, address: 127.0.0.1, port: \(kamailio.port), side: oma }
            presentities:
              default:
                defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
            subscriptions: { piggyback-wait-ms: 300 }
            admin: { address: 127.0.0.1, port: \(admin) }
            """.write(toFile: directory + "/gateway.yaml", atomically: true, encoding: .utf8)
        let gateway = try ChildProcess(binary, ["--config", directory + "/gateway.yaml"], workingDirectory: directory)
        defer { _ = gateway.kill() }
        let started = Date().addingTimeInterval(30)
        while Date() < started, gateway.poll() == nil, !gateway.output.contains("admin endpoint on") {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        try #require(gateway.output.contains("admin endpoint on"), "\(gateway.output.suffix(3000))")

        // For the README's picture (STATUS_PAGE_SCREENSHOT), a minute of samples rather than two.
        let picture = ProcessInfo.processInfo.environment["STATUS_PAGE_SCREENSHOT"] != nil
        let traffic = Task {
            await Self.churn(kamailio: kamailio, edge: edge, oma: oma, enterprise: enterprise, seconds: picture ? 120 : 40,
                             pauses: picture)
        }
        defer { traffic.cancel() }
        let url = "http://127.0.0.1:\(admin)/"
        // The sampler samples every 5 s: wait for one with NOTIFYs relayed in its interval.
        var relayed = false
        for _ in 0..<60 where !relayed {
            try await Task.sleep(nanoseconds: 500_000_000)
            let (_, _, body) = try await loopbackHTTP(port: Int(admin), "GET", "/status.json")
            let json = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
            let last = (json?["samples"] as? [[String: Any]])?.last
            relayed = (last?["notifiesPerSecond"] as? Double ?? 0) > 0
        }
        try #require(relayed, "no sample with NOTIFYs relayed: \(gateway.output.suffix(2000))")

        let dom = try await Self.chromium(["--dump-dom", "--virtual-time-budget=4000"], url: url)
        // The script fetched /status.json and drew: its mark, the tiles' rates, the charts' lines.
        #expect(dom.contains(#"data-by="script""#), "\(dom.prefix(3000))")
        #expect((Self.tile("notifies", in: dom) ?? 0) > 0 && (Self.tile("requests", in: dom) ?? 0) > 0, "\(dom.prefix(3000))")
        #expect(Int(Self.text(of: "v-watchers", in: dom) ?? "") ?? 0 > 0)
        // Per side (gateway_requests_received_total{side}), and the response-time histogram's p99:
        // the gateway's SUBSCRIBEs to the edge were answered.
        #expect(Self.figure("requests", in: dom).contains("</span> oma"))
        #expect((Self.tile("response-p99", in: dom) ?? 0) > 0, "\(dom.prefix(3000))")
        for chart in ["requests", "notifies", "subscriptions", "latency"] {
            #expect(Self.figure(chart, in: dom).contains(#"class="line""#), "\(chart): \(Self.figure(chart, in: dom))")
        }
        #expect(dom.contains("Version \(GatewayVersion.version)") && dom.contains("memory, available"))
        #expect(dom.contains(">kamailio</td>") && dom.contains(">edge</td>"))

        let shot = ProcessInfo.processInfo.environment["STATUS_PAGE_SCREENSHOT"]
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("status-page-\(admin).png").path
        if picture { try await Task.sleep(nanoseconds: 60_000_000_000) }
        _ = try await Self.chromium(["--screenshot=\(shot)", "--virtual-time-budget=4000"], url: url)
        let png = try Data(contentsOf: URL(fileURLWithPath: shot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 20_000, "\(png.count) bytes")
        if ProcessInfo.processInfo.environment["STATUS_PAGE_SCREENSHOT"] == nil { try? FileManager.default.removeItem(atPath: shot) }
        traffic.cancel()
        await traffic.value
        #expect(await gateway.terminate() == 0)
    }

    /// The text of the element with `id` in `dom`, up to its first tag.
    static func text(of id: String, in dom: String) -> String? {
        guard let start = dom.range(of: "id=\"\(id)\"") else { return nil }
        let after = dom[start.upperBound...].drop { $0 != ">" }.dropFirst()
        return String(after.prefix { $0 != "<" })
    }

    static func tile(_ id: String, in dom: String) -> Double? { text(of: "v-\(id)", in: dom).flatMap(Double.init) }

    /// The markup inside `<figure id="chart-…">`.
    static func figure(_ id: String, in dom: String) -> String {
        guard let start = dom.range(of: "<figure id=\"chart-\(id)\">"),
              let end = dom[start.upperBound...].range(of: "</figure>") else { return "" }
        return String(dom[start.upperBound..<end.lowerBound])
    }

    /// For `seconds` or until cancelled: OMA watcher `dave<n>` subscribes through the gateway to
    /// `user<n>@contoso.com`, the edge answers the gateway's SUBSCRIBE with the user online
    /// (its categories, [MS-PRES] §3.4.5.1.1), kamailio answers the NOTIFYs; after each, a
    /// SUBSCRIBE for a domain the gateway does not serve, which it refuses. With `pauses`, 4 s of
    /// silence every 20 watchers.
    static func churn(kamailio: LoopbackDatagramPeer, edge: LoopbackDatagramPeer, oma: UInt16, enterprise: UInt16,
                      seconds: Double, pauses: Bool = false) async {
        let end = Date().addingTimeInterval(seconds)
        var n = 0
        while Date() < end, !Task.isCancelled {
            n += 1
            for (user, domain) in [("user\(n)", "contoso.com"), ("nobody\(n)", "elsewhere.example")] {
                kamailio.send("""
                    SUBSCRIBE sip:\(user)@\(domain) SIP/2.0
                    Via: SIP/2.0/UDP \(kamailio.hostPort);branch=z9hG4bKsp\(n)\(domain.prefix(2));rport
                    Max-Forwards: 70
                    From: <sip:dave\(n)@oma.example>;tag=sp\(n)
                    To: <sip:\(user)@\(domain)>
                    Call-ID: sp\(n)\(domain.prefix(2))@oma
                    CSeq: 1 SUBSCRIBE
                    Contact: <sip:dave\(n)@\(kamailio.hostPort)>
                    Event: presence
                    Accept: application/pidf+xml
                    Expires: 600

                    """, to: oma)
            }
            guard let leg = await edge.request(.subscribe, within: 3) else { continue }
            let state = CategoriesDocument(uri: "sip:user\(n)@contoso.com", categories: [
                Category(name: .state, instance: 1, publishTime: "2026-11-25T10:00:00.000",
                         payload: .state(MSState(type: .aggregateState, availability: 3500))),
            ])
            let body = BatchSubscribeResponse(list: RLMIList(uri: "sip:dave\(n)@oma.example"), categories: [state])
                .multipart(boundary: "b7").bytes
            edge.answer(leg, to: enterprise, toTag: "edge\(n)", extra: """
                Expires: 600
                Event: presence
                Subscription-State: active;expires=600
                ms-piggyback-cseq: 1
                Content-Type: multipart/related; type="application/rlmi+xml"; start=\(BatchSubscribeResponse.rlmiContentID); boundary=b7

                """, body: body)
            for notify in await kamailio.receive(for: 0.4).compactMap(\.request) where notify.method == .notify {
                kamailio.answer(notify, to: oma)
            }
            // For the picture, a quieter stretch now and then, as real traffic has.
            if pauses, n % 20 == 0 { try? await Task.sleep(nanoseconds: 4_000_000_000) }
        }
    }
}
