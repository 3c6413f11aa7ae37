public import Foundation
import NIOConcurrencyHelpers

/// The time series of the status page (`GET /`, `GET /status.json`): every ``interval`` it reads
/// the Prometheus registry's text and the runtime's published ``GatewayRuntime/Status`` (both
/// thread-safe copies; nothing of the core is walked, so a sample costs the same with ten
/// dialogs or a million) and keeps the last ``capacity`` samples (15 minutes) in a ring.
///
/// It runs as a piece of ``GatewayServer``'s ``BackgroundWork``, off the relay loop. A rate is
/// the difference of a counter between two samples over the time between them; a series the
/// registry does not have gives nil ("no data"), not 0. The names read, the current ones first
/// (README, "Metrics"), then the older ones:
///
/// - requests per side: `gateway_requests_received_total{side}`, else
///   `sip_transport_messages_received_total{side}` (messages, responses included), else
///   `sip_transport_messages_received` for both sides together (side `all`);
/// - NOTIFYs relayed: `gateway_notifies_sent_total` (every side summed);
/// - rejections: `gateway_requests_rejected_total`; refusals `gateway_security_refusals_total`;
/// - active subscriptions: `gateway_subscriptions_active{kind}`, the four kinds of the runtime's
///   status taken from it;
/// - latencies, when the histograms exist: p50 and p99 of the observations between two samples
///   of `gateway_sip_response_seconds` (a request sent to its final response) and
///   `gateway_notification_relay_seconds` (a notification in to the mapped one out), from their
///   cumulative `_bucket{le}` series;
/// - `gateway_state_pending_changes`: changes waiting for the store.
public final class StatusSampler: Sendable {
    /// One sample: rates over the interval before ``time``, gauges at it.
    public struct Sample: Sendable, Codable, Equatable {
        public var time: Date
        /// Requests received per second, by side (`enterprise`, `oma`, or `all`).
        public var requestsPerSecond: [String: Double]
        public var notifiesPerSecond: Double?
        public var rejectionsPerSecond: Double?
        public var refusalsPerSecond: Double?
        /// Active subscriptions by kind (`enterprise_watchers`, `oma_legs`, …).
        public var subscriptions: [String: Int]
        public var responseLatency: Latency?
        public var relayLatency: Latency?
        public var pendingChanges: Int?
    }

    /// Quantiles of a latency histogram over one interval, in seconds.
    public struct Latency: Sendable, Codable, Equatable {
        public var p50: Double
        public var p99: Double
        /// Observations in the interval.
        public var count: Int
    }

    /// Between two samples: 5 seconds.
    public static let interval: Duration = .seconds(5)
    /// Samples kept: 15 minutes of them.
    public static let capacity = 180

    static let requestNames = [
        "gateway_requests_received_total", "sip_transport_messages_received_total",
        "sip_transport_messages_received",
    ]
    static let histograms = ["gateway_sip_response_seconds", "gateway_notification_relay_seconds"]
    static let names: Set<String> = Set(
        requestNames + histograms + [
            "gateway_notifies_sent_total", "gateway_requests_rejected_total", "gateway_security_refusals_total",
            "gateway_subscriptions_active", "gateway_state_pending_changes",
        ])

    private struct State {
        var ring: [Sample] = []
        /// Where the next sample goes once the ring is full.
        var next = 0
        var previous: (time: Date, metrics: MetricsSnapshot)?
    }

    private let state = NIOLockedValueBox(State())
    private let capacity: Int

    public init(capacity: Int = StatusSampler.capacity) {
        self.capacity = max(1, capacity)
    }

    /// The samples kept, oldest first.
    public var samples: [Sample] {
        state.withLockedValue { $0.ring.count < capacity ? $0.ring : Array($0.ring[$0.next...] + $0.ring[..<$0.next]) }
    }

    /// Takes one sample of `metricsText` (the registry's exposition) and `status` at `now`, keeps
    /// it, and returns it.
    @discardableResult
    public func record(metricsText: String, status: GatewayRuntime.Status?, at now: Date) -> Sample {
        let metrics = MetricsSnapshot(text: metricsText, keeping: Self.names)
        return state.withLockedValue { state in
            let sample = Self.sample(metrics, status: status, at: now, previous: state.previous)
            state.previous = (now, metrics)
            if state.ring.count < capacity {
                state.ring.append(sample)
            } else {
                state.ring[state.next] = sample
                state.next = (state.next + 1) % capacity
            }
            return sample
        }
    }

    /// Samples every ``interval`` from `read` (the registry's text and the runtime's status)
    /// until cancelled; the first at once.
    public func run(
        every interval: Duration = StatusSampler.interval, read: @Sendable () -> (String, GatewayRuntime.Status?)
    )
        async
    {
        while !Task.isCancelled {
            let (text, status) = read()
            record(metricsText: text, status: status, at: Date())
            try? await Task.sleep(for: interval)
        }
    }

    /// The sample of `metrics` at `now` after `previous`.
    static func sample(
        _ metrics: MetricsSnapshot, status: GatewayRuntime.Status?, at now: Date,
        previous: (time: Date, metrics: MetricsSnapshot)?
    ) -> Sample {
        let seconds = previous.map { now.timeIntervalSince($0.time) } ?? 0
        func rate(_ now: Double?, _ before: Double?) -> Double? {
            guard let now, let before, seconds > 0 else { return nil }
            // A counter that fell was reset (a restart of its owner): what it counts since.
            return (now >= before ? now - before : now) / seconds
        }
        func counterRate(_ name: String) -> Double? { rate(metrics.total(name), previous?.metrics.total(name)) }
        var requests: [String: Double] = [:]
        if let name = requestNames.first(where: { metrics.total($0) != nil }) {
            let bySide = metrics.totals(name, by: "side") ?? ["all": metrics.total(name) ?? 0]
            let before = previous?.metrics.totals(name, by: "side") ?? previous?.metrics.total(name).map { ["all": $0] }
            for (side, value) in bySide { requests[side] = rate(value, before?[side]) }
        }
        var subscriptions = (metrics.totals("gateway_subscriptions_active", by: "kind") ?? [:]).mapValues { Int($0) }
        if let status {
            subscriptions["enterprise_watchers"] = status.enterpriseWatches
            subscriptions["oma_legs"] = status.omaLegs
            subscriptions["oma_watchers"] = status.omaWatches
            subscriptions["enterprise_legs"] = status.enterpriseLegs
        }
        func latency(_ name: String) -> Latency? {
            guard let now = metrics.buckets(name) else { return nil }
            let interval = MetricsSnapshot.difference(now, since: previous?.metrics.buckets(name))
            guard previous != nil, let p50 = MetricsSnapshot.quantile(0.5, of: interval),
                let p99 = MetricsSnapshot.quantile(0.99, of: interval)
            else { return nil }
            return Latency(p50: p50, p99: p99, count: Int(interval.last?.count ?? 0))
        }
        return Sample(
            time: now, requestsPerSecond: requests, notifiesPerSecond: counterRate("gateway_notifies_sent_total"),
            rejectionsPerSecond: counterRate("gateway_requests_rejected_total"),
            refusalsPerSecond: counterRate("gateway_security_refusals_total"), subscriptions: subscriptions,
            responseLatency: latency(histograms[0]), relayLatency: latency(histograms[1]),
            pendingChanges: metrics.total("gateway_state_pending_changes").map { Int($0) })
    }
}
