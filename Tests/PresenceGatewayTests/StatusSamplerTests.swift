import Foundation
@testable import PresenceGateway
import Testing

/// The status page's sampler (``StatusSampler``): the registry's exposition read back, rates
/// between samples, quantiles from cumulative buckets, and the ring of the last 15 minutes. The
/// names are both today's and the per-side and per-peer ones README's "Metrics" lists.
@Suite struct StatusSamplerTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// An exposition as the binary renders it with the transport's and runtime's counters as they
    /// are named without a side (the gateway's counters summed over both faces).
    static func unlabelled(received: Int, notifies: Int, rejected: Int, refused: Int) -> String {
        """
        # TYPE sip_transport_messages_received counter
        sip_transport_messages_received{transport="udp"} \(received - 2)
        sip_transport_messages_received{transport="tcp"} 2
        # TYPE gateway_notifies_sent_total counter
        gateway_notifies_sent_total \(notifies)
        # TYPE gateway_requests_rejected_total counter
        gateway_requests_rejected_total \(rejected)
        # TYPE gateway_security_refusals_total counter
        gateway_security_refusals_total{reason="spoofed_origin"} \(refused)
        gateway_security_refusals_total{reason="open_relay"} 0
        # TYPE gateway_subscriptions_active gauge
        gateway_subscriptions_active{kind="winfo_watchers"} 3
        gateway_subscriptions_active{kind="enterprise_watchers"} 99
        """
    }

    @Test func aLineReadsWithItsLabelsEscapesAndTimestamp() {
        let text = #"""
            # HELP odd_total A "quoted" help line, skipped.
            odd_total{path="a\"b,c}",le="+Inf"} 7 1700000000000
            bare 2.5e3
            not a sample
            broken{x="unterminated} 1
            nan_gauge NaN
            """#
        let metrics = MetricsSnapshot(text: text)
        #expect(metrics.series["odd_total"] == [.init(labels: ["path": #"a"b,c}"#, "le": "+Inf"], value: 7)])
        #expect(metrics.total("bare") == 2500)
        #expect(metrics.total("broken") == nil && metrics.total("not") == nil)
        #expect(metrics.total("nan_gauge")?.isNaN == true)
        #expect(metrics.total("absent") == nil && metrics.totals("bare", by: "side") == nil)
    }

    @Test func ratesOfTodaysNamesAreTheDifferencesOverTheInterval() {
        let sampler = StatusSampler()
        let status = GatewayRuntime.Status(running: true, enterpriseWatches: 2, omaLegs: 2, omaWatches: 5, enterpriseLegs: 4)
        let first = sampler.record(
            metricsText: Self.unlabelled(received: 100, notifies: 10, rejected: 1, refused: 0), status: status, at: Self.t0)
        // Nothing to take a difference from yet: no rate, not a rate of 0.
        #expect(first.requestsPerSecond.isEmpty && first.notifiesPerSecond == nil && first.rejectionsPerSecond == nil)
        let second = sampler.record(
            metricsText: Self.unlabelled(received: 150, notifies: 35, rejected: 6, refused: 10), status: status,
            at: Self.t0.addingTimeInterval(5))
        #expect(second.requestsPerSecond == ["all": 10])
        #expect(second.notifiesPerSecond == 5 && second.rejectionsPerSecond == 1 && second.refusalsPerSecond == 2)
        // The runtime's counts win over the gauge; the kinds only the registry has are kept.
        #expect(second.subscriptions == [
            "enterprise_watchers": 2, "oma_legs": 2, "oma_watchers": 5, "enterprise_legs": 4, "winfo_watchers": 3,
        ])
        // No histogram, no latency; no pending-changes gauge (store: memory), none either.
        #expect(second.responseLatency == nil && second.relayLatency == nil && second.pendingChanges == nil)
    }

    @Test func seriesThatDoNotExistGiveNoDataNotZero() {
        let sampler = StatusSampler()
        sampler.record(metricsText: "gateway_notifies_sent_total 1\n", status: nil, at: Self.t0)
        let sample = sampler.record(metricsText: "gateway_notifies_sent_total 11\n", status: nil, at: Self.t0.addingTimeInterval(2))
        #expect(sample.notifiesPerSecond == 5)
        #expect(sample.requestsPerSecond.isEmpty && sample.rejectionsPerSecond == nil && sample.refusalsPerSecond == nil)
        #expect(sample.subscriptions.isEmpty)
    }

    /// Per side and peer, histograms in seconds: the names of README's "Metrics".
    static func labelled(enterprise: Int, oma: Int, fast: Int, slow: Int) -> String {
        var lines = [
            #"gateway_requests_received_total{side="enterprise",peer="edge"} \#(enterprise)"#,
            #"gateway_requests_received_total{side="oma",peer="kamailio"} \#(oma - 1)"#,
            #"gateway_requests_received_total{side="oma",peer="other"} 1"#,
            #"sip_transport_messages_received_total{side="oma",transport="udp"} 100000"#,
            #"gateway_notifies_sent_total{side="enterprise"} \#(fast)"#,
            #"gateway_notifies_sent_total{side="oma"} \#(slow)"#,
            #"gateway_state_pending_changes 7"#,
        ]
        // `fast` observations at 3 ms, `slow` at 300 ms, in cumulative buckets.
        for (le, bound) in [("0.001", 0.001), ("0.005", 0.005), ("0.1", 0.1), ("0.5", 0.5), ("+Inf", .infinity)] {
            let count = (bound >= 0.003 ? fast : 0) + (bound >= 0.3 ? slow : 0)
            lines.append(#"gateway_sip_response_seconds_bucket{side="oma",method="SUBSCRIBE",le="\#(le)"} \#(count)"#)
        }
        lines.append(#"gateway_sip_response_seconds_count{side="oma",method="SUBSCRIBE"} \#(fast + slow)"#)
        return lines.joined(separator: "\n")
    }

    @Test func perSideNamesGiveRatesBySideAndQuantilesOfTheIntervalOnly() throws {
        let sampler = StatusSampler()
        sampler.record(metricsText: Self.labelled(enterprise: 0, oma: 10, fast: 1000, slow: 1000), status: nil, at: Self.t0)
        // In the next 10 s: 100 fast and 1 slow answer. Since the start half were slow.
        let sample = sampler.record(
            metricsText: Self.labelled(enterprise: 50, oma: 30, fast: 1100, slow: 1001), status: nil,
            at: Self.t0.addingTimeInterval(10))
        // The request counters, not the transport's messages, which come second.
        #expect(sample.requestsPerSecond == ["enterprise": 5, "oma": 2])
        #expect(sample.notifiesPerSecond == 10.1)
        let latency = try #require(sample.responseLatency)
        #expect(latency.count == 101)
        // p50: rank 50.5 of the 100 in (1 ms, 5 ms]: 1 + 4 × 50.5/100 ms.
        #expect(abs(latency.p50 - 0.00302) < 1e-9)
        // p99: rank 99.99, still within (1 ms, 5 ms]; the slow one is the 101st.
        #expect(latency.p99 > 0.004 && latency.p99 <= 0.005)
        #expect(sample.relayLatency == nil && sample.pendingChanges == 7)
    }

    @Test func quantilesFollowHistogramQuantile() {
        typealias B = MetricsSnapshot.Bucket
        let buckets = [B(le: 0.1, count: 10), B(le: 0.2, count: 20), B(le: 1, count: 20), B(le: .infinity, count: 40)]
        #expect(MetricsSnapshot.quantile(0.25, of: buckets) == 0.1)
        #expect(abs((MetricsSnapshot.quantile(0.375, of: buckets) ?? 0) - 0.15) < 1e-12)
        // In +Inf: the largest finite bound, as Prometheus answers.
        #expect(MetricsSnapshot.quantile(0.99, of: buckets) == 1)
        #expect(MetricsSnapshot.quantile(0.5, of: [B(le: 1, count: 0), B(le: .infinity, count: 0)]) == nil)
        #expect(MetricsSnapshot.quantile(0.5, of: []) == nil)
    }

    @Test func aCounterThatFellCountsFromItsRestart() {
        let sampler = StatusSampler()
        sampler.record(metricsText: "gateway_requests_rejected_total 500\n", status: nil, at: Self.t0)
        let sample = sampler.record(metricsText: "gateway_requests_rejected_total 20\n", status: nil, at: Self.t0.addingTimeInterval(5))
        #expect(sample.rejectionsPerSecond == 4)
        let fell = MetricsSnapshot.difference(
            [.init(le: 1, count: 3), .init(le: .infinity, count: 4)], since: [.init(le: 1, count: 9), .init(le: .infinity, count: 9)])
        #expect(fell.map(\.count) == [3, 4])
    }

    @Test func theRingKeepsTheLastSamplesOldestFirst() {
        let sampler = StatusSampler(capacity: 3)
        for i in 0..<7 {
            sampler.record(metricsText: "gateway_notifies_sent_total \(i * 10)\n", status: nil, at: Self.t0.addingTimeInterval(Double(i)))
        }
        #expect(sampler.samples.map(\.time) == [4, 5, 6].map { Self.t0.addingTimeInterval($0) })
        #expect(sampler.samples.map(\.notifiesPerSecond) == [10, 10, 10])
        #expect(StatusSampler.capacity * Int(StatusSampler.interval.components.seconds) == 15 * 60)
    }
}
