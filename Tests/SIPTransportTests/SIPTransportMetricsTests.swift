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
        let everyTransport = ["sip_transport_messages_received", "sip_transport_messages_sent",
                              "sip_transport_bad_request_sent", "sip_transport_malformed_dropped"]
        for kind in ["udp", "tcp"] {
            for label in everyTransport {
                let counter = try harness.metrics.expectCounter(label, [("transport", kind)])
                #expect(counter.totalValue == 0, "\(label) \(kind)")
            }
        }
        for label in ["sip_transport_connections_opened", "sip_transport_connections_closed"] {
            #expect(try harness.metrics.expectCounter(label, [("transport", "tcp")]).totalValue == 0)
            // UDP has no connections: no series for it.
            #expect(throws: (any Error).self) { try harness.metrics.expectCounter(label, [("transport", "udp")]) }
        }
        await harness.transport.shutdown()
    }
}
