import Atomics
import Foundation
import GatewayState
public import Logging
import NIOConcurrencyHelpers
public import NIOCore
public import NIOPosix
import PresenceMapping
public import Prometheus
import SIPMessages
import SIPStack
public import SIPTransport

/// Everything `presence-gateway` runs, assembled from a ``GatewayConfiguration``: each side's
/// sockets, and per shard (`threads:`, docs/shards.md) an event loop with its transaction layer
/// per side, router, core and runtime; the admin endpoint; and beside them the background work (XCAP polling, the validity
/// timer, PostgreSQL's connection pool). The process runs it as a service (``run()``,
/// GatewayServer+Run.swift); tests drive it with ``start()`` and ``stop(grace:)``.
public final class GatewayServer: @unchecked Sendable {
    /// The configuration running: replaced by ``reload()``.
    public var configuration: GatewayConfiguration { current.withLockedValue { $0 } }
    private let current: NIOLockedValueBox<GatewayConfiguration>
    /// The file ``reload()`` reads again; nil for a configuration given as a value (the embedded one).
    public let configurationFile: String?
    private let reloading = NIOLockedValueBox(false)
    /// The first shard's loop: the node-wide work (XCAP documents, reload, drain) is done there.
    public let eventLoop: any EventLoop
    /// Each shard's loop, in shard order.
    let loops: [any EventLoop]
    /// The loops' own group when there are several shards; nil with one, which runs on
    /// `eventLoop` as given.
    private let group: MultiThreadedEventLoopGroup?
    let logger: Logger
    private let transports: [GatewayConfiguration.Side: SIPShardedTransport]
    /// The first shard's runtime, which runs the node-wide work (``GatewayCore/runsNodeWideWork``).
    private var runtime: GatewayRuntime? { serving.withLockedValue { $0.first } }
    /// Every shard's runtime, in shard order.
    private var runtimes: [GatewayRuntime] { serving.withLockedValue { $0 } }
    /// The runtimes once the start has restored every dialog: the admin endpoint, bound before,
    /// answers 503 until then.
    private let serving = NIOLockedValueBox<[GatewayRuntime]>([])
    /// How far the start has come: `/health` says it while restoring.
    public let progress: StartProgress
    /// The records a drain handed to the other nodes, once it has (``drain()``).
    private let drained = NIOLockedValueBox<Int?>(nil)
    private var admin: AdminServer?
    /// The durable store (`state:`); nil with `store: memory`.
    private var store: (any StateStore)?
    private let registry: PrometheusCollectorRegistry
    /// HEP v3 capture of both sides' messages (configuration `capture:`); nil when off.
    private let capture: HEPCapture?
    /// The pres-rules documents fetched from the XCAP server (configuration `xcap:`); nil without one.
    private var xcap: XCAPPolicySource?
    /// The rls-services documents fetched from the XCAP server (`xcap: rls-services`); nil without.
    private var xcapLists: XCAPListSource?
    /// The XDM client every XCAP request goes through, authenticated per root (`xcap-auth:`).
    let xcapClient: XCAPClient
    /// Writes the list documents for OMA resource list servers (`oma: rls`).
    private let listWriter: XCAPDocumentWriter
    /// Content indirection through `content-server:` (RFC 4483), over the XDM client.
    private let contentIndirection: ContentIndirection
    /// ``xcap`` for the runtime, which is told of changed documents (RFC 5875) before it exists.
    private let policySource = NIOLockedValueBox<XCAPPolicySource?>(nil)
    /// The lists the configuration gives (inline or its rls-services file): they win over lists
    /// from XCAP with the same URI.
    private let configuredLists: NIOLockedValueBox<[String: [String]]>
    /// Each presentity's pres-rules document as read (file or XCAP), before its validity
    /// conditions are decided: the configuration holds the rules in force now
    /// (``PresRules/inForce(at:)``), and ``keepValidity(_:)`` applies them as time passes.
    private let documents: NIOLockedValueBox<[String: PresRules]>
    /// The XCAP polling, the validity timer and the store's connection pool, as child tasks of
    /// ``run()``.
    let work = BackgroundWork()
    /// The timer of ``keepValidity(_:)``.
    private var validity: BackgroundWork.Job?
    /// The store's ``StateStore/run()``.
    private var storeRunning: BackgroundWork.Job?
    /// When this gateway was made: the status page's uptime counts from it.
    let startedAt = Date()
    /// The status page's samples (``StatusSampler``), taken by ``keepSampling(_:)``.
    let sampler = StatusSampler()
    /// The sampling of ``sampler``.
    private var sampling: BackgroundWork.Job?
    /// Set by the first stop: a second does nothing.
    private let stopped = NIOLockedValueBox(false)
    /// The group of ``run()`` while it runs, and who waits for it to end.
    let running = NIOLockedValueBox(RunState.idle)
    /// The `grace` of a ``stop(grace:)`` that ends ``run()``; 2 seconds at a graceful shutdown.
    let stopGrace = NIOLockedValueBox(TimeAmount.seconds(2))
    /// The resolvers' cache, shared by both sides; nil when no next hop is resolved by DNS.
    private let dnsCache: DNSCache?
    /// The log level the process's loggers follow, for `PUT /log-level`; set by the program that
    /// bootstrapped logging with ``SwitchedLogHandler``, before ``start()``.
    public var logLevels: LogLevelSwitch?
    /// The UPnP Presence:1 service's backend (flow 5), for the device `upnp:` configures: it
    /// serves the running gateway's core.
    public let presenceService = GatewayPresenceBackend()
    /// The addresses bound per side, in listener order (ports resolved when 0 was asked).
    public private(set) var bound: [GatewayConfiguration.Side: [SIPTarget]] = [:]

    /// Reads the TLS material and pres-rules files the configuration names; throws
    /// ``ConfigurationError`` naming the file when one cannot be used.
    public init(
        configuration: GatewayConfiguration, configurationFile: String? = nil, registry: PrometheusCollectorRegistry,
        eventLoop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next(),
        logger: Logger = Logger(label: "presence-gateway")
    ) throws {
        var (configuration, documents) = try Self.withPresRules(Self.withResourceLists(configuration))
        self.configuredLists = NIOLockedValueBox(configuration.resourceLists)
        configuration.awaitingResourceLists = configuration.xcap?.rlsServices.isEmpty == false
        self.current = NIOLockedValueBox(configuration)
        self.documents = NIOLockedValueBox(documents)
        self.configurationFile = configurationFile
        let tls = try Self.tls(configuration.tls)
        let capture = try Self.capture(configuration.capture, relay: eventLoop, registry: registry)
        self.capture = capture
        if configuration.threads > 1 {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: configuration.threads)
            self.group = group
            self.loops = Array(group.makeIterator())
        } else {
            self.group = nil
            self.loops = [eventLoop]
        }
        self.eventLoop = loops[0]
        self.logger = logger
        self.progress = StartProgress(logger: logger)
        self.registry = registry
        xcapClient = XCAPClient(
            authentication: configuration.xcapAuth, roots: configuration.xcapRoots,
            timeoutSeconds: configuration.xcap?.timeoutSeconds ?? 10,
            factory: GatewayMetricsFactory(registry: registry),
            logger: logger)
        listWriter = XCAPDocumentWriter(client: xcapClient)
        contentIndirection = ContentIndirection(
            configuration, client: xcapClient, factory: GatewayMetricsFactory(registry: registry))
        do {
            transports = try Self.transports(
                configuration, tls: tls, loops: loops, registry: registry, capture: capture)
        } catch {
            try? group?.syncShutdownGracefully()
            throw error
        }
        self.dnsCache = Self.needsDNS(configuration) ? DNSCache() : nil
    }

    /// Each side's sockets, shared by the shards on `loops`: its listeners, the TLS material,
    /// the connection limits, and the peers whose certificates are checked by name.
    private static func transports(
        _ configuration: GatewayConfiguration, tls: SIPNetworkTransport.TLS?, loops: [any EventLoop],
        registry: PrometheusCollectorRegistry, capture: HEPCapture?
    ) throws -> [GatewayConfiguration.Side: SIPShardedTransport] {
        var transports: [GatewayConfiguration.Side: SIPShardedTransport] = [:]
        for side in GatewayConfiguration.Side.allCases {
            let listeners = configuration.listeners.filter { $0.side == side }.map {
                SIPNetworkTransport.Listener(
                    $0.transport, host: $0.host, port: $0.port, advertisedHost: configuration.hostName)
            }
            var transportConfiguration = SIPNetworkTransport.Configuration(listeners: listeners, tls: tls)
            transportConfiguration.discardResponsesWithForeignSentBy = true
            configuration.connections.apply(to: &transportConfiguration)
            // RFC 5922 §4: the gateway's own TLS connections to a peer's address verify the
            // certificate against the peer's certificate-names, never the IP address.
            transportConfiguration.knownServers = configuration.peers.filter {
                $0.side == side && !$0.certificateNames.isEmpty
            }.map {
                SIPNetworkTransport.KnownServer(host: $0.host, port: $0.port, names: $0.certificateNames)
            }
            // Connections to the side's peers and literal next hop are never refused for the
            // outbound limit, which addresses chosen by others can fill.
            var peerHosts = Set(configuration.peers.filter { $0.side == side }.map(\.host))
            if case .uri(let hop) = side == .enterprise ? configuration.enterprise.nextHop : configuration.oma.nextHop,
                let literal = SIPEventRouting.literalTarget(hop)
            {
                peerHosts.insert(literal.host)
            }
            transportConfiguration.peerHosts = peerHosts
            transports[side] = try SIPShardedTransport(
                configuration: transportConfiguration, loops: loops,
                logger: Logger(label: "sip.transport.\(side.rawValue)"),
                metricsFactory: GatewayMetricsFactory(registry: registry),
                metricsDimensions: [("side", side.rawValue)], capture: capture)
        }
        return transports
    }

    /// Whether a side's next hop is resolved by DNS (RFC 3263), which the resolvers' cache serves.
    static func needsDNS(_ configuration: GatewayConfiguration) -> Bool {
        [configuration.enterprise.nextHop, configuration.oma.nextHop].contains {
            if case .dns = $0 { true } else { false }
        }
    }

    /// `configuration` with the pres-rules documents it names read in, as they are in force now,
    /// and the documents as read: files, and for the presentities whose rules come from XCAP the
    /// rules fetched so far (`xcapRules`), else the rules that make their watchers wait
    /// (``XCAPPolicySource/awaiting``).
    static func withPresRules(
        _ configuration: GatewayConfiguration, xcapRules: [String: PresRules] = [:]
    ) throws -> (GatewayConfiguration, [String: PresRules]) {
        var configuration = configuration
        var documents: [String: PresRules] = [:]
        for presentity in configuration.xcapPresentities {
            documents[presentity] = xcapRules[presentity] ?? XCAPPolicySource.awaiting
        }
        for (presentity, path) in configuration.presRulesFiles {
            let bytes: [UInt8]
            do { bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path))) } catch {
                throw ConfigurationError(
                    "\(path): cannot read the pres-rules document of \(presentity): \(error.localizedDescription)")
            }
            do { documents[presentity] = try PresRules(bytes: bytes) } catch {
                throw ConfigurationError("\(path):\(error.line):\(error.column): \(error.message)")
            }
        }
        let now = Date()
        for (presentity, document) in documents {
            configuration.policies[presentity]?.rules = Self.resolvingServedLists(
                document.inForce(at: now), configuration.resourceLists)
        }
        return (configuration, documents)
    }

    /// `rules` with each `external-list` entry that names a list the gateway serves by its SIP
    /// URI resolved to its members (PacketCable Presence §6.1.5: a list's identity, such as
    /// `sip:friends@example.com`, referenced by the authorization policy as its accept list);
    /// XCAP anchors are resolved where the document is fetched (``XCAPExternalLists``).
    static func resolvingServedLists(_ rules: PresRules, _ lists: [String: [String]]) -> PresRules {
        rules.resolvingExternalLists { anchor in
            guard XCAPExternalLists.isSIP(anchor) else { return nil }
            return lists[anchor] ?? WatcherIdentity.addressOfRecord(anchor).flatMap { lists[$0] }
        }
    }

    /// `configuration` with the documents it names read in, as a start reads them (pres-rules
    /// files, the rls-services file; not the TLS files, which a service manager may hand over
    /// only at start): what `presence-gateway --check` checks. Throws ``ConfigurationError``
    /// naming the file.
    public static func readingDocuments(_ configuration: GatewayConfiguration) throws -> GatewayConfiguration {
        try withPresRules(withResourceLists(configuration)).0
    }

    /// `configuration` with the lists of its rls-services document read in, when it names one.
    static func withResourceLists(_ configuration: GatewayConfiguration) throws -> GatewayConfiguration {
        guard let path = configuration.resourceListsFile else { return configuration }
        var configuration = configuration
        let bytes: [UInt8]
        do { bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path))) } catch {
            throw ConfigurationError("\(path): cannot read the rls-services document: \(error.localizedDescription)")
        }
        do {
            configuration.resourceLists = try GatewayConfiguration.resourceLists(
                rlsServices: bytes, enterprise: configuration.enterprise,
                limit: configuration.limits.resourcesPerBatch)
        } catch {
            throw ConfigurationError("\(path):\(error.line):\(error.column): \(error.message)")
        }
        return configuration
    }

    /// Fetches and polls the rls-services documents `settings` names; what they hold is served.
    private func startListSource(_ settings: GatewayConfiguration.XCAP) -> XCAPListSource {
        let loop = eventLoop
        let runtimes = runtimes
        let source = XCAPListSource(
            settings: settings, enterprise: configuration.enterprise, limit: configuration.limits.resourcesPerBatch,
            client: xcapClient, factory: GatewayMetricsFactory(registry: registry), logger: logger
        ) { [current, configuredLists] lists, awaiting in
            try? await loop.submit {
                let served = Self.served(
                    configured: configuredLists.withLockedValue { $0 }, xcap: lists,
                    enterprise: current.withLockedValue { $0.enterprise })
                current.withLockedValue {
                    $0.resourceLists = served
                    $0.awaitingResourceLists = awaiting
                }
                Self.handToEveryShard(runtimes) { $0.replaceResourceLists(served, awaiting: awaiting) }
            }.get()
        }
        source.start(in: work)
        return source
    }

    /// The lists served: those from XCAP whose URI and members are all in the `enterprise`
    /// domains in force (a reload may have dropped a domain they were read with), and the
    /// configured ones, which win over an XCAP list of the same URI.
    static func served(
        configured: [String: [String]], xcap: [String: [String]], enterprise: GatewayConfiguration.Domains
    ) -> [String: [String]] {
        xcap.filter { list, members in
            ([list] + members).allSatisfy { GatewayConfiguration.enterpriseAddress($0, enterprise) != nil }
        }.merging(configured) { _, configured in configured }
    }

    /// The HEP sender, on a loop of NIO's shared group other than the relay's, counting into
    /// `registry` (`gateway_capture_sent_total`, `gateway_capture_dropped_total{reason}`).
    static func capture(
        _ settings: GatewayConfiguration.Capture?, relay: any EventLoop,
        registry: PrometheusCollectorRegistry
    ) throws -> HEPCapture? {
        guard let settings else { return nil }
        do {
            return try HEPCapture(
                configuration: settings.hepConfiguration,
                eventLoop: HEPCapture.loop(in: MultiThreadedEventLoopGroup.singleton, apartFrom: relay),
                logger: Logger(label: "sip.capture"), metricsFactory: GatewayMetricsFactory(registry: registry))
        } catch {
            throw ConfigurationError("capture: \(error)")
        }
    }

    static func tls(_ settings: GatewayConfiguration.TLS?) throws -> SIPNetworkTransport.TLS? {
        guard let settings else { return nil }
        func read(_ path: String) throws -> String {
            do { return try String(contentsOfFile: path, encoding: .utf8) } catch {
                throw ConfigurationError("\(path): cannot read: \(error.localizedDescription)")
            }
        }
        do {
            return try SIPNetworkTransport.TLS(
                certificateChainPEM: try read(settings.certificateChain), privateKeyPEM: try read(settings.privateKey),
                trustRootsPEM: try settings.trustRoots.map(read),
                requireClientCertificate: settings.requireClientCertificate)
        } catch let error as ConfigurationError {
            throw error
        } catch {
            // NIOSSL's error names no file: the message names the files it was read from.
            let files = [settings.certificateChain, settings.privateKey] + (settings.trustRoots.map { [$0] } ?? [])
            throw ConfigurationError("TLS material (\(files.joined(separator: ", "))) does not load: \(error)")
        }
    }

    /// Binds the admin endpoint, then opens the durable store and reads what it kept, binds every
    /// listener and starts the gateway (continuing every dialog the store kept). Until then
    /// `/health` answers 503 with the progress (``StartProgress``) and the rest of the API 503. A
    /// store that cannot be used stops the start before any SIP socket is bound, with an error
    /// naming the file (or database) and the reason.
    ///
    /// The background work it starts (XCAP polling, the validity timer, PostgreSQL's connection
    /// pool) runs only under ``run()``, which calls this: alone it suits a gateway without XCAP
    /// and with `store: memory` or `sqlite` (the in-process tests).
    public func start() async throws {
        try await startAdmin()
        do {
            try await startServing()
        } catch {
            // What the failed start opened and bound, and the shards' threads, are let go once
            // (a later stop does nothing more: the threads are gone).
            await shutDown(grace: .zero)
            throw error
        }
        if let admin = configuration.admin {
            logger.info(
                "admin endpoint on \(admin.host):\(self.admin?.localAddress?.port ?? Int(admin.port)) (/metrics, /health, /subscriptions, /peers, /log-level, /capture, /connections, /dns, /leases, /reload, /node/drain, /)"
            )
        }
    }

    private func startServing() async throws {
        progress.enter(.opening)
        let (store, records) = try await openStore()
        self.store = store
        do { try await capture?.start() } catch {
            throw ConfigurationError("cannot open the HEP capture socket: \(error)")
        }
        progress.enter(.binding)
        try await bindListeners()
        let tables =
            try configuration.mappingsDirectory.map { try MappingTables.load(directory: $0) } ?? MappingTables.builtIn()
        let (contacts, transportContacts, locals) = try boundContacts()
        let shared = configuration.share(of: loops.count)
        let board = Self.board(configuration, shards: loops.count)
        var cores = loops.indices.map { shard in
            var core = GatewayCore(
                configuration: shared, mapper: PresenceMapper(tables: tables), contacts: contacts,
                ids: .random(shard: shard))
            core.transportContacts = transportContacts.filter { $0.value.count > 1 }
            core.place(onShard: shard, of: loops.count)
            if let board { core.share(board) }
            return core
        }
        var continued = [[GatewayCore.Action]](repeating: [], count: loops.count)
        let restoredAt = NIODeadline.now()
        if let store {
            progress.enter(.restoring, of: records.count)
            (cores, continued) = try await restoreState(records, from: store, at: restoredAt, into: cores)
            // The UPnP user's decisions were restored on the first shard; every shard decides its
            // watchers of the user by them.
            for shard in cores.indices.dropFirst() {
                continued[shard] += cores[shard].followUPnPDecisions(of: cores[0], now: restoredAt)
            }
        }
        let runtimes = try cores.enumerated().map { shard, core in
            try makeRuntime(core, shard: shard, locals: locals, store: store, board: board)
        }
        Self.shareWatchers(among: runtimes)
        if store is any SharedStateStore { Self.shareTakeovers(among: runtimes) }
        if store != nil, runtimes.count > 1 {
            let outages = ManagedAtomic(0)
            for runtime in runtimes { runtime.storeOutages = outages }
        }
        for (runtime, restored) in zip(runtimes, continued) {
            try await runtime.eventLoop.submit { runtime.start(restored: restored, restoredAt: restoredAt) }.get()
        }
        presenceService.serve(runtimes)
        serving.withLockedValue { $0 = runtimes }
        progress.enter(.ready)
        startXCAPSources()
        validity = keepValidity()
        sampling = keepSampling()
    }

    /// Binds each side's listeners, in order, into ``bound``; a socket that cannot be bound stops
    /// the start with the listeners the side was asked for.
    private func bindListeners() async throws {
        for side in GatewayConfiguration.Side.allCases {
            guard let transport = transports[side] else { continue }
            do {
                bound[side] = try await transport.start()
            } catch {
                // The transport binds the side's listeners in order and reports only the socket
                // error: the operator needs the listeners, addresses and ports it was asked for.
                let listeners = configuration.listeners.filter { $0.side == side }
                    .map { "\($0.transport.rawValue.lowercased()) \($0.host):\($0.port)" }.joined(separator: ", ")
                throw ConfigurationError("cannot listen on the \(side.rawValue) side (\(listeners)): \(error)")
            }
            logger.info(
                "listening (\(side.rawValue)): \(bound[side]?.map(\.description).joined(separator: ", ") ?? "")")
        }
    }

    /// The gateway's Contact on each side and per transport, from the addresses ``bound``, and
    /// every bound address as `host:port`.
    private func boundContacts() throws -> (
        contacts: [GatewayConfiguration.Side: SIPAddress],
        transportContacts: [GatewayConfiguration.Side: [SIPTransportKind: SIPAddress]], locals: Set<String>
    ) {
        var contacts: [GatewayConfiguration.Side: SIPAddress] = [:]
        var transportContacts: [GatewayConfiguration.Side: [SIPTransportKind: SIPAddress]] = [:]
        var locals: Set<String> = []
        for (side, targets) in bound {
            for target in targets { locals.insert("\(target.host):\(target.port)") }
            // The first listener of each transport; the side's first listener is its Contact.
            for target in targets.reversed() {
                let host = configuration.hostName ?? (target.isIPv6 ? "[\(target.host)]" : target.host)
                let transport = target.kind == .udp ? "" : ";transport=\(target.kind.rawValue.lowercased())"
                let contact = SIPAddress(uri: try SIPURI("sip:gateway@\(host):\(target.port)\(transport)"))
                transportContacts[side, default: [:]][target.kind] = contact
                contacts[side] = contact
            }
        }
        return (contacts, transportContacts, locals)
    }

    /// Restores into `cores` the `records` `store` kept, each shard's share
    /// (``GatewayCore/partition(_:into:)``) into its core, the shards at once, journaling from
    /// now on: the cores and the actions that continue every dialog they hold. Records that
    /// cannot be restored stop the start with nothing changed.
    private func restoreState(
        _ records: [StateRecord], from store: any StateStore, at now: NIODeadline, into cores: [GatewayCore]
    ) async throws -> ([GatewayCore], [[GatewayCore.Action]]) {
        let parts = GatewayCore.partition(records, into: cores.count)
        let ordinal = (store as? any SharedStateStore)?.ordinal
        // The refreshes a restore paces go out at the configured rate from all shards together.
        let (progress, rate) = (self.progress, max(1, configuration.state.recoveryRate / cores.count))
        var restored = cores.map { ($0, [GatewayCore.Action]()) }
        do {
            try await withThrowingTaskGroup(of: (Int, GatewayCore, [GatewayCore.Action]).self) { group in
                for (shard, (core, part)) in zip(cores, parts).enumerated() {
                    group.addTask {
                        var core = core
                        core.journaling = true
                        if let ordinal { core.keyBase = ordinal << 40 }
                        let continued = try core.restore(
                            part, clock: GatewayRuntime.wallClock(), now: now, recoveryRate: rate
                        ) { progress.advance(by: $0) }
                        return (shard, core, continued)
                    }
                }
                for try await (shard, core, continued) in group { restored[shard] = (core, continued) }
            }
        } catch {
            throw StateStoreError(
                .corrupt, location: store.location,
                "\(error): nothing was changed; "
                    + "move the file away to start without the state it holds")
        }
        let counts = restored.map(\.0.counts)
        logger.notice(
            """
            state \(store.location): \(records.count) records, continuing \(counts.map(\.enterpriseWatches).reduce(0, +)) \
            enterprise and \(counts.map(\.omaWatches).reduce(0, +)) OMA watchers' subscriptions\
            \(cores.count > 1 ? " on \(cores.count) shards" : "")
            """)
        return (restored.map(\.0), restored.map(\.1))
    }

    /// The runtime of `shard` over `core`: a router that knows the addresses bound (`locals`),
    /// one transaction layer per side on the shard's view of the side's sockets, the resolvers,
    /// and the hooks for XCAP documents.
    private func makeRuntime(
        _ core: GatewayCore, shard: Int, locals: Set<String>, store: (any StateStore)?, board: PeerBoard?
    ) throws -> GatewayRuntime {
        let sentBy = Set(bound.values.flatMap { $0 }.map { "\($0.kind.rawValue) \($0.host):\($0.port)" })
        var router = FederationRouter(configuration: core.configuration, localAddresses: locals, localSentBy: sentBy)
        router.board = board
        var layers: [GatewayConfiguration.Side: SIPTransactionLayer] = [:]
        for (side, transport) in transports {
            var layerConfiguration = GatewayRuntime.transactionConfiguration(limit: configuration.limits.transactions)
            layerConfiguration.shard = shard
            layers[side] = SIPTransactionLayer(transport: transport.shard(shard), configuration: layerConfiguration)
        }
        let resolve = try makeResolver()
        let runtime = GatewayRuntime(
            core: core, router: router, layers: layers, eventLoop: loops[shard], logger: logger, store: store,
            metricsFactory: GatewayMetricsFactory(registry: registry, shard: loops.count > 1 ? shard : nil),
            resolveTargets: resolve)
        runtime.contentIndirection = contentIndirection
        runtime.listDocumentWriter = { [listWriter] uri, body in
            await listWriter.write(uri, body: body, contentType: "application/rls-services+xml")
        }
        runtime.xcapDocumentChanged = { [policySource] presentity in
            policySource.withLockedValue { $0 }?.checkSoon(presentity)
        }
        return runtime
    }

    /// What the shards share of the configured peers' limits (``PeerBoard``); nil with one shard.
    private static func board(_ configuration: GatewayConfiguration, shards: Int) -> PeerBoard? {
        shards > 1 ? PeerBoard(configuration, shards: shards) : nil
    }

    /// Each shard's watchers reported to every other shard, on that shard's loop
    /// (docs/shards.md, "Across shards"). The runtimes hold each other weakly.
    private static func shareWatchers(among runtimes: [GatewayRuntime]) {
        guard runtimes.count > 1 else { return }
        for (shard, runtime) in runtimes.enumerated() {
            let others = runtimes.enumerated().filter { $0.offset != shard }.map { WeakRuntime(runtime: $0.element) }
            runtime.shareWatcherReports = { reset, updates in
                for other in others {
                    guard let target = other.runtime else { continue }
                    target.eventLoop.execute {
                        target.receiveWatcherReports(updates, reset: reset, fromShard: shard)
                    }
                }
            }
        }
    }

    /// With several shards on a shared store, the records a shard takes over from a node whose
    /// lease ran out go to the shards a restore would put them on (``GatewayCore/partition(_:into:)``),
    /// each on its own loop (docs/shards.md, "Several nodes").
    private static func shareTakeovers(among runtimes: [GatewayRuntime]) {
        guard runtimes.count > 1 else { return }
        let shards = runtimes.map { WeakRuntime(runtime: $0) }
        for (shard, runtime) in runtimes.enumerated() {
            runtime.handOutTakenOver = { records in
                let parts = GatewayCore.partition(records, into: shards.count)
                for (other, part) in parts.enumerated() where other != shard && !part.isEmpty {
                    guard let target = shards[other].runtime else { continue }
                    target.eventLoop.execute { target.adoptTakenOver(part) }
                }
                return parts[shard]
            }
        }
    }

    private struct WeakRuntime: Sendable {
        weak var runtime: GatewayRuntime?
    }

    /// Runs `body` with each shard's runtime on its loop, the shards at once, and returns when
    /// every one has.
    private func awaitEveryShard(_ body: @escaping @Sendable (GatewayRuntime) -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            for runtime in runtimes {
                group.addTask { try? await runtime.eventLoop.submit { body(runtime) }.get() }
            }
        }
    }

    /// Starts fetching the pres-rules documents (and the rls-services documents, when it names
    /// any) from the XCAP server of `xcap:`, if there is one.
    private func startXCAPSources() {
        if let settings = configuration.xcap {
            let loop = eventLoop
            let runtimes = runtimes
            let source = XCAPPolicySource(
                settings: settings, presentities: configuration.xcapPresentities, client: xcapClient,
                factory: GatewayMetricsFactory(registry: registry), logger: logger
            ) { [current, documents] presentity, rules in
                try? await loop.submit {
                    documents.withLockedValue { $0[presentity] = rules }
                    Self.apply(rules, of: presentity, at: Date(), runtimes: runtimes, current: current)
                }.get()
            }
            xcap = source
            policySource.withLockedValue { $0 = source }
            source.start(in: work)
        }
        if let settings = configuration.xcap, !settings.rlsServices.isEmpty {
            xcapLists = startListSource(settings)
        }
    }

    /// Starts the admin endpoint, if `admin:` asks for one: before the store is opened, so that a
    /// long restore can be watched (`/health`), and bound once for the gateway's life.
    private func startAdmin() async throws {
        guard let admin = configuration.admin else { return }
        do {
            self.admin = try await AdminServer.start(
                host: admin.host, port: Int(admin.port), registry: registry,
                group: MultiThreadedEventLoopGroup.singleton,
                limits: configuration.connections.admin, api: api(admin)
            ) { [weak self] in
                self?.health() ?? (false, #"{"status":"stopped"}"#)
            }
        } catch {
            throw ConfigurationError(
                "cannot listen on the admin endpoint (http \(admin.host):\(admin.port)): \(error)")
        }
        logger.info(
            "admin endpoint bound on \(admin.host):\(self.admin?.localAddress?.port ?? Int(admin.port)): /health answers 503 until the gateway is ready"
        )
    }

    /// Applies the pres-rules whose validity intervals (RFC 4745 §7.3) began or ended, checked
    /// every second while a document has them: each presentity whose rules in force changed has
    /// its watchers resolved again (``GatewayRuntime/replacePresRules(_:of:)``). One piece of
    /// ``work``, until ``stop(grace:)``.
    private func keepValidity() -> BackgroundWork.Job {
        work.start { [eventLoop, current, documents, runtimes] in
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: 1_000_000_000)
                guard documents.withLockedValue({ $0.values.contains { $0.dependsOnTime || $0.dependsOnLists } })
                else { continue }
                try? await eventLoop.submit {
                    let now = Date()
                    for (presentity, document) in documents.withLockedValue({ $0 })
                    where document.dependsOnTime || document.dependsOnLists {
                        Self.apply(document, of: presentity, at: now, runtimes: runtimes, current: current)
                    }
                }.get()
            }
        }
    }

    /// Samples the registry's text and the runtime's published status every 5 s for the status
    /// page (``StatusSampler``): one piece of ``work``, off the relay loop, until ``stop(grace:)``.
    /// Neither read walks the core, so a sample costs the same whatever the number of dialogs.
    private func keepSampling() -> BackgroundWork.Job {
        work.start { [sampler, registry, runtimes] in
            await sampler.run {
                (String(decoding: registry.emitToBuffer(), as: UTF8.self), GatewayRuntime.Status.summed(runtimes))
            }
        }
    }

    /// `GET /status.json` without the peers: read from locked copies, on the admin endpoint's
    /// thread.
    func statusReport() -> GatewayStatusReport {
        GatewayStatusReport(
            startedAt: startedAt, now: Date(), store: configuration.state.store, status: status,
            samples: sampler.samples)
    }

    /// On the first shard's loop: applies the rules of `presentity`'s `document` in force at
    /// `now` when they differ from those running.
    private static func apply(
        _ document: PresRules, of presentity: String, at now: Date, runtimes: [GatewayRuntime],
        current: NIOLockedValueBox<GatewayConfiguration>
    ) {
        let inForce = resolvingServedLists(document.inForce(at: now), current.withLockedValue { $0.resourceLists })
        guard current.withLockedValue({ $0.policies[presentity]?.rules }) != inForce else { return }
        handToEveryShard(runtimes) { $0.replacePresRules(inForce, of: presentity) }
        current.withLockedValue { $0.policies[presentity]?.rules = inForce }
    }

    /// On the first shard's loop: `body` with its runtime at once, and with each other shard's
    /// on that shard's loop, after whatever was asked of it before (a loop runs what it is
    /// given in order), so that changes reach every shard in the order they were made.
    private static func handToEveryShard(
        _ runtimes: [GatewayRuntime], _ body: @escaping @Sendable (GatewayRuntime) -> Void
    ) {
        for runtime in runtimes {
            if runtime.eventLoop.inEventLoop {
                body(runtime)
            } else {
                runtime.eventLoop.execute { body(runtime) }
            }
        }
    }

    /// The admin API over the runtimes, once there are: each call runs on every shard's loop and
    /// the answers are gathered (docs/shards.md, "Across shards"); before, it is answered 503
    /// (``AdminAPI/unavailable``).
    private func api(_ admin: GatewayConfiguration.Admin) -> AdminAPI {
        let loop = eventLoop
        let serving = serving
        /// `body` on every shard's loop, the answers in shard order; 503 before the start is done.
        @Sendable func gather<T: Sendable>(_ body: @escaping @Sendable (GatewayRuntime) -> T)
            -> EventLoopFuture<[T]>
        {
            let runtimes = serving.withLockedValue { $0 }
            guard !runtimes.isEmpty else { return loop.makeFailedFuture(AdminAPI.Unavailable()) }
            return EventLoopFuture.whenAllSucceed(
                runtimes.map { runtime in runtime.eventLoop.submit { body(runtime) } }, on: loop)
        }
        // What the server does itself (reload, drain), once it serves.
        @Sendable func whenServing<T: Sendable>(_ body: @escaping @Sendable (GatewayServer) async throws -> T)
            -> EventLoopFuture<T>
        {
            loop.makeFutureWithTask { [weak self] in
                guard let self, self.runtime != nil else { throw AdminAPI.Unavailable() }
                return try await body(self)
            }
        }
        var api = AdminAPI(
            token: admin.token,
            subscriptions: { uri, side, offset, limit in
                loop.makeFutureWithTask {
                    try await Self.subscriptions(of: serving, uri: uri, side: side, offset: offset, limit: limit)
                }
            },
            end: { id, reason in gather { $0.endSubscription(id, reason: reason) }.map { $0.contains(true) } },
            peers: { gather { $0.peerHealth() }.map(PeerHealth.merged) },
            reload: { whenServing { try await $0.reload() } })
        api.drainNode = { whenServing { try await $0.drain() } }
        api.drain = { name, drained in
            gather { $0.drain(name, drained) }.map { PeerHealth.merged([$0.compactMap { $0 }]).first }
        }
        api.logLevels = logLevels
        api.capture = capture
        api.leases = { [weak self] offset, limit in
            loop.makeFutureWithTask {
                guard let self else { throw AdminAPI.Unavailable() }
                return try await self.nodeLeases(offset: offset, limit: limit)
            }
        }
        if let cache = dnsCache {
            api.dns = { offset, limit in cache.listed(offset: offset, limit: limit) }
        }
        let transports = transports
        api.connections = { side, offset, limit in
            loop.makeFutureWithTask {
                try await transports[side]?.openConnections(offset: offset, limit: limit) ?? (0, [])
            }
        }
        api.report = { [weak self] in self?.statusReport() }
        api.hostNames = admin.hostNames
        api.tokenlessControl = admin.tokenlessControl
        return api
    }

    /// `GET /leases`: a page of the shared store's node leases; a conflict without one.
    private func nodeLeases(offset: Int, limit: Int) async throws -> (total: Int, page: [PostgresStateStore.NodeLease])
    {
        guard let store else {
            throw AdminAPI.Conflict("leases exist only with state: { store: postgres }; this gateway keeps none")
        }
        guard let shared = store as? PostgresStateStore else {
            throw AdminAPI.Conflict(
                "leases exist only with state: { store: postgres }; this gateway's store is \(type(of: store))")
        }
        return try await shared.nodeLeases(offset: offset, limit: limit)
    }

    /// A page of the bridged subscriptions of every shard and their number: the shards' tables
    /// one after another, each asked for what is left of the page.
    private static func subscriptions(
        of serving: NIOLockedValueBox<[GatewayRuntime]>, uri: String?, side: GatewayConfiguration.Side?, offset: Int,
        limit: Int
    ) async throws -> (total: Int, page: [GatewayCore.BridgedSubscription]) {
        let runtimes = serving.withLockedValue { $0 }
        guard !runtimes.isEmpty else { throw AdminAPI.Unavailable() }
        var total = 0
        var page: [GatewayCore.BridgedSubscription] = []
        for runtime in runtimes {
            let (start, left) = (max(0, offset - total), max(0, limit - page.count))
            let (count, part) = try await runtime.eventLoop.submit {
                runtime.bridgedSubscriptions(uri: uri, side: side, offset: start, limit: left)
            }.get()
            total += count
            page += part
        }
        return (total, page)
    }

    /// Reads the configuration file and the pres-rules documents again and applies them without
    /// dropping a dialog: partners, peers, rate limits and trust (a new router), containers and
    /// pres-rules (every enterprise watcher resolved again, ``GatewayCore/reconfigure(_:mapper:now:)``),
    /// mapping tables, and the TLS certificate, key and trust roots for new connections. What
    /// only a restart can change (listeners, the admin endpoint, host name, connection limits,
    /// next hops resolved by DNS) is named in the answer and the log, and not applied.
    /// - Returns: what was applied.
    /// - Throws: ``ConfigurationError`` as `FILE:LINE:COLUMN: message` for an invalid file; the
    ///   running configuration stays.
    public func reload() async throws -> String {
        guard let file = configurationFile else {
            throw ConfigurationError("running on the embedded configuration: there is no file to read again")
        }
        guard
            reloading.withLockedValue({ busy in
                defer { busy = true }
                return !busy
            })
        else {
            throw ConfigurationError("a reload is already in progress")
        }
        defer { reloading.withLockedValue { $0 = false } }
        do {
            let applied = try await apply(file)
            logger.notice("configuration reloaded from \(file): \(applied)")
            return applied
        } catch {
            logger.error("configuration not reloaded: \(error)")
            throw error
        }
    }

    private func apply(_ file: String) async throws -> String {
        guard runtime != nil else { throw ConfigurationError("the gateway is not running") }
        var new: GatewayConfiguration
        let read: [String: PresRules]
        (new, read) = try readForReload(file)
        let tables: MappingTables
        do {
            tables = try new.mappingsDirectory.map { try MappingTables.load(directory: $0) } ?? MappingTables.builtIn()
        } catch {
            throw ConfigurationError("\(new.mappingsDirectory ?? "mappings"): \(error)")
        }
        let old = configuration
        let changes = Self.restartOnlyChanges(from: old, to: new)
        var restartOnly = changes.restartOnly
        let identities = changes.rlsServices
        // Certificates first: a file that does not load leaves everything as it was.
        if let tls = try Self.tls(new.tls), old.tls != nil {
            for transport in transports.values where transport.configuration.tls != nil {
                try transport.replaceTLS(tls)
            }
        }
        Self.keepRestartOnly(&new, as: old, rlsServices: identities, restartOnly: &restartOnly)
        xcapClient.configure(authentication: new.xcapAuth, roots: new.xcapRoots)
        contentIndirection.configure(new.contentServer)
        await followRLSServices(new.xcap, identities: identities)
        let applied = new
        let source = xcap
        let listSource = xcapLists
        source?.watch(new.xcapPresentities)
        try await install(applied, read: read, tables: tables, source: source, listSource: listSource)
        return
            "applied: partners, peers, limits, presentities, pres-rules, mappings\(applied.tls == nil ? "" : ", TLS material")"
            + (restartOnly.isEmpty ? "" : "; needs a restart, not applied: " + restartOnly.joined(separator: ", "))
    }

    /// Reads `file` for a reload: the configuration, with the pres-rules and rls-services
    /// documents it names read in, and the pres-rules documents as read (those from XCAP as
    /// fetched last). `pres-rules: xcap` needs the XCAP source the gateway started with.
    private func readForReload(_ file: String) throws -> (GatewayConfiguration, [String: PresRules]) {
        let text: String
        do { text = try String(contentsOfFile: file, encoding: .utf8) } catch {
            throw ConfigurationError("\(file): cannot read: \(error.localizedDescription)")
        }
        let new: GatewayConfiguration
        do { new = try GatewayConfiguration(yaml: text) } catch {
            throw ConfigurationError("\(file):\(error.line):\(error.column): \(error.message)")
        }
        if !new.xcapPresentities.isEmpty, xcap == nil {
            throw ConfigurationError(
                "\(file): pres-rules: xcap: fetching from an XCAP server starts with the gateway; restart it")
        }
        return try Self.withPresRules(Self.withResourceLists(new), xcapRules: xcap?.rules ?? [:])
    }

    /// The sections that differ between `old` and `new` that only a restart can change, and the
    /// identities whose rls-services documents are kept from now on.
    private static func restartOnlyChanges(
        from old: GatewayConfiguration, to new: GatewayConfiguration
    ) -> (restartOnly: [String], rlsServices: [String]) {
        var restartOnly: [String] = []
        if new.listeners != old.listeners { restartOnly.append("listen") }
        if new.admin != old.admin { restartOnly.append("admin") }
        if new.hostName != old.hostName { restartOnly.append("host-name") }
        if new.connections != old.connections { restartOnly.append("connections") }
        if (new.tls == nil) != (old.tls == nil) { restartOnly.append("tls (on or off)") }
        if new.logFormat != old.logFormat { restartOnly.append("log-format") }
        if new.linkedIdentities != old.linkedIdentities { restartOnly.append("linked-identities") }
        if new.capture != old.capture { restartOnly.append("capture") }
        if new.state != old.state { restartOnly.append("state") }
        if new.threads != old.threads { restartOnly.append("threads") }
        // The transaction layers' tables are sized at start.
        if new.limits.transactions != old.limits.transactions { restartOnly.append("limits.transactions") }
        // Which identities keep rls-services documents changes with a reload; the rest of `xcap:`
        // with a restart.
        func rest(_ xcap: GatewayConfiguration.XCAP?) -> GatewayConfiguration.XCAP? {
            var rest = xcap
            rest?.rlsServices = []
            return rest
        }
        let sameServer = rest(new.xcap) == rest(old.xcap)
        if !sameServer { restartOnly.append("xcap") }
        let identities = (sameServer ? new.xcap : old.xcap)?.rlsServices ?? []
        return (restartOnly, identities)
    }

    /// Keeps in `new` what only a restart can change as it runs in `old`, with `rlsServices` as
    /// the identities whose rls-services documents are kept; a next hop resolved by DNS that
    /// changed is added to `restartOnly`.
    private static func keepRestartOnly(
        _ new: inout GatewayConfiguration, as old: GatewayConfiguration, rlsServices identities: [String],
        restartOnly: inout [String]
    ) {
        func isDNS(_ hop: GatewayConfiguration.NextHop) -> Bool { if case .dns = hop { true } else { false } }
        // What needs a restart is kept as it runs, so the next reload compares with what is in force.
        new.listeners = old.listeners
        new.admin = old.admin
        new.hostName = old.hostName
        new.connections = old.connections
        if (new.tls == nil) != (old.tls == nil) { new.tls = old.tls }
        new.logFormat = old.logFormat
        new.linkedIdentities = old.linkedIdentities
        new.capture = old.capture
        new.state = old.state
        new.threads = old.threads
        new.limits.transactions = old.limits.transactions
        new.xcap = old.xcap
        new.xcap?.rlsServices = identities
        // The resolvers are made at start: a next hop resolved by DNS stays as it is.
        if new.enterprise.nextHop != old.enterprise.nextHop,
            isDNS(new.enterprise.nextHop) || isDNS(old.enterprise.nextHop)
        {
            restartOnly.append("enterprise.next-hop (DNS)")
            new.enterprise.nextHop = old.enterprise.nextHop
        }
        if new.oma.nextHop != old.oma.nextHop, isDNS(new.oma.nextHop) || isDNS(old.oma.nextHop) {
            restartOnly.append("oma.next-hop (DNS)")
            new.oma.nextHop = old.oma.nextHop
        }
    }

    /// Fetches the rls-services documents of `identities` from the XCAP server of `settings`
    /// (starting the list source if none runs), or stops the list source when none are left.
    private func followRLSServices(
        _ settings: GatewayConfiguration.XCAP?, identities: [String]
    ) async {
        if let settings, !identities.isEmpty {
            if let listSource = xcapLists {
                listSource.watch(identities)
            } else {
                xcapLists = startListSource(settings)
            }
        } else if let listSource = xcapLists {
            await listSource.shutdown()
            xcapLists = nil
        }
    }

    /// On the event loop: puts the reloaded configuration `applied` in force, with the lists and
    /// pres-rules the XCAP sources fetched last, and the documents `read`.
    private func install(
        _ applied: GatewayConfiguration, read: [String: PresRules], tables: MappingTables,
        source: XCAPPolicySource?, listSource: XCAPListSource?
    ) async throws {
        try await eventLoop.submit { [current, documents, configuredLists, runtimes, loops] in
            // The rules fetched last: a document that changed while this reload was read applies.
            var applied = applied
            var read = read
            configuredLists.withLockedValue { $0 = applied.resourceLists }
            if let listSource {
                applied.resourceLists = Self.served(
                    configured: applied.resourceLists, xcap: listSource.lists, enterprise: applied.enterprise)
                applied.awaitingResourceLists = listSource.awaiting
            }
            let now = Date()
            for (presentity, rules) in source?.rules ?? [:] where applied.xcapPresentities.contains(presentity) {
                read[presentity] = rules
                applied.policies[presentity]?.rules = rules.inForce(at: now)
            }
            documents.withLockedValue { $0 = read }
            let shared = applied.share(of: loops.count)
            let board = Self.board(applied, shards: loops.count)
            Self.handToEveryShard(runtimes) {
                $0.reconfigure(shared, mapper: PresenceMapper(tables: tables), board: board)
            }
            current.withLockedValue { $0 = applied }
        }.get()
    }

    /// RFC 3263 resolution per side, with the nameservers of /etc/resolv.conf: Microsoft
    /// federation SRV first where the side's next hop says `dns-federation`. Only the transports the
    /// side listens on are tried; the TLS server name comes with the target.
    private func makeResolver() throws -> @Sendable (SIPURI, GatewayConfiguration.Side) async -> [SIPTarget] {
        guard let cache = dnsCache else { return { _, _ in [] } }
        let dns: DNSClient.Configuration
        do { dns = try DNSClient.Configuration.system() } catch {
            throw ConfigurationError("DNS next hop configured, but /etc/resolv.conf is unusable: \(error)")
        }
        var resolvers: [GatewayConfiguration.Side: SIPResolver] = [:]
        var kinds: [GatewayConfiguration.Side: Set<SIPTransportKind>] = [:]
        for side in GatewayConfiguration.Side.allCases {
            let hop = side == .enterprise ? configuration.enterprise.nextHop : configuration.oma.nextHop
            let federation = if case .dns(federation: true) = hop { true } else { false }
            resolvers[side] = SIPResolver(
                configuration: SIPResolver.Configuration(mode: federation ? .microsoftFederation : .rfc3263),
                dnsConfiguration: dns, eventLoopGroup: MultiThreadedEventLoopGroup.singleton, cache: cache)
            kinds[side] = Set(configuration.listeners.filter { $0.side == side }.map(\.transport))
        }
        let logger = self.logger
        return { [resolvers, kinds] uri, side in
            guard let resolver = resolvers[side] else { return [] }
            do {
                // Every target, in RFC 3263 order: the runtime fails over along the list (§4.3).
                return try await resolver.resolve(uri, supporting: kinds[side] ?? [.udp]).map { resolved in
                    var target = resolved.target
                    target.serverName = resolved.serverName
                    return target
                }
            } catch {
                logger.warning("cannot resolve \(uri): \(error)")
                return []
            }
        }
    }

    /// Where the admin endpoint listens (its port when 0 was configured); nil without one.
    public var adminAddress: SocketAddress? { admin?.localAddress }

    /// The HEP capture's counts (nil when `capture:` is not configured); safe to read from any
    /// thread.
    public var captureStatistics: HEPCapture.Statistics? { capture?.statistics }

    /// The runtime's status, as `/health` reports it (active subscriptions per kind); nil before
    /// ``start()``. Safe to read from any thread.
    public var status: GatewayRuntime.Status? {
        let runtimes = runtimes
        return runtimes.isEmpty ? nil : GatewayRuntime.Status.summed(runtimes)
    }

    /// `/health`: running, and the active subscriptions per kind; while starting, 503 with how far
    /// the start has come (`{"status":"restoring","phase":"restoring","done":N,"of":M}`).
    func health() -> (Bool, String) {
        guard let c = status else {
            let p = progress.snapshot
            let status = p.phase == .binding ? "starting" : "restoring"
            return (false, #"{"status":"\#(status)","phase":"\#(p.phase.rawValue)","done":\#(p.done),"of":\#(p.of)}"#)
        }
        if let handed = drained.withLockedValue({ $0 }) {
            return (false, #"{"status":"drained","handedOver":\#(handed)}"#)
        }
        let status = c.running ? "ok" : "stopping"
        let store = store == nil ? "none" : c.storeAvailable ? "ok" : "unavailable"
        return (
            c.running,
            #"{"status":"\#(status)","enterpriseWatchers":\#(c.enterpriseWatches),"omaLegs":\#(c.omaLegs),"#
                + #""omaWatchers":\#(c.omaWatches),"enterpriseLegs":\#(c.enterpriseLegs),"store":"\#(store)""#
                + xcapHealth() + "}"
        )
    }

    /// `/health`'s `"xcap"` member: each XCAP root's authentication (``XCAPRootStatus``), the
    /// pres-rules root with the presentities whose watchers still wait for their first document;
    /// empty without XCAP roots. No credential is in it.
    private func xcapHealth() -> String {
        var roots = xcapClient.status
        guard !roots.isEmpty else { return "" }
        if let source = policySource.withLockedValue({ $0 }),
            let index = roots.firstIndex(where: { $0.root == source.settings.root })
        {
            roots[index].awaiting = source.awaitingCount
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        guard let data = try? encoder.encode(roots) else { return "" }
        return #","xcap":"# + String(decoding: data, as: UTF8.self)
    }

    /// Drains this node of a shared store: every shard stops answering and sending and writes
    /// what it has not yet (``GatewayRuntime/quietForDrain(timeout:)``), the SIP listeners close,
    /// and after ``frontNotice`` (the fronts probe each second: they find it gone meanwhile) its
    /// dialogs are handed to the other nodes without waiting for its lease
    /// (``GatewayRuntime/handOver(_:until:)``). The admin endpoint stays until the process is
    /// stopped, `/health` saying "drained". Returns the number of records handed over.
    public func drain() async throws -> Int {
        let runtimes = runtimes
        guard !runtimes.isEmpty, let shared = store as? any SharedStateStore,
            case .postgres(let postgres) = configuration.state.store
        else {
            throw GatewayRuntime.DrainError(description: "only a node of a shared store (store: postgres) drains")
        }
        let timeout = TimeAmount.seconds(Int64(postgres.leaseSeconds) + 10)
        let deadline = NIODeadline.now() + timeout
        logger.notice("draining: closing the SIP listeners, then handing every dialog to the other nodes")
        let written = try await withThrowingTaskGroup(of: Bool.self) { group in
            for runtime in runtimes {
                group.addTask {
                    try await runtime.eventLoop.flatSubmit { runtime.quietForDrain(timeout: timeout) }.get()
                }
            }
            return try await group.reduce(true) { $0 && $1 }
        }
        guard written else { throw GatewayRuntime.DrainError(description: "the store did not take every change") }
        for transport in transports.values { await transport.shutdown() }
        try? await Task.sleep(nanoseconds: UInt64(Self.frontNotice.nanoseconds))
        let handed = try await GatewayRuntime.handOver(shared, until: deadline)
        drained.withLockedValue { $0 = handed }
        logger.notice("drained: \(handed) records taken over by the other nodes")
        return handed
    }

    /// How long a draining node is silent before it ends its lease: twice the probe interval of
    /// deploy/kamailio-front.cfg (1 s, one failure marks a node down).
    static let frontNotice = TimeAmount.seconds(2)

    /// Graceful stop as `shutdown:` says. `terminate`: final NOTIFYs and unsubscribes go out, then
    /// `grace` is given for their transactions before sockets close. `keep`: nothing more is
    /// answered or sent, what the store has not written yet is written, and the next start
    /// continues every dialog (docs/state.md).
    ///
    /// While ``run()`` runs, this shuts its group down as a graceful shutdown would and returns
    /// once it has ended. A second stop does nothing.
    public func stop(grace: TimeAmount = .seconds(2)) async {
        if await stopRunning(grace: grace) { return }
        await shutDown(grace: grace)
    }

    /// The stop itself, in order: the XCAP sources and the validity timer, the runtime (final
    /// NOTIFYs, or the state written), the admin endpoint, the sockets, the store and its pool.
    func shutDown(grace: TimeAmount) async {
        let first = stopped.withLockedValue { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        presenceService.serve([])
        await validity?.stop()
        validity = nil
        await sampling?.stop()
        sampling = nil
        policySource.withLockedValue { $0 = nil }
        await xcap?.shutdown()
        xcap = nil
        await xcapLists?.shutdown()
        xcapLists = nil
        let runtimes = runtimes
        if !runtimes.isEmpty {
            if store != nil, configuration.shutdown == .keep {
                let written = await Self.stopKeepingState(runtimes)
                if written {
                    logger.notice(
                        "stopping with every dialog kept in \(store?.location ?? "the store"): the next start continues them"
                    )
                } else {
                    logger.error(
                        "stopping, but the state store did not take every change: dialogs changed in the last moments may be lost"
                    )
                }
            } else {
                await awaitEveryShard { $0.shutdown() }
                try? await Task.sleep(nanoseconds: UInt64(max(0, grace.nanoseconds)))
                if store != nil { _ = await Self.stopKeepingState(runtimes) }
            }
        }
        try? await admin?.close()
        await listWriter.finish()
        await xcapClient.shutdown()
        for transport in transports.values { await transport.shutdown() }
        await capture?.shutdown()
        await store?.close()
        await storeRunning?.stop()
        store = nil
        storeRunning = nil
        try? await group?.shutdownGracefully()
        logger.info("stopped")
    }

    /// Stops every shard's runtime keeping its state (``GatewayRuntime/stopKeepingState(timeout:)``),
    /// the shards at once: whether every one wrote everything.
    private static func stopKeepingState(_ runtimes: [GatewayRuntime]) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            for runtime in runtimes {
                group.addTask {
                    (try? await runtime.eventLoop.flatSubmit { runtime.stopKeepingState(timeout: .seconds(10)) }.get())
                        ?? false
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
    }

    /// The store `state:` names, opened, with what it kept; nil and nothing for `store: memory`.
    private func openStore() async throws -> ((any StateStore)?, [StateRecord]) {
        let store: any StateStore
        switch configuration.state.store {
        case .memory:
            return (nil, [])
        case .sqlite(let path, let synchronous):
            store = try await SQLiteStateStore.open(
                path: path, synchronous: synchronous == .full ? .full : .normal,
                logger: Logger(label: "presence-gateway.state"))
        case .postgres(let postgres):
            store = try await PostgresStateStore.open(
                host: postgres.host, port: postgres.port, user: postgres.user, password: postgres.password,
                database: postgres.database, node: postgres.node, leaseSeconds: postgres.leaseSeconds,
                tls: postgres.tls, logger: Logger(label: "presence-gateway.state"))
        }
        // The connection pool, until the store is closed.
        storeRunning = work.start { await store.run() }
        progress.enter(.reading)
        do {
            return (store, try await store.load())
        } catch {
            await store.close()
            throw error
        }
    }
}
