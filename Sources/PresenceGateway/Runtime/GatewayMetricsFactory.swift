public import Metrics
public import Prometheus

/// The gateway's swift-metrics backend: every counter, gauge and timer made through it goes into
/// one ``PrometheusCollectorRegistry``, which `GET /metrics` renders in the Prometheus text format
/// (``AdminServer``), with the `# HELP` line of ``help`` and, for timers, the SIP buckets of
/// ``sipBuckets`` as a histogram (`_bucket{le=...}`, `_sum`, `_count`, in seconds).
///
/// Everything that writes into the registry goes through this factory: the registry refuses a
/// name registered twice with different help texts.
public struct GatewayMetricsFactory: MetricsFactory {
    public let registry: PrometheusCollectorRegistry
    /// The shard whose gauges these are, of several (docs/shards.md): each shard's gauge of a
    /// count is its own series, labelled `shard`, which a query sums; a gauge saying whether
    /// something is up (`gateway_peer_up`, `gateway_state_store_up`) is the node's, one series
    /// every shard writes, so it holds the latest outcome any shard saw. Counters and histograms
    /// are shared by the shards and need no label. Nil with one shard.
    public var shard: Int?

    public init(registry: PrometheusCollectorRegistry, shard: Int? = nil) {
        self.registry = registry
        self.shard = shard
    }

    private func gaugeLabels(_ label: String, _ dimensions: [(String, String)]) -> [(String, String)] {
        guard let shard, !label.hasSuffix("_up") else { return dimensions }
        return dimensions + [("shard", String(shard))]
    }

    /// The histograms' upper bounds, 1 ms to 32 s: a relay on the loop takes about a
    /// millisecond, a UDP request answered after its first retransmission takes T1 = 500 ms
    /// (RFC 3261 §17.1.1.2), and a non-INVITE transaction ends at Timer F = 64·T1 = 32 s (§17.1.2.2).
    public static let sipBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(20),
        .milliseconds(50), .milliseconds(100), .milliseconds(200), .milliseconds(500), .seconds(1), .seconds(2),
        .seconds(4), .seconds(8), .seconds(16), .seconds(32),
    ]

    /// Each metric's `# HELP` text (README, "Metrics" has the same list for operators).
    public static let help: [String: String] = [
        "gateway_build_info": "The running version and the Swift it was built with (always 1).",
        "gateway_dependency_info": "Each package built in, with the version SwiftPM resolved for it (always 1).",
        "gateway_requests_received_total": "SIP requests received, by side and configured peer (other: anyone else).",
        "gateway_requests_rejected_total": "SIP requests the gateway refused, by side and peer.",
        "gateway_responses_received_total": "Final and provisional responses received, by side, peer and class.",
        "gateway_responses_sent_total": "Responses the gateway sent to requests it received, by side, peer and class.",
        "gateway_notifies_sent_total": "NOTIFY and BENOTIFY requests sent, by side.",
        "gateway_send_failures_total": "Requests that could not be sent to any target.",
        "gateway_target_failovers_total": "Requests sent again to the next RFC 3263 target.",
        "gateway_security_refusals_total": "Requests refused to protect the edge, by reason.",
        "gateway_peer_up": "0 when the last request to a configured peer had no answer, a transport error or a 503.",
        "gateway_subscriptions_active": "Subscriptions held, by kind.",
        "gateway_sip_response_seconds": "From a request the gateway sent to its final response, by side and method.",
        "gateway_notification_relay_seconds":
            "From a notification's arrival on one side to the mapped one sent on the other, by direction.",
        "gateway_state_writes_total": "Transactions written to the state store.",
        "gateway_state_records_written_total": "Records written to the state store.",
        "gateway_state_write_failures_total": "State store writes that failed.",
        "gateway_state_store_up": "1 while the state store takes writes.",
        "gateway_state_pending_changes": "Changes waiting to be written to the state store.",
        "gateway_recovery_refreshes_pending": "Refreshes a restore or a takeover has yet to send at its pace.",
        "gateway_xcap_fetches_total": "XCAP document fetches, by result.",
        "gateway_xcap_auth_failures_total":
            "XCAP requests an XCAP root (an Aggregation Proxy) refused with 401 or 403, by root.",
        "gateway_content_indirection_total":
            "RFC 4483 references followed from the OMA side or offered to OMA watchers, by direction and result.",
        "gateway_admin_connections_refused_total": "Admin HTTP connections refused, by reason.",
        "gateway_admin_timeouts_total": "Admin HTTP connections closed by a timeout, by kind.",
        "gateway_capture_sent_total": "HEP capture packets sent.",
        "gateway_capture_dropped_total": "HEP capture copies dropped, by reason.",
        "sip_transactions_active": "Live SIP transactions, by side and role.",
        "sip_transport_messages_received_total": "SIP messages parsed and handed up, by side and transport.",
        "sip_transport_messages_sent_total": "SIP messages written to the network, by side and transport.",
        "sip_transport_malformed_dropped_total": "Inbound bytes dropped as malformed, by side, transport and reason.",
        "sip_transport_bad_request_sent_total": "400 responses sent for malformed requests, by side and transport.",
        "sip_transport_connections_opened_total": "TCP and TLS connections accepted or opened.",
        "sip_transport_connections_closed_total": "TCP and TLS connections closed.",
        "sip_transport_connections_refused_total": "Connections not accepted or not opened, by reason.",
        "sip_transport_timeouts_total": "Connections closed by a timeout, by kind.",
    ]

    private func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: Self.help[label] ?? "")
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)])
        -> any FloatingPointCounterHandler
    {
        registry.makeCounter(descriptor: descriptor(label), labels: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else {
            return registry.makeGauge(descriptor: descriptor(label), labels: gaugeLabels(label, dimensions))
        }
        let buckets = Self.sipBuckets.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        return registry.makeValueHistogram(descriptor: descriptor(label), labels: dimensions, buckets: buckets)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: descriptor(label), labels: gaugeLabels(label, dimensions))
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(descriptor: descriptor(label), labels: dimensions, buckets: Self.sipBuckets)
    }

    public func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    public func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? ValueHistogram { registry.unregisterValueHistogram(histogram) }
    }

    public func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    public func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }
}
