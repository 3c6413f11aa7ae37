public import Foundation

/// What `GET /status.json` answers and the status page (`GET /`) shows: the version, how long
/// the gateway has run, its store, the current counts, each peer's health and the samples of
/// the last 15 minutes (``StatusSampler``). Everything but the peers is read from thread-safe
/// copies, off the relay loop; the peers are bounded by the configuration.
public struct GatewayStatusReport: Sendable, Codable, Equatable {
    public var version: String
    public var swift: String
    public var startedAt: Date
    public var now: Date
    public var uptimeSeconds: Int
    public var store: Store
    /// The runtime's counts; nil before the start has restored every dialog.
    public var counts: Counts?
    public var peers: [PeerHealth]
    public var sampleIntervalSeconds: Int
    /// Oldest first.
    public var samples: [StatusSampler.Sample]

    /// The durable store (README, "Durable state").
    public struct Store: Sendable, Codable, Equatable {
        /// `memory`, `sqlite` or `postgres`.
        public var kind: String
        /// The file or `postgres://host:port/database`; nil for `memory`.
        public var location: String?
        /// Whether it takes writes (always true for `memory`), and since when not.
        public var available: Bool
        public var unavailableSince: Date?
        /// Changes waiting to be written, from `gateway_state_pending_changes` (nil when the
        /// registry does not have it).
        public var pendingChanges: Int?
        /// PostgreSQL: this node's name and the length of its lease, renewed while the store is
        /// available (docs/state.md).
        public var node: String?
        public var leaseSeconds: Int?
    }

    /// Active subscriptions per kind, as `/health` gives them.
    public struct Counts: Sendable, Codable, Equatable {
        public var running: Bool
        public var enterpriseWatchers: Int
        public var omaLegs: Int
        public var omaWatchers: Int
        public var enterpriseLegs: Int

        public init(_ status: GatewayRuntime.Status) {
            running = status.running
            enterpriseWatchers = status.enterpriseWatches
            omaLegs = status.omaLegs
            omaWatchers = status.omaWatches
            enterpriseLegs = status.enterpriseLegs
        }
    }

    /// The report of a gateway started at `startedAt` with `store` and `status`, at `now`.
    public init(
        startedAt: Date, now: Date, store: GatewayConfiguration.State.Store, status: GatewayRuntime.Status?,
        samples: [StatusSampler.Sample], peers: [PeerHealth] = []
    ) {
        version = GatewayVersion.version
        swift = GatewayVersion.swift
        self.startedAt = startedAt
        self.now = now
        uptimeSeconds = max(0, Int(now.timeIntervalSince(startedAt)))
        self.store = Store(
            kind: "memory", location: nil, available: status?.storeAvailable ?? true,
            unavailableSince: status?.storeUnavailableSince, pendingChanges: samples.last?.pendingChanges)
        switch store {
        case .memory: break
        case .sqlite(let path, _):
            self.store.kind = "sqlite"
            self.store.location = path
        case .postgres(let postgres):
            self.store.kind = "postgres"
            self.store.location = postgres.location
            self.store.node = postgres.node
            self.store.leaseSeconds = postgres.leaseSeconds
        }
        counts = status.map(Counts.init)
        self.peers = peers
        sampleIntervalSeconds = Int(StatusSampler.interval.components.seconds)
        self.samples = samples
    }
}
