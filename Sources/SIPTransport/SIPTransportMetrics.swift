internal import Metrics

/// The counters of ``SIPNetworkTransport`` (swift-metrics), created through the injected factory.
///
/// | label | dimensions | counts |
/// |---|---|---|
/// | `sip_transport_messages_received_total` | `transport` | messages parsed and handed up |
/// | `sip_transport_messages_sent_total` | `transport` | messages written to the network |
/// | `sip_transport_malformed_dropped_total` | `transport`, `reason` | inbound bytes dropped: the ``SIPMessages/SIPParseError/Code`` raw value, or `via-sent-by-mismatch` |
/// | `sip_transport_bad_request_sent_total` | `transport` | 400 responses sent for malformed requests |
/// | `sip_transport_connections_opened_total` | `transport` | TCP/TLS connections accepted or opened |
/// | `sip_transport_connections_closed_total` | `transport` | TCP/TLS connections closed, for any reason |
/// | `sip_transport_connections_refused_total` | `transport`, `reason` | connections not accepted or not opened: `inbound-limit`, `address-limit`, `outbound-limit`; for TLS also `certificate-name` (the server's certificate names none of the expected names) and `no-certificate-name` (nothing to verify it against) |
/// | `sip_transport_timeouts_total` | `transport`, `kind` | connections closed by a timeout: `idle`, `header` (a message not whole in time); for TLS also `tls-handshake` |
///
/// Every series also carries the transport's own `dimensions` first (the gateway gives each side's
/// transport `side`: `enterprise` or `oma`, so the two faces are never merged). The names end in
/// `_total`, as Prometheus names counters. The refusal and timeout counters exist at zero from
/// the start (so that an alert can watch their rate). Confined to the transport's event loop;
/// counters are created once per label and dimensions.
final class SIPTransportMetrics {
    static let messagesReceived = "sip_transport_messages_received_total"
    static let messagesSent = "sip_transport_messages_sent_total"
    static let malformedDropped = "sip_transport_malformed_dropped_total"
    static let badRequestSent = "sip_transport_bad_request_sent_total"
    static let connectionsOpened = "sip_transport_connections_opened_total"
    static let connectionsClosed = "sip_transport_connections_closed_total"
    static let connectionsRefused = "sip_transport_connections_refused_total"
    static let timeouts = "sip_transport_timeouts_total"

    /// Why a connection was refused (`reason` of ``connectionsRefused``).
    enum Refusal: String, CaseIterable {
        case inboundLimit = "inbound-limit"
        case addressLimit = "address-limit"
        case outboundLimit = "outbound-limit"
        case certificateName = "certificate-name"
        case noCertificateName = "no-certificate-name"

        var tlsOnly: Bool { self == .certificateName || self == .noCertificateName }
    }

    /// Which timeout closed a connection (`kind` of ``timeouts``).
    enum Timeout: String, CaseIterable {
        case idle
        case header
        case tlsHandshake = "tls-handshake"

        var tlsOnly: Bool { self == .tlsHandshake }
    }

    private let factory: any MetricsFactory
    /// Put before every series' own dimensions (for the gateway, `side`).
    private let dimensions: [(String, String)]

    /// A counter's identity: hashed without building a string, so counting a message allocates
    /// nothing once its counter exists (this ran twice per relayed message).
    private struct Key: Hashable {
        var label: String
        var kind: SIPTransportKind
        var reason: String?
        var timeout: String?
    }

    private var counters: [Key: Counter] = [:]

    /// Creates the counters at zero, so that `/metrics` lists them from the start rather than
    /// from the first message, connection or error: for every transport in `kinds`, messages
    /// received and sent, 400s sent, malformed inputs (one series per transport without a
    /// reason; each reason gets its own series when first seen) and, for TCP and TLS,
    /// connections; for TCP and TLS, every refusal and timeout.
    init(factory: any MetricsFactory, kinds: [SIPTransportKind] = [], dimensions: [(String, String)] = []) {
        self.factory = factory
        self.dimensions = dimensions
        for kind in Set(kinds) {
            var labels = [Self.messagesReceived, Self.messagesSent, Self.badRequestSent, Self.malformedDropped]
            if kind != .udp { labels += [Self.connectionsOpened, Self.connectionsClosed] }
            for label in labels { increment(label, kind, by: 0) }
        }
        for kind in [SIPTransportKind.tcp, .tls] {
            for refusal in Refusal.allCases where kind == .tls || !refusal.tlsOnly {
                increment(Self.connectionsRefused, kind, reason: refusal.rawValue, by: 0)
            }
            for timeout in Timeout.allCases where kind == .tls || !timeout.tlsOnly {
                increment(Self.timeouts, kind, kindOfTimeout: timeout.rawValue, by: 0)
            }
        }
    }

    func refused(_ kind: SIPTransportKind, _ refusal: Refusal) {
        increment(Self.connectionsRefused, kind, reason: refusal.rawValue)
    }

    func timedOut(_ kind: SIPTransportKind, _ timeout: Timeout) {
        increment(Self.timeouts, kind, kindOfTimeout: timeout.rawValue)
    }

    func increment(
        _ label: String, _ kind: SIPTransportKind, reason: String? = nil, kindOfTimeout: String? = nil,
        by amount: Int64 = 1
    ) {
        let key = Key(label: label, kind: kind, reason: reason, timeout: kindOfTimeout)
        if let counter = counters[key] {
            counter.increment(by: amount)
            return
        }
        var dimensions = self.dimensions + [("transport", kind.rawValue.lowercased())]
        if let reason { dimensions.append(("reason", reason)) }
        if let kindOfTimeout { dimensions.append(("kind", kindOfTimeout)) }
        let counter = Counter(label: label, dimensions: dimensions, factory: factory)
        counters[key] = counter
        counter.increment(by: amount)
    }
}
