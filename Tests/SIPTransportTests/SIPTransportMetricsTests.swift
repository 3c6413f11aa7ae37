import MetricsTestKit
import SIPTransport
import Testing

/// The transport's counters exist at zero from the start, for every transport it listens on,
/// so an idle `/metrics` already lists what the README promises.
struct SIPTransportMetricsTests {
    @Test func countersExistAtZeroBeforeAnyTraffic() async throws {
        let harness = try await Harness.start(SIPNetworkTransport.Configuration(listeners: [
            .init(.udp, host: "127.0.0.1", port: 0), .init(.tcp, host: "127.0.0.1", port: 0),
        ]))
        let everyTransport = ["sip_transport_messages_received_total", "sip_transport_messages_sent_total",
                              "sip_transport_bad_request_sent_total", "sip_transport_malformed_dropped_total"]
        for kind in ["udp", "tcp"] {
            for label in everyTransport {
                let counter = try harness.metrics.expectCounter(label, [("transport", kind)])
                #expect(counter.totalValue == 0, "\(label) \(kind)")
            }
        }
        for label in ["sip_transport_connections_opened_total", "sip_transport_connections_closed_total"] {
            #expect(try harness.metrics.expectCounter(label, [("transport", "tcp")]).totalValue == 0)
            // UDP has no connections: no series for it.
            #expect(throws: (any Error).self) { try harness.metrics.expectCounter(label, [("transport", "udp")]) }
        }
        await harness.transport.shutdown()
    }

    /// The gateway runs one transport per side on one metrics backend: with its `side` dimension
    /// each counts its own messages, where without it the two would add into one series.
    @Test func aSideDimensionKeepsTwoTransportsOnOneBackendApart() async throws {
        let metrics = TestMetrics()
        var transports: [String: SIPNetworkTransport] = [:]
        var bound: [String: SIPTarget] = [:]
        for side in ["enterprise", "oma"] {
            let transport = try SIPNetworkTransport(
                configuration: .init(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]),
                metricsFactory: metrics, metricsDimensions: [("side", side)])
            Inbox().attach(to: transport)
            bound[side] = try await transport.start()[0]
            transports[side] = transport
        }
        let peer = try await RawUDPPeer()
        for n in 0..<2 {
            try await peer.send(TestMessages.raw(viaHost: "127.0.0.1", viaPort: peer.port, branch: "side\(n)",
                                                 callID: "side-\(n)@partner.example"), to: try #require(bound["oma"]))
        }
        func received(_ side: String) -> Int64 {
            metrics.counterTotal(label: "sip_transport_messages_received_total",
                                 dimensions: [("side", side), ("transport", "udp")])
        }
        for _ in 0..<200 where received("oma") < 2 { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(received("oma") == 2)
        #expect(received("enterprise") == 0)
        #expect(try metrics.expectCounter("sip_transport_messages_received_total",
                                          [("side", "enterprise"), ("transport", "udp")]).totalValue == 0)
        for transport in transports.values { await transport.shutdown() }
    }
}
