import Foundation
@testable import PresenceGateway
import Testing

/// The status page (`GET /`) as the gateway renders it, before its script runs: the header,
/// the tiles of the last sample and the charts (inline SVG) of ``StatusSampler``'s samples.
@Suite struct StatusPageTests {
    static let t0 = StatusSamplerTests.t0

    static func unlabelled(received: Int, notifies: Int, rejected: Int, refused: Int) -> String {
        StatusSamplerTests.unlabelled(received: received, notifies: notifies, rejected: rejected, refused: refused)
    }

    @Test func thePageDrawsAChartPerSeriesAndNoDataWithoutSamples() {
        let sampler = StatusSampler()
        for i in 0..<4 {
            sampler.record(
                metricsText: Self.unlabelled(received: 100 + 20 * i, notifies: 5 * i, rejected: 0, refused: 0),
                status: GatewayRuntime.Status(running: true, enterpriseWatches: i, omaLegs: 0, omaWatches: 1, enterpriseLegs: 1),
                at: Self.t0.addingTimeInterval(Double(5 * i)))
        }
        let report = GatewayStatusReport(
            startedAt: Self.t0.addingTimeInterval(-3725), now: Self.t0.addingTimeInterval(15),
            store: .sqlite(path: "state/<gw>.db", synchronous: .full),
            status: GatewayRuntime.Status(running: true, enterpriseWatches: 3, omaLegs: 0, omaWatches: 1, enterpriseLegs: 1),
            samples: sampler.samples)
        let html = AdminAPI.page([:], [], report: report, at: Self.t0)
        #expect(report.uptimeSeconds == 3740 && html.contains(#"<span id="uptime">1 h 2 min 20 s</span>"#))
        #expect(html.contains("sqlite state/&lt;gw&gt;.db, available"))
        // Requests, NOTIFYs and subscriptions have lines; no latency histogram: no data.
        func figure(_ id: String) -> String {
            guard let start = html.range(of: #"<figure id="chart-\#(id)">"#),
                  let end = html[start.upperBound...].range(of: "</figure>") else { return "" }
            return String(html[start.upperBound..<end.lowerBound])
        }
        for id in ["requests", "notifies", "subscriptions"] {
            #expect(figure(id).contains(#"class="line""#), "\(id)")
        }
        let latency = figure("latency")
        #expect(latency.contains("no data yet") && !latency.contains(#"class="line""#))
        #expect(html.contains(#"<div class="v" id="v-requests">4.00</div>"#))
        #expect(html.contains(#"<div class="v" id="v-notifies">1.00</div>"#))
        #expect(html.contains(#"<noscript><meta http-equiv="refresh""#) && html.contains("fetch('status.json'"))
        let empty = AdminAPI.chart([.init(label: "x", color: "#000", values: [])], times: [])
        #expect(empty.contains("no data yet"))
    }
}
