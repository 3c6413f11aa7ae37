import Metrics
import NIOCore
import SIPMessages

/// The relay's series by peer and response class, and its two latency histograms (README,
/// "Metrics"). A value inside ``GatewayRuntime``, confined to its loop.
///
/// Cardinality is bounded by the configuration: a series per configured peer and literal next
/// hop (the names `GET /peers` lists as configured) and one `peer="other"` per side for every
/// other source, whatever its address. Every series is made when the table is (or when a reload
/// adds a peer), so counting a message looks a counter up and adds to it, allocating nothing; the
/// histograms are swift-metrics timers over fixed buckets (``GatewayMetricsFactory/sipBuckets``).
struct RelayMetrics {
    /// A peer's series on one side: index into ``slots``.
    typealias Slot = Int

    private struct PeerSeries {
        var requests: Counter
        var rejected: Counter
        /// Indexed by class − 1 (1xx … 6xx).
        var received: [Counter]
        var sent: [Counter]
        /// nil for `other`: only a configured peer's health is a signal.
        var up: Gauge?
    }

    /// The methods the gateway sends and times; any other is `other`.
    static let timedMethods: [SIPMethod] = [.subscribe, .notify, .publish, .service]
    static let otherPeer = "other"

    private var slots: [PeerSeries] = []
    private var bySide: [GatewayConfiguration.Side: [String: Slot]] = [:]
    private var other: [GatewayConfiguration.Side: Slot] = [:]
    /// `[side][method]`, the last of each row for `other`.
    private var responseTimes: [GatewayConfiguration.Side: [Timer]] = [:]
    private var relayTimes: [GatewayConfiguration.Side: Timer] = [:]
    private var notifies: [GatewayConfiguration.Side: Counter] = [:]

    private let factory: any MetricsFactory

    init(peers: [(name: String, side: String)], factory: any MetricsFactory) {
        self.factory = factory
        for side in GatewayConfiguration.Side.allCases {
            other[side] = add(Self.otherPeer, side: side, configured: false)
            let methods = Self.timedMethods.map { $0.rawValue } + ["other"]
            responseTimes[side] = methods.map {
                Timer(
                    label: "gateway_sip_response_seconds", dimensions: [("side", side.rawValue), ("method", $0)],
                    factory: factory)
            }
            let to: GatewayConfiguration.Side = side == .enterprise ? .oma : .enterprise
            relayTimes[side] = Timer(
                label: "gateway_notification_relay_seconds",
                dimensions: [("direction", "\(side.rawValue)_to_\(to.rawValue)")], factory: factory)
            notifies[side] = Counter(
                label: "gateway_notifies_sent_total", dimensions: [("side", side.rawValue)], factory: factory)
        }
        configure(peers)
    }

    /// Adds the series of peers a reload configured (those it dropped keep theirs).
    mutating func configure(_ peers: [(name: String, side: String)]) {
        for peer in peers {
            guard let side = GatewayConfiguration.Side(rawValue: peer.side), bySide[side]?[peer.name] == nil,
                peer.name != Self.otherPeer
            else { continue }
            bySide[side, default: [:]][peer.name] = add(peer.name, side: side, configured: true)
        }
    }

    private mutating func add(_ name: String, side: GatewayConfiguration.Side, configured: Bool) -> Slot {
        let labels = [("side", side.rawValue), ("peer", name)]
        func classes(_ label: String) -> [Counter] {
            (1...6).map { Counter(label: label, dimensions: labels + [("class", "\($0)xx")], factory: factory) }
        }
        let up = configured ? Gauge(label: "gateway_peer_up", dimensions: labels, factory: factory) : nil
        up?.record(1)
        slots.append(
            PeerSeries(
                requests: Counter(label: "gateway_requests_received_total", dimensions: labels, factory: factory),
                rejected: Counter(label: "gateway_requests_rejected_total", dimensions: labels, factory: factory),
                received: classes("gateway_responses_received_total"), sent: classes("gateway_responses_sent_total"),
                up: up))
        return slots.count - 1
    }

    /// The series of the peer `GET /peers` names `name` on `side`: `other` unless configured.
    func slot(_ name: String, side: GatewayConfiguration.Side) -> Slot {
        bySide[side]?[name] ?? other[side] ?? 0
    }

    private static func classIndex(_ status: Int) -> Int { min(max(status / 100, 1), 6) - 1 }

    /// A request arrived from the peer of `slot`.
    func requestReceived(_ slot: Slot) {
        slots[slot].requests.increment()
    }

    /// The gateway refused a request of the peer of `slot`.
    func requestRejected(_ slot: Slot) {
        slots[slot].rejected.increment()
    }

    /// The gateway answered a request of the peer of `slot` with `status`.
    func responseSent(_ slot: Slot, status: Int) {
        slots[slot].sent[Self.classIndex(status)].increment()
    }

    /// A response with `status` came from the peer of `slot`.
    func responseReceived(_ slot: Slot, status: Int) {
        slots[slot].received[Self.classIndex(status)].increment()
    }

    /// A request to the peer of `slot` ended: `up` false for no answer, a transport error or a
    /// 503 (the failures RFC 3263 §4.3 moves to the next target for).
    func peerAnswered(_ slot: Slot, up: Bool) {
        slots[slot].up?.record(up ? 1 : 0)
    }

    /// A request sent on `side` at `sent` got its final response now.
    func responseTime(side: GatewayConfiguration.Side, method: SIPMethod, sent: NIODeadline, now: NIODeadline) {
        guard let timers = responseTimes[side], let last = timers.indices.last else { return }
        let index = Self.timedMethods.firstIndex(of: method) ?? last
        timers[index].recordNanoseconds(max(0, (now - sent).nanoseconds))
    }

    /// A NOTIFY or BENOTIFY is sent on `side`.
    func notifySent(side: GatewayConfiguration.Side) {
        notifies[side]?.increment()
    }

    /// A notification that arrived on `from` at `arrived` was relayed, mapped, to the other side now.
    func relayed(from: GatewayConfiguration.Side, arrived: NIODeadline, now: NIODeadline) {
        relayTimes[from]?.recordNanoseconds(max(0, (now - arrived).nanoseconds))
    }
}
