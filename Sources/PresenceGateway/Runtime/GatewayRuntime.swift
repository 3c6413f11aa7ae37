import Atomics
public import Foundation
public import GatewayState
public import Logging
public import Metrics
import NIOConcurrencyHelpers
public import NIOCore
public import PresenceMapping
public import SIPMessages
public import SIPStack
public import SIPTransport
public import UPnPDevice
import _GatewayInternals

/// Runs a ``GatewayCore`` over one transaction layer per side, on one event loop: requests from
/// the layers go through the ``FederationRouter`` into the core; the core's sends, answers and
/// timers are carried out here. Every method must be called on ``eventLoop``.
///
/// `@unchecked Sendable` because it is confined to ``eventLoop``, which each entry point checks
/// in release builds too (`preconditionInEventLoop`): the public methods, and the request handler
/// it installs in the layers. What it schedules itself (timers, the layers' response callbacks,
/// the futures of its store and resolver calls) runs on that loop by construction and is not
/// checked again, so a relayed NOTIFY costs one check. ``status`` alone is read from any thread.
public final class GatewayRuntime: @unchecked Sendable {
    public let eventLoop: any EventLoop
    private var core: GatewayCore
    private var router: FederationRouter
    private let layers: [GatewayConfiguration.Side: SIPTransactionLayer]
    private let resolve: @Sendable (SIPURI, GatewayConfiguration.Side) async -> [SIPTarget]
    /// Targets that failed recently: skipped by later requests (RFC 3263 §4.3).
    private var failedTargets: FailedTargets
    /// The server transactions the core has yet to answer, with the series of the peer each
    /// request came from (``RelayMetrics``).
    private var servers:
        [GatewayCore.ServerRequestID: (
            side: GatewayConfiguration.Side, key: SIPServerTransactionKey, peer: RelayMetrics.Slot
        )] = [:]
    /// The core's timers, all on one scheduled task: a NIO task per timer costs a promise, a
    /// future and closure contexts (about 600 bytes), and every subscription pair keeps two or
    /// three. Filed by an 8-byte ``TimerKey``.
    private var timerQueue = TimerQueue<TimerKey>()
    /// A ``PackedTable``: two or three timers per bridged pair, which a dictionary would hold in
    /// up to 2.67 buckets each.
    private var timerSlots = PackedTable<TimerKey, TimerSlot>(filler: TimerSlot())
    private var timerKeys = TimerKeys()
    private var nextID: GatewayCore.ServerRequestID = 0
    private var stopping = false
    /// Stopping for a restart that continues every dialog (`shutdown: keep`): nothing is answered
    /// or sent any more.
    private var keeping = false
    /// Writes the core's changes to the durable store; nil with `state.store: memory`.
    private let writer: StateWriter?
    /// The store when several nodes share it: leases, takeover, owners of unknown dialogs.
    private let shared: (any SharedStateStore)?
    private let recoveryRate: Int
    /// The lease's renewal (``keepLease(_:)``); cancelled by a drain.
    private var leaseRenewal: RepeatedTask?
    /// The refreshes a restore or a takeover paced, followed until sent.
    private let recovery: RecoveryRefreshes
    /// Each peer's and next hop's last outcomes and request rates, for `GET /peers`.
    private var health: PeerHealthTable
    /// Whether a refresh of ``status`` and the gauges is queued (see ``perform(_:)``).
    private var statusRefreshQueued = false
    /// How stale ``status`` and the `gateway_subscriptions_active` gauges may be: 100 ms.
    static let statusRefreshInterval = TimeAmount.milliseconds(100)
    private let logger: Logger
    /// Puts (or, with nil, deletes) the rls-services document at a URI and gives the HTTP status
    /// (nil: no answer): the lists toward OMA resource list servers (`oma: rls`). Set before
    /// ``start(restored:)``; without it such writes fail, and the lists are subscribed per resource.
    public var listDocumentWriter: (@Sendable (_ uri: String, _ body: [UInt8]?) async -> Int?)?
    /// Told the presentity whose XCAP pres-rules the OMA side said changed (RFC 5875), to fetch
    /// them now. Set before ``start(restored:)``.
    public var xcapDocumentChanged: (@Sendable (_ presentity: String) -> Void)?
    /// Called with each change of the UPnP Presence:1 service's evented variables (flow 5), for
    /// the device's GENA subscribers.
    public var presenceServiceChanged: (@Sendable (EventedChange) -> Void)?
    /// Hands what this shard's watches reported to the other shards (docs/shards.md, "Across
    /// shards"): set, with several shards, before ``start(restored:restoredAt:)``.
    var shareWatcherReports: (@Sendable (_ reset: Bool, _ updates: [WatcherReport.Update]) -> Void)?
    /// With several shards on a shared store: takes the records of a node whose lease ran out,
    /// hands every other shard its share (``adoptTakenOver(_:)``) and returns this shard's
    /// (docs/shards.md, "Several nodes"). Set before ``start(restored:restoredAt:)``.
    var handOutTakenOver: (@Sendable ([StateRecord]) -> [StateRecord])?
    /// Whether ``start(restored:restoredAt:)`` ran; before, other shards' reports wait in
    /// ``earlyWatcherReports``, and records they took over in ``earlyTakenOver``.
    private var started = false
    private var earlyWatcherReports: [(updates: [WatcherReport.Update], reset: Bool, shard: Int)] = []
    private var earlyTakenOver: [StateRecord] = []
    /// With several shards: how many of them find the store unavailable now. While any does,
    /// every shard refuses new subscriptions (docs/state.md, "When the store is unavailable"),
    /// not only the one whose write or renewal failed. Set before ``start(restored:restoredAt:)``.
    var storeOutages: ManagedAtomic<Int>?
    /// Whether this shard counts itself in ``storeOutages``.
    private var countedOutage = false
    /// Follows and offers content indirection through the OMA content server (RFC 4483,
    /// ``ContentIndirection``). Set before ``start(restored:)``; without it every reference is
    /// refused with 415 and nothing is offered.
    var contentIndirection: ContentIndirection?
    /// References being followed, in all and by the sending peer's name: each peer has its own
    /// share below the total, so one peer's slow references cannot hold up another's.
    private var following = (total: 0, byPeer: [String: Int]())
    static let followLimit = 64
    static let followLimitPerPeer = 16
    /// NOTIFYs waiting behind an offer in their dialog (by Call-ID), in order: the watcher gets
    /// them in CSeq order (RFC 3261 §12.2.2).
    private var offering: [String: [(SIPRequest, SIPTransactionLayer, ArraySlice<SIPTarget>, GatewayCore.Context)]] =
        [:]
    /// The object last offered in each dialog (by Call-ID), deleted when the next replaces it;
    /// those of ended dialogs are deleted when the table has doubled since it was last swept.
    private var offered: [String: (url: String, context: GatewayCore.Context)] = [:]
    private var offeredSweepAt = 1_000

    /// Requests refused since the start, for the per-peer rejection rates and counters.
    private var rejectedCount = 0
    /// The per-peer, response-class and latency series.
    private var metrics: RelayMetrics
    /// The notification being handled (a NOTIFY, BENOTIFY or PUBLISH): the side it came from and
    /// when, so that what it is relayed as on the other side times the relay.
    private var relaying: (from: GatewayConfiguration.Side, arrived: NIODeadline)?
    /// Questions to the shared store about dialogs this node does not hold, open now.
    private var ownerLookups = 0
    /// Dialogs the shared store said nobody holds, for a few seconds.
    private var unknownDialogs = RecentKeys(lifetime: .seconds(5), capacity: 10_000)
    /// With a shared store: until when this node surely holds its lease, by this process's clock
    /// from the moment its last successful renewal was asked. Past it another node may have taken
    /// its dialogs over, so it is fenced (docs/state.md, "Fencing"): it answers and sends nothing
    /// until a renewal succeeded and it let go of what was taken.
    private var leaseHeldUntil = NIODeadline.distantFuture
    /// The lease lapsed: what the store still lists as this node's is to be asked.
    private var reconciling = false
    /// That question is open.
    private var askingHeld = false
    /// What arrived or was to be sent while fenced, handled once the fence is lifted.
    private var fencedRequests: [(SIPTransactionLayer.IncomingRequest, GatewayConfiguration.Side)] = []
    private var fencedActions: [GatewayCore.Action] = []
    /// The most requests and actions held while fenced; past them they are dropped (the peers
    /// retransmit their requests).
    static let fencedLimit = 100_000
    /// Each sender's fan-out pace, and the dialog-creating SUBSCRIBEs waiting for it
    /// (``GatewayConfiguration/Limits/fanOutBurst``; docs/security.md).
    private var paced: [String: PacedSender] = [:]
    private var pacingScheduled = false
    private let sendFailures: Counter
    /// Credentials, last challenges and trust toward the configured peers (docs/security.md,
    /// "Credentials"); without any, never asked.
    private var authentication: PeerAuthentication
    private let failovers: Counter
    /// `gateway_security_refusals_total{reason}`: what was refused to protect the edge (README,
    /// "Security"): the core's reasons (``GatewayCore/Refusals``) and the runtime's own.
    private let refusalCounters: [String: Counter]
    /// The transaction layers' refusals of a new request while their table was full, already
    /// added to the counters.
    private var refusedWhileFullRecorded = 0
    /// The core's refusal counts already added to the counters.
    private var refusalsRecorded = GatewayCore.Refusals()
    private let active: [String: Gauge]
    /// `sip_transactions_active{side, role}`: the layers' live transactions (RFC 3261 §17),
    /// answered UDP ones included until Timer J/K ends them.
    private let transactions: [GatewayConfiguration.Side: (server: Gauge, client: Gauge)]
    private let published = NIOLockedValueBox(
        Status(running: true, enterpriseWatches: 0, omaLegs: 0, omaWatches: 0, enterpriseLegs: 0))

    /// What `/health` reports; readable from any thread.
    public struct Status: Sendable, Hashable {
        public var running: Bool
        public var enterpriseWatches: Int
        public var omaLegs: Int
        public var omaWatches: Int
        public var enterpriseLegs: Int
        /// Whether the durable store takes writes (always true without one), and since when not.
        public var storeAvailable = true
        public var storeUnavailableSince: Date?

        /// The status of a gateway of several shards: the subscriptions summed; running while
        /// every shard runs; the store available while every shard's writer finds it so, else
        /// unavailable since the first shard found it not.
        public static func summed(_ runtimes: [GatewayRuntime]) -> Status {
            let all = runtimes.map(\.status)
            guard var sum = all.first else {
                return Status(running: false, enterpriseWatches: 0, omaLegs: 0, omaWatches: 0, enterpriseLegs: 0)
            }
            for status in all.dropFirst() {
                sum.running = sum.running && status.running
                sum.enterpriseWatches += status.enterpriseWatches
                sum.omaLegs += status.omaLegs
                sum.omaWatches += status.omaWatches
                sum.enterpriseLegs += status.enterpriseLegs
                sum.storeAvailable = sum.storeAvailable && status.storeAvailable
                sum.storeUnavailableSince = [sum.storeUnavailableSince, status.storeUnavailableSince]
                    .compactMap { $0 }.min()
            }
            return sum
        }
    }

    /// The latest status, at most ``statusRefreshInterval`` (100 ms) behind the core; safe to
    /// read from any thread. Of several shards, ``Status/summed(_:)``.
    public var status: Status { published.withLockedValue { $0 } }

    /// `resolve` turns a URI into one target when it is not an IP literal and the side's next hop
    /// is not a fixed URI; nil fails the request with 503. Without failover: see
    /// ``init(core:router:layers:eventLoop:logger:failover:resolveTargets:)``.
    public convenience init(
        core: GatewayCore, router: FederationRouter, layers: [GatewayConfiguration.Side: SIPTransactionLayer],
        eventLoop: any EventLoop, logger: Logger = Logger(label: "presence-gateway"),
        resolve: @escaping @Sendable (SIPURI, GatewayConfiguration.Side) async -> SIPTarget? = { _, _ in nil }
    ) {
        self.init(
            core: core, router: router, layers: layers, eventLoop: eventLoop, logger: logger,
            resolveTargets: { uri, side in await resolve(uri, side).map { [$0] } ?? [] })
    }

    /// `resolveTargets` turns a URI into the RFC 3263 target list, in order (``SIPResolver``),
    /// when it is not an IP literal and the side's next hop is not a fixed URI; an empty list
    /// fails the request with 503. A request whose target fails (transport error, timeout, or a
    /// 503 response) is sent again, as a new transaction, to the next target (RFC 3263 §4.3);
    /// failed targets are skipped by later requests for `failover.duration`. The runtime's
    /// series go to `metricsFactory` (default: the bootstrapped `MetricsSystem.factory`).
    public init(
        core: GatewayCore, router: FederationRouter, layers: [GatewayConfiguration.Side: SIPTransactionLayer],
        eventLoop: any EventLoop, logger: Logger = Logger(label: "presence-gateway"),
        failover: FailedTargets.Limits = FailedTargets.Limits(), store: (any StateStore)? = nil,
        metricsFactory: (any MetricsFactory)? = nil,
        resolveTargets: @escaping @Sendable (SIPURI, GatewayConfiguration.Side) async -> [SIPTarget]
    ) {
        let factory = metricsFactory ?? MetricsSystem.factory
        var core = core
        core.journaling = store != nil
        self.writer = store.map { StateWriter(store: $0, eventLoop: eventLoop, logger: logger, factory: factory) }
        self.shared = store as? any SharedStateStore
        if let shared {
            core.keyBase = shared.ordinal << 40
            // The store's open claimed a fresh lease a moment ago.
            leaseHeldUntil = .now() + .seconds(Int64(shared.leaseSeconds))
        }
        self.recoveryRate = core.configuration.state.recoveryRate
        self.recovery = RecoveryRefreshes(eventLoop: eventLoop, logger: logger, factory: factory)
        self.core = core
        self.router = router
        self.layers = layers
        self.eventLoop = eventLoop
        self.logger = logger
        self.resolve = resolveTargets
        self.failedTargets = FailedTargets(limits: failover)
        self.health = PeerHealthTable(configured: Self.knownPeers(core.configuration))
        self.metrics = RelayMetrics(peers: Self.knownPeers(core.configuration), factory: factory)
        self.sendFailures = Counter(label: "gateway_send_failures_total", factory: factory)
        self.authentication = PeerAuthentication(core.configuration, factory: factory)
        self.failovers = Counter(label: "gateway_target_failovers_total", factory: factory)
        self.active = Dictionary(
            uniqueKeysWithValues: [
                "enterprise_watchers", "oma_legs", "oma_watchers", "enterprise_legs", "winfo_watchers",
                "mirrored_watchers",
            ].map {
                ($0, Gauge(label: "gateway_subscriptions_active", dimensions: [("kind", $0)], factory: factory))
            })
        let reasons = GatewayCore.Refusals().byReason.map(\.0) + Self.runtimeRefusals
        self.refusalCounters = Dictionary(
            uniqueKeysWithValues: reasons.map {
                ($0, Counter(label: "gateway_security_refusals_total", dimensions: [("reason", $0)], factory: factory))
            })
        self.transactions = Dictionary(
            uniqueKeysWithValues: layers.keys.map { side in
                (
                    side,
                    (
                        Gauge(
                            label: "sip_transactions_active",
                            dimensions: [("side", side.rawValue), ("role", "server")],
                            factory: factory),
                        Gauge(
                            label: "sip_transactions_active",
                            dimensions: [("side", side.rawValue), ("role", "client")],
                            factory: factory)
                    )
                )
            })
    }

    /// The transaction layer settings for the gateway's faces: the event layer's
    /// ``SIPTransactionLayer/Configuration/presenceEvents`` (the [MS-PRES] option tags and the
    /// presence body types, so the RFC 3261 §8.2 checks let batch SUBSCRIBEs and category
    /// BENOTIFYs through) and `message/external-body` (RFC 4483), with tables sized for load:
    /// RFC 3261 Timer J keeps each answered non-INVITE transaction 32 s over UDP, so they must
    /// hold rate × 32 s: `limits.transactions` of each role, each way
    /// (``GatewayConfiguration/Limits/transactions``).
    public static func transactionConfiguration(limit: Int = GatewayConfiguration.Limits().transactions)
        -> SIPTransactionLayer.Configuration
    {
        var configuration = SIPTransactionLayer.Configuration.presenceEvents
        // References (RFC 4483) pass the §8.2.3 check; the runtime follows or refuses them.
        configuration.uas.defaultBodyTypes.append(ContentIndirection.mediaType)
        configuration.limits = SIPTransactionLayer.Limits(maxServerTransactions: limit, maxClientTransactions: limit)
        return configuration
    }

    /// Installs the request handlers and starts the core; `restored` is what the core's
    /// ``GatewayCore/restore(_:clock:now:recoveryRate:)`` returned (refreshes, expiries), carried
    /// out first, its paced refreshes moved to begin now rather than at `restoredAt`, the `now`
    /// the restore was given (``RecoveryRefreshes``).
    public func start(restored: [GatewayCore.Action] = [], restoredAt: NIODeadline? = nil) {
        eventLoop.preconditionInEventLoop()
        writer?.release = { [self] actions in self.execute(actions) }
        writer?.availabilityChanged = { [self] in
            self.countOutage()
            self.publishStatus()
        }
        writer?.disowned = { [self] ids in
            self.logger.warning("\(ids.count) records were taken over by another node: let go")
            self.perform(self.core.disown(ids))
        }
        let now = NIODeadline.now()
        perform(recovery.follow(restored, pacedFrom: restoredAt ?? now, now: now))
        if let shared { keepLease(shared) }
        for (side, layer) in layers {
            layer.setRequestHandler(
                for: side == .oma ? [.subscribe, .notify, .benotify, .publish] : [.subscribe, .notify, .benotify]
            ) { [self] incoming in
                self.eventLoop.preconditionInEventLoop()
                self.handle(incoming, side: side)
            }
            layer.start()
        }
        perform(core.start(now: .now()))
        started = true
        for early in earlyWatcherReports {
            receiveWatcherReports(early.updates, reset: early.reset, fromShard: early.shard)
        }
        earlyWatcherReports = []
        if !earlyTakenOver.isEmpty { adopt(earlyTakenOver) }
        earlyTakenOver = []
        // What /health and the gauges say from the first moment it serves: the restored dialogs.
        publishStatus()
    }

    /// Another shard's watchers, as its watches reported them
    /// (``GatewayCore/receiveWatcherReports(_:reset:fromShard:now:)``); kept until this runtime
    /// has started.
    func receiveWatcherReports(_ updates: [WatcherReport.Update], reset: Bool, fromShard shard: Int) {
        eventLoop.preconditionInEventLoop()
        guard started else { return earlyWatcherReports.append((updates, reset, shard)) }
        guard !stopping else { return }
        perform(core.receiveWatcherReports(updates, reset: reset, fromShard: shard, now: .now()))
    }

    /// Active subscriptions, as the core counts them.
    public var counts: (enterpriseWatches: Int, omaLegs: Int, omaWatches: Int, enterpriseLegs: Int) {
        eventLoop.preconditionInEventLoop()
        return core.counts
    }

    /// Sends every final NOTIFY and unsubscribe (RFC 6665 §4.2.2, §4.1.2.3) and refuses new
    /// subscriptions with 503 from now on.
    public func shutdown() {
        eventLoop.preconditionInEventLoop()
        stopping = true
        recovery.stop()
        perform(core.shutdown(now: .now()))
        published.withLockedValue { $0.running = false }
    }

    /// Stops for a restart that continues every dialog (`shutdown: keep`, docs/state.md): nothing
    /// is answered or sent from now on (the peers' retransmissions reach the next start), and
    /// what the store has not written yet is written, waiting at most `timeout`. The future says
    /// whether everything was written.
    public func stopKeepingState(timeout: TimeAmount) -> EventLoopFuture<Bool> {
        eventLoop.preconditionInEventLoop()
        stopping = true
        keeping = true
        recovery.stop()
        published.withLockedValue { $0.running = false }
        guard let writer else { return eventLoop.makeSucceededFuture(true) }
        return writer.drain(timeout: timeout)
    }

    /// The runtime's refusal reasons: an in-dialog request from another peer than the dialog's,
    /// a request over its sender's rate limit, a request in a dialog sent to the dialog's
    /// peer instead of a remote target it may not reach, and a request from a sender that is no
    /// configured peer on a side that takes only those (`accept: configured-peers`).
    static let runtimeRefusals = [
        "in_dialog_peer", "rate_limited", "target_redirected", "not_configured_peer", "transactions_full",
    ]

    /// Whether `side` takes requests from its configured peers only.
    private func onlyConfiguredPeers(_ side: GatewayConfiguration.Side) -> Bool {
        (side == .oma ? router.configuration.oma.accept : router.configuration.enterprise.accept) == .configuredPeers
    }

    private func refuse(_ reason: String) {
        rejectedCount += 1
        refusalCounters[reason]?.increment()
    }

    /// `ownerChecked`: the shared store was asked who owns the dialog (``findOwner``).
    private func handle(
        _ incoming: SIPTransactionLayer.IncomingRequest, side: GatewayConfiguration.Side, ownerChecked: Bool = false
    ) {
        // Stopping to continue after the next start: unanswered, so the peers try again then.
        if keeping { return }
        let request = incoming.request
        let toTag = (try? request.headers.to)?.tag
        if toTag != nil, shared != nil, fenced() {
            // Maybe another node's dialog by now: held until this node knows (``reconcile(_:)``).
            if fencedRequests.count < Self.fencedLimit { fencedRequests.append((incoming, side)) }
            return
        }
        let now = NIODeadline.now()
        let arrival = FederationRouter.Arrival(
            side: side, source: incoming.received.source,
            certificateNames: incoming.received.peerCertificateNames)
        let peer = healthName(router.dialogPeer(for: arrival))
        let slot = metrics.slot(peer, side: side)
        nextID += 1
        let id = nextID
        servers[id] = (side, incoming.transaction, slot)
        let refusedBefore = rejectedCount
        if request.method == .notify || request.method == .benotify || request.method == .publish {
            relaying = (side, now)
        }
        defer {
            relaying = nil
            let rejected = rejectedCount != refusedBefore
            health.received(from: peer, side: side.rawValue, rejected: rejected, now: now)
            // Handled again once the shared store said who owns its dialog: arrived once.
            if !ownerChecked { metrics.requestReceived(slot) }
            if rejected { metrics.requestRejected(slot) }
        }
        if !ownerChecked, onlyConfiguredPeers(side), router.peerIndex(at: arrival.source, side: side) == nil {
            // `accept: configured-peers` (docs/security.md, "Who may send"): before any other work.
            refuse("not_configured_peer")
            return answerUnlessBENOTIFY(id, request, status: 403, reason: "Not A Configured Peer")
        }
        if let toTag {
            handleInDialog(incoming, id: id, side: side, arrival: arrival, toTag: toTag, ownerChecked: ownerChecked)
        } else {
            handleOutOfDialog(incoming, id: id, side: side, arrival: arrival)
        }
    }

    /// A request inside a dialog (it has a To tag): held to the sender's rate limit, then to
    /// the node and the peer that own the dialog, and taken by the core.
    private func handleInDialog(
        _ incoming: SIPTransactionLayer.IncomingRequest, id: GatewayCore.ServerRequestID,
        side: GatewayConfiguration.Side, arrival: FederationRouter.Arrival, toTag: String, ownerChecked: Bool
    ) {
        let request = incoming.request
        // Cheap checks before expensive ones: the sender's rate limit before any look-up in the
        // shared store (docs/security.md, "Cheap checks first").
        if !ownerChecked, !router.allow(arrival, now: .now()) {
            refuse("rate_limited")
            answerUnlessBENOTIFY(id, request, status: 503, reason: "Service Unavailable", headers: [(.retryAfter, "1")])
            return
        }
        let owner = core.dialogOwner(of: request, toTag: toTag)
        if !ownerChecked, let shared, owner == nil {
            // Not this node's dialog: maybe another node's, which may have stopped. A dialog the
            // store named nobody's a moment ago is answered 481 without asking again, and at most
            // ``maxOwnerLookups`` questions are open at once.
            let key = (request.headers.callID ?? "") + "\u{0}" + toTag
            if !unknownDialogs.contains(key, now: .now()) {
                guard ownerLookups < Self.maxOwnerLookups else {
                    refuse("rate_limited")
                    answerUnlessBENOTIFY(
                        id, request, status: 503, reason: "Service Unavailable", headers: [(.retryAfter, "1")])
                    return
                }
                servers[id] = nil
                return findOwner(incoming, side: side, shared: shared, key: key)
            }
        }
        // A request inside a dialog is held to the dialog's peer and counts against that
        // peer's rate limit; a dialog with no peer recorded admits nothing; one that names no
        // dialog is answered 481 by the core (RFC 6665 §4.1.3, RFC 3261 §12.2.2).
        if let owner, !(owner.peer.map { router.admits(arrival, into: $0) } ?? false) {
            let peer = owner.peer.map { router.name(of: $0) } ?? "no peer"
            refuse("in_dialog_peer")
            logger.notice(
                "refused \(request.method) in a dialog of \(peer) from \(arrival.source) on the \(side.rawValue) side",
                metadata: [
                    "call-id": "\(request.headers.callID ?? "")", "method": "\(request.method)",
                    "side": "\(side.rawValue)", "peer": "\(peer)", "source": "\(arrival.source)", "status": "403",
                ])
            answerUnlessBENOTIFY(id, request, status: 403, reason: "Not Dialog Peer")
            return
        }
        if ContentIndirection.isIndirect(request), request.method == .notify || request.method == .publish {
            // The content is fetched first; the dialog is looked up again when it is there.
            return follow(request, id: id, side: side, peer: healthName(router.dialogPeer(for: arrival))) {
                [self] followed in
                receiveInDialog(followed, id: id, side: side, owner: core.dialogOwner(of: followed, toTag: toTag))
            }
        }
        receiveInDialog(request, id: id, side: side, owner: owner)
        finishIfUnanswered(id, request)
    }

    /// The core takes a request inside the dialog of `owner`; without one, it answers 481.
    private func receiveInDialog(
        _ request: SIPRequest, id: GatewayCore.ServerRequestID, side: GatewayConfiguration.Side,
        owner: (context: GatewayCore.Context, peer: DialogPeer?)?
    ) {
        if let owner {
            perform(core.receive(request, id: id, in: owner.context, now: .now()))
        } else {
            perform(core.receive(request, id: id, from: side, watcher: nil, now: .now()))
        }
    }

    /// A request outside any dialog: refused while stopping or while the store cannot keep a new
    /// dialog, else routed (``FederationRouter/route(_:arrival:now:)``) and, unless rejected,
    /// taken by the core.
    private func handleOutOfDialog(
        _ incoming: SIPTransactionLayer.IncomingRequest, id: GatewayCore.ServerRequestID,
        side: GatewayConfiguration.Side, arrival: FederationRouter.Arrival
    ) {
        let request = incoming.request
        if stopping {
            rejectedCount += 1
            answer(
                id,
                SIPResponse(replyingTo: request, statusCode: 503, toTag: incoming.toTag, headers: [(.retryAfter, "30")])
            )
            return
        }
        if let writer, !writer.available || storeOutages.map({ $0.load(ordering: .relaxed) > 0 }) == true {
            // A new dialog could not be kept (docs/state.md, "When the store is unavailable").
            rejectedCount += 1
            answer(
                id,
                SIPResponse(
                    replyingTo: request, statusCode: 503, reasonPhrase: "State Store Unavailable",
                    toTag: incoming.toTag,
                    headers: [(.retryAfter, "10")]))
            return
        }
        switch router.route(request, arrival: arrival, now: .now()) {
        case .reject(let status, let reason, let headers):
            rejectedCount += 1
            if status == 503 { refusalCounters["rate_limited"]?.increment() }
            logger.info(
                "rejected \(request.method) \(request.uri): \(status) \(reason)",
                metadata: [
                    "call-id": "\(request.headers.callID ?? "")", "method": "\(request.method)",
                    "side": "\(side.rawValue)",
                    "source": "\(arrival.source)", "status": "\(status)",
                ])
            answer(
                id,
                SIPResponse(
                    replyingTo: request, statusCode: status, reasonPhrase: reason, toTag: incoming.toTag,
                    headers: headers))
        case .forward(_, let watcher, let routed, _), .local(let watcher, let routed):
            let peer = router.dialogPeer(for: arrival)
            if ContentIndirection.isIndirect(routed), request.method == .notify || request.method == .publish {
                return follow(routed, id: id, side: side, peer: healthName(peer)) { [self] followed in
                    perform(core.receive(followed, id: id, from: side, watcher: watcher, peer: peer, now: .now()))
                }
            }
            perform(core.receive(routed, id: id, from: side, watcher: watcher, peer: peer, now: .now()))
        }
    }

    // MARK: - Content indirection (RFC 4483; docs/flows.md, "Content indirection")

    /// Follows the reference `request` carries (after the cheap checks: the sender, its rate, the
    /// dialog's peer) and hands the request with its content to `deliver`, on the loop. Refused
    /// with 415 from the enterprise side, without a content server, or for a reference
    /// elsewhere (RFC 4483 §5.3); 503 while the sender's share of fetches is taken; 502 or 504
    /// when the content server gave no content.
    private func follow(
        _ request: SIPRequest, id: GatewayCore.ServerRequestID, side: GatewayConfiguration.Side, peer: String,
        deliver: @escaping (SIPRequest) -> Void
    ) {
        let reference: ExternalBodyReference
        switch side == .oma ? contentIndirection?.reference(in: request) : nil {
        case .success(let r): reference = r
        case .failure(let error):
            contentIndirection?.count("followed", error)
            return indirectionFailed(request, id: id, error)
        case nil:
            return indirectionFailed(request, id: id, .refused("references are followed from the OMA side only"))
        }
        guard let indirection = contentIndirection, following.total < Self.followLimit,
            following.byPeer[peer, default: 0] < Self.followLimitPerPeer
        else {
            refuse("rate_limited")
            return answer(
                id, SIPResponse(replyingTo: request, statusCode: 503, headers: [(.retryAfter, "1")]))
        }
        following.total += 1
        following.byPeer[peer, default: 0] += 1
        let arrived = NIODeadline.now()
        eventLoop.makeFutureWithTask { await indirection.follow(reference, in: request) }.whenSuccess { [self] result in
            following.total -= 1
            following.byPeer[peer, default: 1] -= 1
            if following.byPeer[peer] == 0 { following.byPeer[peer] = nil }
            indirection.count("followed", result.failure)
            guard servers[id] != nil else { return }
            switch result {
            case .failure(let error):
                indirectionFailed(request, id: id, error)
            case .success(let followed):
                relaying = (side, arrived)
                deliver(followed)
                relaying = nil
            }
        }
    }

    private func indirectionFailed(
        _ request: SIPRequest, id: GatewayCore.ServerRequestID, _ error: ContentIndirectionError
    ) {
        logger.warning(
            "\(request.method) with content indirection not taken: \(error.reason)",
            metadata: ["call-id": "\(request.headers.callID ?? "")", "status": "\(error.status)"])
        var headers = SIPHeaders()
        if error.status == 415 {
            // RFC 4483 §5.3: Accept lists what is taken; message/external-body only when it
            // could have been followed.
            let types = SIPUASCoreConfiguration.presenceEvents.defaultBodyTypes
            headers.append(
                .accept,
                (contentIndirection?.server == nil ? types : types + [ContentIndirection.mediaType])
                    .joined(separator: ", "))
        }
        answer(
            id,
            SIPResponse(
                replyingTo: request, statusCode: error.status, reasonPhrase: Self.reason(error.status), headers: headers
            ))
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 415: "Unsupported Media Type"
        case 502: "Bad Gateway"
        default: "Server Time-out"
        }
    }

    /// Whether a NOTIFY to `target` is offered as a reference instead: it is too large for
    /// UDP with no TCP to move it to (RFC 3261 §18.1.1), `content-server: offer` is on, and the
    /// watcher takes references (RFC 4483 §5.1).
    private func offers(
        _ request: SIPRequest, layer: SIPTransactionLayer, to target: SIPTarget, context: GatewayCore.Context
    ) -> Bool {
        // The size last: it serializes the request.
        request.method == .notify && contentIndirection?.server?.offer == true && core.acceptsIndirectContent(context)
            && layer.exceedsUDP(request, to: target)
    }

    /// Stores the body of `request` on the content server and sends the reference in its place;
    /// the dialog's later NOTIFYs wait until then. When it cannot be stored the NOTIFY is sent
    /// as it is, and fails as it would have.
    private func offer(
        _ request: SIPRequest, callID: String, layer: SIPTransactionLayer, targets: ArraySlice<SIPTarget>,
        context: GatewayCore.Context
    ) {
        guard let indirection = contentIndirection else { return }
        offering[callID] = []
        eventLoop.makeFutureWithTask { await indirection.offer(request) }.whenSuccess { [self] result in
            indirection.count("offered", result.failure)
            var sending = request
            switch result {
            case .success(let offer):
                sending = offer.request
                if let replaced = offered.updateValue((offer.url, context), forKey: callID) {
                    eventLoop.makeFutureWithTask { await indirection.delete(replaced.url) }.whenComplete { _ in }
                }
                sweepOffered(indirection)
            case .failure(let error):
                logger.warning(
                    "NOTIFY not offered by content indirection: \(error.reason)",
                    metadata: ["call-id": "\(callID)", "status": "\(error.status)"])
            }
            var waiting = offering.removeValue(forKey: callID) ?? []
            if core.holds(context) {
                send(sending, layer: layer, targets: targets, context: context, offerChecked: true)
            }
            // In order; when one of them is offered in turn, the rest wait for it.
            while !waiting.isEmpty, offering[callID] == nil {
                let (next, layer, targets, context) = waiting.removeFirst()
                if core.holds(context) { send(next, layer: layer, targets: targets, context: context) }
            }
            if !waiting.isEmpty { offering[callID, default: []].append(contentsOf: waiting) }
        }
    }

    /// Deletes the objects offered in dialogs that ended, once the table doubled since last time.
    private func sweepOffered(_ indirection: ContentIndirection) {
        guard offered.count >= offeredSweepAt else { return }
        for (callID, entry) in offered where !core.holds(entry.context) {
            offered[callID] = nil
            eventLoop.makeFutureWithTask { await indirection.delete(entry.url) }.whenComplete { _ in }
        }
        offeredSweepAt = max(1_000, 2 * offered.count)
    }

    /// Answers a refused request, except a BENOTIFY, which takes no response ([MS-PRES]
    /// §3.4.5.1.4): it is dropped.
    private func answerUnlessBENOTIFY(
        _ id: GatewayCore.ServerRequestID, _ request: SIPRequest, status: Int, reason: String,
        headers: SIPHeaders = []
    ) {
        guard request.method != .benotify else {
            servers[id] = nil
            return
        }
        answer(id, SIPResponse(replyingTo: request, statusCode: status, reasonPhrase: reason, headers: headers))
    }

    /// A BENOTIFY takes no response ([MS-PRES] §3.4.5.1.4): its server transaction is closed here
    /// when the core gave none.
    private func finishIfUnanswered(_ id: GatewayCore.ServerRequestID, _ request: SIPRequest) {
        guard servers[id] != nil, request.method == .benotify else { return }
        servers[id] = nil
    }

    private func answer(_ id: GatewayCore.ServerRequestID, _ response: SIPResponse) {
        guard let server = servers.removeValue(forKey: id), let layer = layers[server.side] else { return }
        servers.releaseSparseCapacity()
        metrics.responseSent(server.peer, status: response.statusCode)
        do {
            try layer.respond(response, to: server.key)
        } catch {
            logger.debug("response \(response.statusCode) not sent: \(error)")
        }
    }

    /// Counts this shard in ``storeOutages`` while its writer finds the store unavailable.
    private func countOutage() {
        guard let storeOutages, let writer, countedOutage == writer.available else { return }
        countedOutage = !writer.available
        if countedOutage {
            storeOutages.wrappingIncrement(ordering: .relaxed)
        } else {
            storeOutages.wrappingDecrement(ordering: .relaxed)
        }
    }

    /// Carries out one step of the core: with a durable store, its changes are handed to the
    /// writer first, and its messages go out once they are written (``StateWriter``). Once this
    /// runtime stops to continue elsewhere (a restart that keeps every dialog, a drain), what
    /// the store holds is what the next process continues: a later step (a NOTIFY whose
    /// transaction fails as the listeners close, a timer) changes nothing there.
    private func perform(_ actions: [GatewayCore.Action]) {
        if keeping { return }
        if let shareWatcherReports, let reports = core.takeWatcherReportsForOtherShards() {
            shareWatcherReports(reports.reset, reports.updates)
        }
        guard let writer else { return execute(actions) }
        let changes = core.takeStateChanges(clock: Self.wallClock())
        execute(writer.admit(actions, changes: changes))
    }

    /// The deadlines of this process as wall-clock times, for the store's records.
    static func wallClock() -> WallClock {
        WallClock(now: .now(), wallNanoseconds: Int64(Date().timeIntervalSince1970 * 1_000_000_000))
    }

    private func execute(_ actions: [GatewayCore.Action]) {
        if keeping { return }
        let fenced = shared != nil && fenced()
        for action in actions {
            if fenced {
                switch action {
                case .respond, .send:
                    if fencedActions.count < Self.fencedLimit { fencedActions.append(action) }
                    continue
                default: break
                }
            }
            switch action {
            case .respond(let id, let response):
                answer(id, response)
            case .send(let request, let side, let context):
                send(request, side: side, context: context)
            case .schedule(let timer, let at):
                let key = timerKeys.key(for: timer)
                var slot = timerSlots[key] ?? TimerSlot()
                let queue = slot.schedule(at: at)
                timerSlots[key] = slot
                if let queue { timerQueue.add(key, at: queue, on: eventLoop) { [self] in self.timersFired() } }
            case .cancel(let timer):
                if let key = timerKeys.existingKey(for: timer), timerSlots.removeValue(forKey: key) != nil {
                    timerStopped(key)
                }
            case .writeListDocument(let uri, let body):
                writeListDocument(uri, body: body)
            case .xcapDocumentChanged(let presentity):
                xcapDocumentChanged?(presentity)
            case .upnpEvent(let change):
                presenceServiceChanged?(change)
            }
        }
        // GatewayCore.counts copies every OMA watch out of its table: taken after every message
        // it was 75 % of the gateway's CPU in the e2o relay benchmark with 2,000 watches
        // (scripts/bench). ``status`` and the gauges are refreshed at most every
        // `statusRefreshInterval` instead, so they lag the core by at most that.
        queueStatusRefresh(in: Self.statusRefreshInterval)
    }

    private func queueStatusRefresh(in delay: TimeAmount) {
        guard !statusRefreshQueued else { return }
        statusRefreshQueued = true
        eventLoop.scheduleTask(in: delay) { [self] in
            self.statusRefreshQueued = false
            self.publishStatus()
        }
    }

    private func timersFired() {
        let now = eventLoop.now
        for (deadline, key) in timerQueue.due(now: now) {
            guard var slot = timerSlots[key] else { continue }
            switch slot.came(deadline, now: now) {
            case .fire:
                timerSlots[key] = nil
                let timer = timerKeys.timer(for: key)
                timerStopped(key)
                if let timer { perform(core.fire(timer, now: now)) }
            case .requeue(let at):
                timerSlots[key] = slot
                timerQueue.add(key, at: at, on: eventLoop) { [self] in self.timersFired() }
            case .ignore:
                break
            }
        }
        timerQueue.rearm(on: eventLoop) { [self] in self.timersFired() }
    }

    /// After a timer stopped: a stopped timer's queue entry stays until its deadline (up to a
    /// subscription's lifetime), so once the queue holds far more entries than running timers
    /// the stale ones are dropped. (The slot table gives back what a burst left unused itself.)
    private func timerStopped(_ key: TimerKey) {
        timerKeys.release(key)
        if timerQueue.count > 2 * timerSlots.count + 4096 {
            timerQueue.removeAll { deadline, key in timerSlots[key]?.isQueued(at: deadline) != true }
        }
    }

    private func publishStatus() {
        let counts = core.counts
        published.withLockedValue {
            $0 = Status(
                running: !stopping, enterpriseWatches: counts.enterpriseWatches, omaLegs: counts.omaLegs,
                omaWatches: counts.omaWatches, enterpriseLegs: counts.enterpriseLegs,
                storeAvailable: writer?.available ?? true, storeUnavailableSince: writer?.unavailableSince)
        }
        active["enterprise_watchers"]?.record(counts.enterpriseWatches)
        active["oma_legs"]?.record(counts.omaLegs)
        active["oma_watchers"]?.record(counts.omaWatches)
        active["enterprise_legs"]?.record(counts.enterpriseLegs)
        active["winfo_watchers"]?.record(core.winfoWatchCount)
        active["mirrored_watchers"]?.record(core.mirroredWatcherCount)
        let refusals = core.refusals
        if refusals != refusalsRecorded {
            for ((reason, now), (_, before)) in zip(refusals.byReason, refusalsRecorded.byReason) where now > before {
                refusalCounters[reason]?.increment(by: Int64(now - before))
            }
            refusalsRecorded = refusals
        }
        var transactionsLive = 0
        var refusedWhileFull = 0
        for (side, gauges) in transactions {
            guard let layer = layers[side] else { continue }
            gauges.server.record(layer.serverTransactionCount)
            gauges.client.record(layer.clientTransactionCount)
            transactionsLive += layer.serverTransactionCount + layer.clientTransactionCount
            refusedWhileFull += layer.counters.refusedWhileFull
        }
        if refusedWhileFull > refusedWhileFullRecorded {
            refusalCounters["transactions_full"]?.increment(by: Int64(refusedWhileFull - refusedWhileFullRecorded))
            refusedWhileFullRecorded = refusedWhileFull
        }
        // Transactions also end on their own timers (RFC 3261 Timer J/K), with no message to
        // trigger a refresh: while any are live, the gauges are refreshed every second.
        if transactionsLive > 0 { queueStatusRefresh(in: .seconds(1)) }
    }

    private func send(_ request: SIPRequest, side: GatewayConfiguration.Side, context: GatewayCore.Context) {
        // A subscription started for a sender's request waits its turn past the sender's burst.
        if request.method == .subscribe, (try? request.headers.to)?.tag == nil,
            let sender = core.fanOutSender(of: context)
        {
            let now = NIODeadline.now()
            let limits = core.configuration.limits
            var pace =
                paced[sender]
                ?? PacedSender(
                    bucket: TokenBucket(rate: limits.fanOutRate, burst: Double(limits.fanOutBurst), now: now))
            if pace.isIdle, pace.bucket.take(now: now) {
                paced[sender] = pace
            } else {
                pace.waiting.append((request, side, context))
                paced[sender] = pace
                return schedulePacing()
            }
            if paced.count > Self.pacedSendersKept {
                paced = paced.filter { !$0.value.isIdle || !$0.value.bucket.isFull(now: now) }
            }
        }
        sendNow(request, side: side, context: context)
    }

    /// Senders whose pace is remembered while idle; past it the ones fully refilled are dropped.
    static let pacedSendersKept = 10_000

    private func schedulePacing() {
        guard !pacingScheduled else { return }
        pacingScheduled = true
        eventLoop.scheduleTask(in: .milliseconds(10)) { [self] in
            pacingScheduled = false
            let now = NIODeadline.now()
            var waiting = false
            for sender in paced.keys {
                guard var pace = paced[sender], !pace.isIdle else { continue }
                var due: [(SIPRequest, GatewayConfiguration.Side, GatewayCore.Context)] = []
                while let next = pace.next(now: now) { due.append(next) }
                paced[sender] = pace
                waiting = waiting || !pace.isIdle
                // Sent unless what it was for ended meanwhile.
                for (request, side, context) in due where core.holds(context) {
                    sendNow(request, side: side, context: context)
                }
            }
            if waiting { schedulePacing() }
        }
    }

    private func sendNow(_ request: SIPRequest, side: GatewayConfiguration.Side, context: GatewayCore.Context) {
        guard let layer = layers[side] else { return noRoute(request, context: context) }
        if request.method == .notify || request.method == .benotify { metrics.notifySent(side: side) }
        if let relaying, relaying.from != side,
            request.method == .notify || request.method == .benotify || request.method == .publish
                || request.method == .service
        {
            metrics.relayed(from: relaying.from, arrived: relaying.arrived, now: .now())
        }
        if (try? request.headers.to)?.tag != nil, let owner = core.peer(of: context),
            let target = dialogTarget(for: request, side: side, owner: owner)
        {
            return send(request, layer: layer, targets: [target], context: context)
        }
        if let target = directTarget(for: request, side: side) {
            return send(request, layer: layer, targets: [target], context: context)
        }
        // RFC 3263: look the next hop up, then send on the loop (or fail the request with 503).
        let uri = Self.nextHopURI(request)
        let resolve = self.resolve
        eventLoop.makeFutureWithTask { await resolve(uri, side) }.whenComplete { [self] result in
            // A DNS answer pointing at one of the gateway's own listeners would loop the request.
            guard case .success(let answer) = result,
                case let targets = answer.filter({ !self.router.localAddresses.contains($0.hostPort) }),
                !targets.isEmpty
            else { return self.noRoute(request, context: context) }
            let usable = self.failedTargets.usable(targets, now: .now())
            self.send(request, layer: layer, targets: usable[...], context: context)
        }
    }

    /// Writes an rls-services document for a list toward an OMA RLS, and gives the core the answer.
    private func writeListDocument(_ uri: String, body: [UInt8]?) {
        guard let write = listDocumentWriter else {
            logger.error("no XCAP writer for the list document \(uri)")
            return perform(core.listDocumentWritten(uri, status: nil, now: .now()))
        }
        eventLoop.makeFutureWithTask { await write(uri, body) }.whenSuccess { [self] status in
            if !(status.map { (200..<300).contains($0) || (body == nil && $0 == 404) } ?? false) {
                self.logger.warning(
                    "list document \(uri): \(status.map { "HTTP \($0)" } ?? "no answer"); its lists are subscribed per resource"
                )
            }
            self.perform(self.core.listDocumentWritten(uri, status: status, now: .now()))
        }
    }

    private func noRoute(_ request: SIPRequest, context: GatewayCore.Context) {
        sendFailures.increment()
        perform(
            core.receive(
                SIPResponse(replyingTo: request, statusCode: 503, reasonPhrase: "No Route"), to: request,
                context: context, now: .now()))
    }

    /// Sends `request` to the first of `targets`; when that one fails (a transport error, Timer F,
    /// or a 503 response: RFC 3263 §4.3) it is remembered as failed and the same request goes to
    /// the next one as a new transaction (the transaction layer gives it a new Via branch). The
    /// last target's outcome is the core's answer.
    private func send(
        _ request: SIPRequest, layer: SIPTransactionLayer, targets: ArraySlice<SIPTarget>,
        context: GatewayCore.Context, challenged: Bool = false, offerChecked: Bool = false
    ) {
        let side: GatewayConfiguration.Side = layers[.oma] === layer ? .oma : .enterprise
        let given = targets.count
        let targets = undrained(targets, for: request, side: side)
        guard let target = targets.first else {
            // None left but drained peers' (GatewayCore+Draining.swift): as if they had answered 503.
            guard given == 0 else { return drainedAway(request, context: context) }
            return noRoute(request, context: context)
        }
        if request.method == .subscribe, (try? request.headers.to)?.tag == nil {
            // A leg's dialog belongs to the peer its SUBSCRIBE reached.
            core.reached(router.dialogPeer(reached: target, side: side), for: context)
        }
        let rest = targets.dropFirst()
        if request.method == .benotify {
            // No response will come ([MS-PRES] §3.4.5.1.4): sent once, outside any transaction;
            // only a send that fails at once moves on to the next target.
            if layer.sendWithoutTransaction(request, to: target) { return }
            failed(target, request: request, reason: "not sent", next: rest.first)
            guard rest.isEmpty else { return send(request, layer: layer, targets: rest, context: context) }
            sendFailures.increment()
            return
        }
        if !offerChecked, request.method == .notify, !offering.isEmpty || contentIndirection?.server?.offer == true,
            let callID = request.headers.callID
        {
            // Content indirection (RFC 4483): behind an offer under way in the dialog, or offered.
            if offering[callID] != nil {
                return offering[callID, default: []].append((request, layer, targets, context))
            }
            if offers(request, layer: layer, to: target, context: context) {
                return offer(request, callID: callID, layer: layer, targets: targets, context: context)
            }
        }
        // What goes to this target: with its peer's credentials and asserted identity (RFC 3261
        // §22.2, RFC 3325 §9.1), which a failover to another target must not carry.
        var prepared = request
        let sent = NIODeadline.now()
        let outgoingPeer = prepare(&prepared, to: target, side: side)
        let outgoing = prepared
        do {
            try layer.send(outgoing, to: target) { [self] event in
                guard event.response.statusCode >= 200 else { return }
                self.answered(
                    event, to: request, sent: (outgoing, at: sent, to: target, peer: outgoingPeer), rest: rest,
                    layer: layer, context: context, challenged: challenged)
            }
        } catch {
            failed(target, request: request, reason: "not sent: \(error)", next: rest.first)
            if !rest.isEmpty { return send(request, layer: layer, targets: rest, context: context) }
            sendFailures.increment()
            perform(
                core.receive(
                    SIPResponse(replyingTo: request, statusCode: 503), to: request, context: context, now: .now()))
        }
    }

    /// The final answer to `request`, sent as `sent.request` to `sent.target`: the peer's health
    /// and the metrics; a challenge answered once (``answerChallenge(_:to:peer:target:layer:context:)``);
    /// a failed target left for the next (RFC 3263 §4.3); else the core's answer.
    private func answered(
        _ event: SIPClientTransactionEvent, to request: SIPRequest,
        sent: (request: SIPRequest, at: NIODeadline, to: SIPTarget, peer: Int?), rest: ArraySlice<SIPTarget>,
        layer: SIPTransactionLayer, context: GatewayCore.Context, challenged: Bool
    ) {
        let side: GatewayConfiguration.Side = layers[.oma] === layer ? .oma : .enterprise
        let response = event.response
        let reason: String?
        switch event {
        case .timeout: reason = "no answer (408)"
        case .transportError(let r): reason = "transport error (503): \(r.reasonPhrase)"
        case .response(let r): reason = r.statusCode == 503 ? "503 \(r.reasonPhrase)" : nil
        }
        let failure = reason ?? (response.statusCode < 300 ? nil : "\(response.statusCode) \(response.reasonPhrase)")
        let peer = healthName(router.dialogPeer(reached: sent.to, side: side))
        let now = NIODeadline.now()
        health.answered(
            by: peer, side: side.rawValue, failure: failure.map { "\(request.method): \($0)" }, at: Date(), now: now)
        measure(event, of: request, side: side, peer: peer, sent: sent.at, now: now)
        if let index = sent.peer, case .response = event, response.statusCode == 401 || response.statusCode == 407 {
            if !challenged,
                answerChallenge(
                    response, to: sent.request, peer: index, target: sent.to, layer: layer, context: context)
            {
                return
            }
            authenticationFailed(response, of: request, peer: index, resent: challenged)
        }
        if let reason {
            failed(sent.to, request: request, reason: reason, next: rest.first)
            if !rest.isEmpty { return send(request, layer: layer, targets: rest, context: context) }
        }
        perform(core.receive(response, to: request, context: context, now: .now()))
    }

    // MARK: - Credentials and asserted identity (docs/security.md, "Credentials")

    /// Readies a SUBSCRIBE or PUBLISH for `target`'s configured peer: toward a `trusted` peer on
    /// the OMA side, `P-Asserted-Identity` with the From identity (the watcher or publisher the
    /// gateway sends it for, RFC 3325 §9.1); toward a peer with credentials, those answering its
    /// last challenge (RFC 7616 §3.4, `nc` one higher). Gives that peer's position when it has
    /// credentials. Any other request (a relayed NOTIFY) costs one comparison here.
    private func prepare(_ request: inout SIPRequest, to target: SIPTarget, side: GatewayConfiguration.Side) -> Int? {
        guard request.method == .subscribe || request.method == .publish, authentication.isActive else { return nil }
        guard let index = router.peerIndex(at: target, side: side).map(Int.init) else { return nil }
        let peer = router.configuration.peers[index]
        if side == .oma, peer.trusted, !request.headers.contains(Self.assertedIdentity),
            let from = (try? request.headers.from)?.uri
        {
            request.headers.append(Self.assertedIdentity, SIPAddress(uri: from).description)
        }
        guard authentication.digest.hasCredentials(index) else { return nil }
        authentication.digest.authorize(&request, peer: index)
        return index
    }

    static let assertedIdentity: SIPHeaderName = "P-Asserted-Identity"

    /// Answers a 401 or 407 from the peer at `index` to `sent` (RFC 3261 §22.2): the same request
    /// with CSeq one higher to the same target, its credentials added when it is sent, once; the
    /// core told of it (``GatewayCore/resent(_:for:)``). False: not answered (a challenge
    /// refused, or a request the core does not resend), and the response is a failure as before.
    private func answerChallenge(
        _ response: SIPResponse, to sent: SIPRequest, peer index: Int, target: SIPTarget,
        layer: SIPTransactionLayer, context: GatewayCore.Context
    ) -> Bool {
        switch authentication.digest.answer(response, to: sent, peer: index) {
        case .failure(let refusal):
            logger.warning(
                "\(sent.method) \(sent.uri): challenge of \(router.configuration.peers[index].name) not answered: \(refusal)"
            )
            return false
        case .success(let again):
            guard core.resent(again, for: context) else {
                logger.warning("\(sent.method) \(sent.uri): challenged, and not a request the gateway sends again")
                return false
            }
            // The new CSeq goes to the store now, not with the answer (a restart numbers on from
            // it); the request itself is not held back for the write.
            perform([])
            send(again, layer: layer, targets: [target], context: context, challenged: true)
            return true
        }
    }

    /// A 401 or 407 that ends the request: credentials refused (a second challenge) or a
    /// challenge not answered. Counted per peer and logged, never with the credentials.
    private func authenticationFailed(_ response: SIPResponse, of request: SIPRequest, peer index: Int, resent: Bool) {
        let name = router.configuration.peers[index].name
        authentication.failures[name]?.increment()
        if resent {
            authentication.digest.forget(index)
            logger.warning(
                "\(request.method) \(request.uri): \(name) refused the credentials for realm \(authentication.digest.realm(of: index) ?? "?") (\(response.statusCode))",
                metadata: ["peer": "\(name)", "status": "\(response.statusCode)", "method": "\(request.method)"])
        }
    }

    /// Counts a final answer to a request the gateway sent to `peer` on `side`: its class (a
    /// response that came), the peer's health (``RelayMetrics/peerAnswered(_:up:)``), its time.
    private func measure(
        _ event: SIPClientTransactionEvent, of request: SIPRequest, side: GatewayConfiguration.Side, peer: String,
        sent: NIODeadline, now: NIODeadline
    ) {
        let slot = metrics.slot(peer, side: side)
        switch event {
        case .response(let response):
            metrics.responseReceived(slot, status: response.statusCode)
            metrics.peerAnswered(slot, up: response.statusCode != 503)
        case .timeout, .transportError:
            metrics.peerAnswered(slot, up: false)
        }
        metrics.responseTime(side: side, method: request.method, sent: sent, now: now)
    }

    /// `targets` without the drained peers' (GatewayCore+Draining.swift) when `request` would
    /// make a new dialog: a dialog-creating SUBSCRIBE. Requests inside a dialog go where they went.
    private func undrained(_ targets: ArraySlice<SIPTarget>, for request: SIPRequest, side: GatewayConfiguration.Side)
        -> ArraySlice<SIPTarget>
    {
        guard !core.drainedPeers.isEmpty, request.method == .subscribe, (try? request.headers.to)?.tag == nil else {
            return targets
        }
        let open = targets.filter { !core.isDrained(router.dialogPeer(reached: $0, side: side)) }
        if open.count < targets.count {
            logger.info("\(request.method) \(request.uri): not sent to a drained peer (\(targets.count - open.count))")
        }
        return open[...]
    }

    /// A new dialog's request whose every target is a drained peer's: not sent, answered 503 for
    /// the core.
    private func drainedAway(_ request: SIPRequest, context: GatewayCore.Context) {
        perform(
            core.receive(
                SIPResponse(replyingTo: request, statusCode: 503, reasonPhrase: "Peer Draining"), to: request,
                context: context, now: .now()))
    }

    private func failed(_ target: SIPTarget, request: SIPRequest, reason: String, next: SIPTarget?) {
        failedTargets.record(target, now: .now())
        if let next {
            failovers.increment()
            logger.notice("\(request.method) \(request.uri) to \(target): \(reason); trying \(next) (RFC 3263 §4.3)")
        } else {
            logger.notice("\(request.method) \(request.uri) to \(target): \(reason)")
        }
    }

    /// Where a request goes without a DNS lookup: its first Route, else its Request-URI, when the
    /// host is an IP literal (with its `transport` parameter); else the side's fixed next hop when
    /// that is an IP literal; nil when RFC 3263 resolution is needed.
    func directTarget(for request: SIPRequest, side: GatewayConfiguration.Side) -> SIPTarget? {
        if let direct = SIPEventRouting.literalTarget(Self.nextHopURI(request)) { return direct }
        let hop = side == .enterprise ? core.configuration.enterprise.nextHop : core.configuration.oma.nextHop
        if case .uri(let uri) = hop { return SIPEventRouting.literalTarget(uri) }
        return nil
    }

    /// Where a request inside a dialog of `owner` goes when its remote target (or Route) may not
    /// be reached as written; nil when it may (a domain the side serves, resolved as usual). A
    /// literal address goes there only when ``FederationRouter/mayReach(_:in:)`` allows it; a
    /// TLS dialog's request whose target is not TLS (a Contact with `transport=tcp`, RFC 5630
    /// §3.1.1) and any other target go to the dialog's peer itself, over the dialog's transport:
    /// for an unconfigured peer the address its requests came from, so a watcher's Contact can
    /// aim the gateway's NOTIFYs and retransmissions only at the watcher.
    func dialogTarget(for request: SIPRequest, side: GatewayConfiguration.Side, owner: DialogPeer) -> SIPTarget? {
        let uri = Self.nextHopURI(request)
        if let literal = SIPEventRouting.literalTarget(uri, defaultKind: owner.transport) {
            if router.mayReach(literal, in: owner) { return literal }
        } else {
            let secure =
                owner.transport != .tls || uri.scheme == .sips
                || uri.parameters.value("transport")?.lowercased() == "tls"
            if secure, router.servingSide(of: uri.host) == side { return directTarget(for: request, side: side) }
            let hop = side == .enterprise ? core.configuration.enterprise.nextHop : core.configuration.oma.nextHop
            if case .uri(let hopURI) = hop, let fixed = SIPEventRouting.literalTarget(hopURI),
                router.mayReach(fixed, in: owner)
            {
                return fixed
            }
        }
        refusalCounters["target_redirected"]?.increment()
        return owner.target
    }

    // MARK: - Runtime control (the admin API)

    /// The configured peers and the sides' literal next hops, for ``PeerHealthTable``.
    static func knownPeers(_ configuration: GatewayConfiguration) -> [(name: String, side: String)] {
        var peers = configuration.peers.map { ($0.name, $0.side.rawValue) }
        for side in GatewayConfiguration.Side.allCases {
            let hop = side == .enterprise ? configuration.enterprise.nextHop : configuration.oma.nextHop
            guard case .uri(let uri) = hop, let target = SIPEventRouting.literalTarget(uri),
                !configuration.peers.contains(where: {
                    $0.side == side && $0.host == target.host && ($0.port ?? target.port) == target.port
                })
            else { continue }
            peers.append((target.host, side.rawValue))
        }
        return peers
    }

    /// A configured peer's name, else the address (without port: an unconfigured UDP sender's
    /// port changes with every socket).
    private func healthName(_ peer: DialogPeer) -> String {
        peer.peer == nil ? peer.host : router.name(of: peer)
    }

    /// The bridged subscriptions (``GatewayCore/bridgedSubscriptions(uri:side:now:)``).
    public func bridgedSubscriptions(uri: String?, side: GatewayConfiguration.Side?) -> [GatewayCore
        .BridgedSubscription]
    {
        eventLoop.preconditionInEventLoop()
        return core.bridgedSubscriptions(uri: uri, side: side, now: .now())
    }

    /// A page of them and their number (``GatewayCore/bridgedSubscriptions(uri:side:now:offset:limit:)``).
    public func bridgedSubscriptions(uri: String?, side: GatewayConfiguration.Side?, offset: Int, limit: Int) -> (
        total: Int, page: [GatewayCore.BridgedSubscription]
    ) {
        eventLoop.preconditionInEventLoop()
        return core.bridgedSubscriptions(uri: uri, side: side, now: .now(), offset: offset, limit: limit)
    }

    /// Ends a bridged subscription; false when there is none with `id`.
    public func endSubscription(_ id: String, reason: String) -> Bool {
        eventLoop.preconditionInEventLoop()
        guard let actions = core.endSubscription(id, reason: reason, now: .now()) else { return false }
        logger.notice("subscription \(id) ended by the operator (\(reason))")
        perform(actions)
        return true
    }

    /// Every peer's and next hop's health, and whether it is drained.
    public func peerHealth() -> [PeerHealth] {
        eventLoop.preconditionInEventLoop()
        var report = health.report(now: .now())
        for index in report.indices { report[index].drained = core.drainedPeers.contains(report[index].name) }
        return report
    }

    /// Drains the peer `name` (one ``peerHealth()`` lists) or ends its draining
    /// (GatewayCore+Draining.swift); nil when no such peer is known.
    public func drain(_ name: String, _ drained: Bool) -> PeerHealth? {
        eventLoop.preconditionInEventLoop()
        guard health.entries[name] != nil else { return nil }
        if core.drainedPeers.contains(name) != drained {
            core.setDrained(name, drained)
            health.pin(name, drained)
            logger.notice("peer \(name) \(drained ? "drained: no new dialog from or toward it" : "no longer drained")")
        }
        return peerHealth().first { $0.name == name }
    }

    /// Applies a new configuration without dropping a dialog
    /// (``GatewayCore/reconfigure(_:mapper:board:now:)``): a new router (partners, peers, rate
    /// limits, trust), the core's policies and peers; with several shards, `board` is the new
    /// configuration's, shared by them.
    public func reconfigure(_ configuration: GatewayConfiguration, mapper: PresenceMapper, board: PeerBoard? = nil) {
        eventLoop.preconditionInEventLoop()
        router = FederationRouter(
            configuration: configuration, localAddresses: router.localAddresses, localSentBy: router.localSentBy)
        router.board = board
        health.configure(Self.knownPeers(configuration))
        metrics.configure(Self.knownPeers(configuration))
        authentication = authentication.reconfigured(configuration)
        perform(core.reconfigure(configuration, mapper: mapper, board: board, now: .now()))
    }

    /// One action of the UPnP Presence:1 service (flow 5, ``GatewayPresenceBackend``): `step`
    /// runs on the core, and what it returns is carried out as any step's.
    func presenceService<T>(_ step: (inout GatewayCore, NIODeadline) throws -> (T, [GatewayCore.Action])) rethrows
        -> T
    {
        eventLoop.preconditionInEventLoop()
        let (value, actions) = try step(&core, .now())
        perform(actions)
        return value
    }

    /// Serves new resource lists (``GatewayCore/replaceResourceLists(_:awaiting:now:)``).
    public func replaceResourceLists(_ lists: [String: [String]], awaiting: Bool) {
        eventLoop.preconditionInEventLoop()
        perform(core.replaceResourceLists(lists, awaiting: awaiting, now: .now()))
    }

    /// Applies a presentity's new pres-rules document (``GatewayCore/replacePresRules(_:of:now:)``).
    public func replacePresRules(_ rules: PresRules, of presentity: String) {
        eventLoop.preconditionInEventLoop()
        perform(core.replacePresRules(rules, of: presentity, now: .now()))
    }

    static func nextHopURI(_ request: SIPRequest) -> SIPURI {
        (try? request.headers.route)?.first?.uri ?? request.uri
    }
}

// MARK: - Several nodes (docs/state.md)

extension GatewayRuntime {
    /// Renews this node's lease and takes over the dialogs of nodes whose lease ran out, every
    /// third of the lease. A lease another process took (this node's name started elsewhere) stops
    /// this one: it answers and sends nothing more, so no watcher gets a NOTIFY twice.
    private func keepLease(_ shared: any SharedStateStore) {
        let interval = TimeAmount.milliseconds(Int64(shared.leaseSeconds) * 1000 / 3)
        leaseRenewal = eventLoop.scheduleRepeatedAsyncTask(initialDelay: .zero, delay: interval) { [self] task in
            let asked = NIODeadline.now()
            return eventLoop.makeFutureWithTask { () async throws -> (Bool, [StateRecord]) in
                let kept = try await shared.renewNodeLease()
                return (kept, kept ? try await shared.takeOverExpired() : [])
            }.map { [self] kept, records in
                guard kept else {
                    logger.critical(
                        "another process took this node's name in \(shared.location): this one stops answering and sending"
                    )
                    keeping = true
                    published.withLockedValue { $0.running = false }
                    task.cancel()
                    return
                }
                writer?.storeAnswered()
                let lapsed = asked >= leaseHeldUntil
                leaseHeldUntil = asked + .seconds(Int64(shared.leaseSeconds))
                if lapsed || reconciling { reconcile(shared) }
                let mine = handOut(records)
                if !mine.isEmpty { adopt(mine) }
            }.recover { [self] error in
                // Known before a write fails: new subscriptions get 503 from now on.
                writer?.storeFailed(error)
                logger.error("cannot renew this node's lease in \(shared.location): \(error); existing pairs go on")
            }
        }
    }

    /// What ``drain(timeout:)`` fails with, its description the reason.
    public struct DrainError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The first half of handing every dialog of this node to the other nodes sharing the store
    /// (README, "Runtime control"; docs/state.md, "Several nodes"), on each shard: from now on it
    /// answers and sends nothing and no longer renews its lease, and every change is written.
    /// The future says whether the store took them all within `timeout`; fails when the store is
    /// not shared. The second half, once every shard is quiet, is ``handOver(_:until:)``.
    public func quietForDrain(timeout: TimeAmount) -> EventLoopFuture<Bool> {
        eventLoop.preconditionInEventLoop()
        guard shared != nil, let writer else {
            return eventLoop.makeFailedFuture(
                DrainError(description: "only a node of a shared store (store: postgres) drains"))
        }
        stopping = true
        keeping = true
        recovery.stop()
        publishStatus()
        // A renewal under way ends before the lease does: it would extend it again.
        let renewalStopped = eventLoop.makePromise(of: Void.self)
        if let leaseRenewal { leaseRenewal.cancel(promise: renewalStopped) } else { renewalStopped.succeed() }
        leaseRenewal = nil
        return renewalStopped.futureResult.flatMap { [self] in writer.drain(timeout: timeout) }
    }

    /// The second half of a drain, once every shard of this node is quiet
    /// (``quietForDrain(timeout:)``) and its listeners are closed: ends the lease at once, so the
    /// other nodes take its records over at their next renewal (a third of their lease) instead
    /// of when the lease would have run out, continuing them as after a failover. Returns the
    /// number of records handed over once the store lists none as this node's; fails when that
    /// takes past `deadline`.
    public static func handOver(_ shared: any SharedStateStore, until deadline: NIODeadline) async throws -> Int {
        let held = try await shared.heldRecordIDs().count
        guard try await shared.releaseNodeLease() else {
            throw DrainError(description: "another process holds this node's name")
        }
        while NIODeadline.now() < deadline {
            if try await shared.heldRecordIDs().isEmpty { return held }
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        throw DrainError(
            description: "no other node took the records over in time: they are taken over when one renews its lease")
    }

    /// Whether this node is fenced: its lease may have lapsed (``leaseHeldUntil``), or it is
    /// still finding out what another node took over meanwhile.
    private func fenced() -> Bool {
        guard reconciling || NIODeadline.now() >= leaseHeldUntil else { return false }
        if !reconciling, let shared {
            reconciling = true
            logger.error(
                "the lease of node \(shared.node) may have lapsed: answering and sending nothing until it is renewed"
            )
        }
        return true
    }

    /// After the lease lapsed and was renewed: lets go, without a message, of every dialog the
    /// store no longer lists as this node's (another node took it over meanwhile), then lifts the
    /// fence and handles what waited behind it. A store that does not answer keeps the fence up
    /// until the next renewal.
    private func reconcile(_ shared: any SharedStateStore) {
        reconciling = true
        guard !askingHeld else { return }
        askingHeld = true
        eventLoop.makeFutureWithTask { try await shared.heldRecordIDs() }.whenComplete { [self] result in
            askingHeld = false
            guard case .success(let held) = result, !keeping else {
                if case .failure(let error) = result { logger.error("still fenced: \(error)") }
                return
            }
            let lost = core.dialogRecordIDs().filter { !held.contains($0) }
            if !lost.isEmpty {
                logger.notice("\(lost.count) records were taken over by another node while this one was fenced")
                execute(core.disown(lost))
            }
            reconciling = false
            logger.notice("lease of node \(shared.node) renewed: the fence is lifted")
            let actions = fencedActions.filter {
                if case .send(_, _, let context) = $0 { return core.holds(context) }
                return true
            }
            let requests = fencedRequests
            fencedActions = []
            fencedRequests = []
            execute(actions)
            for (incoming, side) in requests { handle(incoming, side: side) }
        }
    }

    /// Of the records this shard took over, its own share: with several shards, the others'
    /// shares are handed to them (``handOutTakenOver``).
    private func handOut(_ records: [StateRecord]) -> [StateRecord] {
        guard !records.isEmpty, let handOutTakenOver else { return records }
        return handOutTakenOver(records)
    }

    /// Records of a node whose lease ran out that another shard took over, this shard's share
    /// (``handOutTakenOver``): continued as ``adopt(_:)`` says, once this runtime has started.
    func adoptTakenOver(_ records: [StateRecord]) {
        eventLoop.preconditionInEventLoop()
        guard started else {
            earlyTakenOver += records
            return
        }
        guard !keeping else { return }
        adopt(records)
    }

    /// Continues the dialogs of a node that stopped, as after a restart: each subscription is
    /// refreshed from here (with this node's Contact, a target refresh), and each watcher is sent
    /// the current state once it is known again. Record by record: one that does not decode is
    /// left out and reported, and every other one is continued.
    private func adopt(_ records: [StateRecord]) {
        let now = NIODeadline.now()
        let (actions, unreadable) = core.restoreReadable(
            records, clock: Self.wallClock(), now: now, recoveryRate: recoveryRate)
        logger.notice(
            "took over \(records.count - unreadable.count) records of a node whose lease ran out")
        for failure in unreadable {
            logger.error("cannot take over \(failure); the other records are continued")
        }
        perform(recovery.follow(actions, pacedFrom: now, now: .now()))
    }

    /// A request in a dialog this node does not hold: its owner is looked up. A live owner (the
    /// front sent it here while that node was briefly unreachable) means 503 with Retry-After
    /// until its lease ends; an owner whose lease ran out is taken over now and the request
    /// handled; no owner at all is the core's 481.
    private func findOwner(
        _ incoming: SIPTransactionLayer.IncomingRequest, side: GatewayConfiguration.Side, shared: any SharedStateStore,
        key: String
    ) {
        let request = incoming.request
        let callID = request.headers.callID ?? ""
        let tag = (try? request.headers.to)?.tag ?? ""
        ownerLookups += 1
        eventLoop.makeFutureWithTask {
            () async throws -> (owner: (node: String, leaseRemaining: Double)?, taken: [StateRecord]) in
            let owner = try await shared.dialogOwner(callID: callID, localTag: tag)
            guard let owner, owner.leaseRemaining <= 0 else { return (owner, []) }
            return (owner, self.handOut(try await shared.takeOverExpired()))
        }.whenComplete { [self] result in
            ownerLookups -= 1
            guard !keeping else { return }
            if case .success((nil, _)) = result { unknownDialogs.insert(key, now: .now()) }
            switch result {
            case .success((let owner?, _)) where owner.node == shared.node && core.dialogOwner(of: request) == nil:
                // Listed as this node's yet not held (a record it could not read when taking it
                // over): gone, as far as this node can tell (RFC 6665 §4.1.3).
                unknownDialogs.insert(key, now: .now())
                handle(incoming, side: side, ownerChecked: true)
            case .success((let owner?, let taken))
            where owner.leaseRemaining > 0 || taken.isEmpty && core.dialogOwner(of: request) == nil:
                guard request.method != .benotify else { return }
                let seconds = max(1, Int(owner.leaseRemaining.rounded(.up)))
                respondStatelessly(
                    incoming, side: side, status: 503, reason: "Dialog Held By Another Node",
                    headers: [(.retryAfter, String(seconds))])
            case .success((_, let taken)):
                if !taken.isEmpty { adopt(taken) }
                handle(incoming, side: side, ownerChecked: true)
            case .failure(let error):
                logger.error("cannot ask \(shared.location) who owns dialog \(callID): \(error)")
                guard request.method != .benotify else { return }
                respondStatelessly(
                    incoming, side: side, status: 503, reason: "State Store Unavailable", headers: [(.retryAfter, "5")])
            }
        }
    }

    /// The most questions to the shared store about unknown dialogs open at once: past them an
    /// in-dialog request for a dialog this node does not hold gets 503 with Retry-After, so that
    /// a flood of invented dialogs cannot keep the store from the requests that need it.
    static let maxOwnerLookups = 64

    private func respondStatelessly(
        _ incoming: SIPTransactionLayer.IncomingRequest, side: GatewayConfiguration.Side, status: Int,
        reason: String, headers: SIPHeaders
    ) {
        guard let layer = layers[side] else { return }
        let arrival = FederationRouter.Arrival(
            side: side, source: incoming.received.source, certificateNames: incoming.received.peerCertificateNames)
        let slot = metrics.slot(healthName(router.dialogPeer(for: arrival)), side: side)
        metrics.requestRejected(slot)
        metrics.responseSent(slot, status: status)
        try? layer.respond(
            SIPResponse(replyingTo: incoming.request, statusCode: status, reasonPhrase: reason, headers: headers),
            to: incoming.transaction)
    }
}

/// Keys seen within `lifetime`, at most `capacity` of them (past it, the expired ones are dropped,
/// and if none had expired, all): a negative cache that a flood of new keys can empty but never
/// grow without bound.
struct RecentKeys {
    let lifetime: TimeAmount
    let capacity: Int
    private var seen: [String: NIODeadline] = [:]

    init(lifetime: TimeAmount, capacity: Int) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    func contains(_ key: String, now: NIODeadline) -> Bool {
        guard let until = seen[key] else { return false }
        return until > now
    }

    mutating func insert(_ key: String, now: NIODeadline) {
        if seen.count >= capacity {
            seen = seen.filter { $0.value > now }
            if seen.count >= capacity { seen.removeAll() }
        }
        seen[key] = now + lifetime
    }
}

/// One sender's fan-out pace: a token bucket, and the SUBSCRIBEs waiting for a token in order.
struct PacedSender {
    var bucket: TokenBucket
    var waiting: [(SIPRequest, GatewayConfiguration.Side, GatewayCore.Context)] = []
    private var head = 0

    init(bucket: TokenBucket) { self.bucket = bucket }

    var isIdle: Bool { head == waiting.count }

    /// The next waiting SUBSCRIBE, when a token is there for it.
    mutating func next(now: NIODeadline) -> (SIPRequest, GatewayConfiguration.Side, GatewayCore.Context)? {
        guard !isIdle, bucket.take(now: now) else { return nil }
        defer {
            head += 1
            if isIdle {
                waiting = []
                head = 0
            }
        }
        return waiting[head]
    }
}
