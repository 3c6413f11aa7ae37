internal import Metrics

/// The counters of ``SIPNetworkTransport`` (swift-metrics), created through the injected factory.
///
/// | label | dimensions | counts |
/// |---|---|---|
/// | `sip_transport_messages_received` | `transport` | messages parsed and handed up |
/// | `sip_transport_messages_sent` | `transport` | messages written to the network |
/// | `sip_transport_malformed_dropped` | `transport`, `reason` | inbound bytes dropped: the ``SIPMessages/SIPParseError/Code`` raw value, or `via-sent-by-mismatch` |
/// | `sip_transport_bad_request_sent` | `transport` | 400 responses sent for malformed requests |
/// | `sip_transport_connections_opened` | `transport` | TCP/TLS connections accepted or opened |
/// | `sip_transport_connections_closed` | `transport` | TCP/TLS connections closed, for any reason |
///
/// Confined to the transport's event loop; counters are created once per label and dimensions.
final class SIPTransportMetrics {
    static let messagesReceived = "sip_transport_messages_received"
    static let messagesSent = "sip_transport_messages_sent"
    static let malformedDropped = "sip_transport_malformed_dropped"
    static let badRequestSent = "sip_transport_bad_request_sent"
    static let connectionsOpened = "sip_transport_connections_opened"
    static let connectionsClosed = "sip_transport_connections_closed"

    private let factory: any MetricsFactory

    /// A counter's identity: hashed without building a string, so counting a message allocates
    /// nothing once its counter exists (this ran twice per relayed message).
    private struct Key: Hashable {
        var label: String
        var kind: SIPTransportKind
        var reason: String?
    }

    private var counters: [Key: Counter] = [:]

    /// Creates the counters of every transport in `kinds` at zero, so that `/metrics` lists them
    /// from the start rather than from the first message, connection or error: messages received
    /// and sent, 400s sent, malformed inputs (one series per transport without a reason; each
    /// reason gets its own series when first seen) and, for TCP and TLS, connections.
    init(factory: any MetricsFactory, kinds: [SIPTransportKind] = []) {
        self.factory = factory
        for kind in Set(kinds) {
            var labels = [Self.messagesReceived, Self.messagesSent, Self.badRequestSent, Self.malformedDropped]
            if kind != .udp { labels += [Self.connectionsOpened, Self.connectionsClosed] }
            for label in labels {
                counters[Key(label: label, kind: kind, reason: nil)] = Counter(
                    label: label, dimensions: [("transport", kind.rawValue.lowercased())], factory: factory)
            }
        }
    }

    func increment(_ label: String, _ kind: SIPTransportKind, reason: String? = nil) {
        let key = Key(label: label, kind: kind, reason: reason)
        if let counter = counters[key] {
            counter.increment()
            return
        }
        var dimensions = [("transport", kind.rawValue.lowercased())]
        if let reason { dimensions.append(("reason", reason)) }
        let counter = Counter(label: label, dimensions: dimensions, factory: factory)
        counters[key] = counter
        counter.increment()
    }
}
