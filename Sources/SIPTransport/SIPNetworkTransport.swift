public import Logging
public import Metrics
internal import NIOConcurrencyHelpers
public import NIOCore
internal import NIOPosix
internal import NIOSSL
public import SIPMessages

#if canImport(Glibc)
    internal import Glibc
#endif

/// SIP over real sockets: UDP, TCP and TLS listeners and clients on SwiftNIO, IPv4 and IPv6
/// (RFC 3261 §18; TLS per §26.2 with swift-nio-ssl).
///
/// - Every channel runs on ``eventLoop``; so do the message handler, every send's future and
///   all internal state, as ``SIPTransport`` requires.
/// - Streams are framed by Content-Length with ``SIPMessages/SIPStreamFramer``; a double-CRLF
///   ping is answered with CRLF (RFC 5626 §3.5.1); a connection whose framing is lost or that
///   buffers more than ``Configuration/maxBufferedBytesPerConnection`` is closed (other
///   connections are unaffected), and so is one idle for ``Configuration/idleTimeout``, one
///   whose TLS handshake takes longer than ``Configuration/tlsHandshakeTimeout`` and one that
///   does not complete a message within ``Configuration/headerTimeout`` of its first byte.
/// - Inbound connections are limited in all (``Configuration/maxInboundConnections``) and per
///   remote IP address (``Configuration/maxInboundConnectionsPerAddress``); the connections this
///   transport opens are counted apart (``Configuration/maxOutboundConnections``), so inbound
///   ones never keep it from reaching its peers.
/// - Received requests get `received`/`rport` on their top Via (RFC 3261 §18.2.1, RFC 3581 §4);
///   received responses whose top Via is not ours are discarded when
///   ``Configuration/discardResponsesWithForeignSentBy`` is set (RFC 3261 §18.1.2).
/// - A malformed request is answered with 400 when Via, From, To, Call-ID and CSeq survive
///   (``SIPMessages/SIPResponse/badRequest(salvaging:error:toTag:limits:)``); anything else that
///   does not parse is dropped and counted.
/// - Connections are reused (RFC 3261 §18.1.1, §18.2.2): a send uses the given connection while
///   it is open, else an open connection to the same address (inbound or outbound), else opens
///   one. For TLS the server's certificate must carry one of
///   ``Configuration/expectedServerNames(for:)`` (RFC 5922 §4), never just the IP address; the
///   first name is sent as SNI.
/// - UDP requests over ``Configuration/maxUDPRequestSize`` fail with
///   ``SIPTransportError/Code/messageTooLarge`` (RFC 3261 §18.1.1).
///
/// Known limits: connections are found by the peer's address, not by RFC 5923 aliases, so a
/// request to a peer's listening address opens a new connection even when that peer has one
/// open to us (the layers above pass the ``SIPConnectionID`` to reuse it). Under TLS 1.3 a
/// client finishes its handshake before the server has judged its certificate, so a send to a
/// server that then refuses our certificate may report success; the connection closes at once
/// and nothing is delivered.
///
/// Logging goes to the injected `Logger`; counters (see ``SIPTransportMetrics``) to the injected
/// `MetricsFactory`.
public final class SIPNetworkTransport: SIPTransport, @unchecked Sendable {
    // @unchecked: all mutable state below the lock box is touched only on `eventLoop`
    // (asserted), and the lock boxes guard the rest.

    public let eventLoop: any EventLoop
    public let configuration: Configuration
    private let logger: Logger
    private let metrics: SIPTransportMetrics
    /// The TLS contexts new connections use (server side, client side); replaced by
    /// ``replaceTLS(_:)`` while connections made with the old ones carry on.
    private let tlsContexts: NIOLockedValueBox<(server: NIOSSLContext, client: NIOSSLContext)?>
    private var serverTLSContext: NIOSSLContext? { tlsContexts.withLockedValue { $0?.server } }
    private var clientTLSContext: NIOSSLContext? { tlsContexts.withLockedValue { $0?.client } }
    /// Where every message sent and received is copied (HEP capture); nil: nothing is copied.
    let capture: (any SIPMessageCapture)?

    /// The receiver of inbound messages, wrapped in a struct: a bare closure in the generic box
    /// is reabstracted on every `inout` access, and each write-back wrapped it in one more thunk,
    /// so every received message deepened the handler's call stack until the loop thread
    /// overflowed its stack (about 12,000 messages; found by `sip-bench serve` under sipp load).
    private struct MessageHandler: Sendable {
        let deliver: @Sendable (SIPReceivedMessage) -> Void
    }

    private let handler = NIOLockedValueBox<MessageHandler?>(nil)
    private let boundListeners = NIOLockedValueBox<[(listener: Listener, local: SIPTarget)]>([])

    private enum Phase { case idle, started, shutDown }

    /// One open stream connection. Loop-confined.
    struct Connection {
        var kind: SIPTransportKind
        var channel: any Channel
        var remote: SIPTarget
        var local: SIPTarget
        var ready: EventLoopFuture<Void>
        var peerCertificateNames: [String]
        /// Accepted from a peer (counted against the inbound limits), else opened by us.
        var inbound: Bool
        /// Accepted from an address that is not one of ``Configuration/peerHosts`` (counted
        /// against ``Configuration/maxInboundConnections``).
        var countedInbound = false
        /// Opened by us to an address that is not one of ``Configuration/peerHosts`` (counted
        /// against ``Configuration/maxOutboundConnections``).
        var countedOutbound = false
        /// When it was registered, and the messages received and written on it since, for
        /// ``openConnections(offset:limit:now:)``.
        var opened = NIODeadline.now()
        var received = 0
        var sent = 0
    }

    private var phase = Phase.idle
    private(set) var connections: [SIPConnectionID: Connection] = [:]
    private var connectionByRemote: [SIPTarget: SIPConnectionID] = [:]
    private var pendingConnects: [SIPTarget: EventLoopFuture<SIPConnectionID>] = [:]
    private var datagramChannels: [any Channel] = []
    /// Each UDP listener's bound address, for the source of a captured send.
    var datagramLocals: [ObjectIdentifier: SIPTarget] = [:]
    private var serverChannels: [any Channel] = []
    /// The next ``SIPConnectionID``: the shard in the top 16 bits, a counter below.
    private var nextConnection: UInt64
    /// Open connections against the limits: inbound per remote IP address (canonical text) and
    /// in all, and those opened to addresses other than the peers' (pending connects are
    /// counted apart); shared by the shards of a ``SIPShardedTransport``.
    private let counts: SIPConnectionCounts
    /// ``Configuration/peerHosts`` in canonical form.
    private let peerHosts: Set<String>
    /// Channels written to since the last flush; flushed once by a task queued on the loop, so
    /// the sends made while handling one read batch leave in one flush (one `sendmmsg` for UDP,
    /// one `writev` for a stream) instead of one system call per message.
    private var unflushed: [ObjectIdentifier: any Channel] = [:]
    /// The batch being flushed (swapped with `unflushed`, so both keep their storage).
    private var flushing: [ObjectIdentifier: any Channel] = [:]
    private var flushQueued = false

    /// `SO_REUSEPORT` (Linux 3.9): every socket bound to an address with it set shares the
    /// address, the kernel spreading datagrams and connections over them.
    static let reusePortOption = NIOBSDSocket.Option(rawValue: SO_REUSEPORT)

    /// Creates a transport; nothing is bound until ``start()``.
    ///
    /// - Parameters:
    ///   - eventLoop: the one loop for all channels and callbacks; it must be a NIOPosix loop
    ///     (sockets cannot run on an `EmbeddedEventLoop`: the stack's clock-driven tests use the
    ///     loopback transport). Default: one loop of NIO's shared
    ///     `MultiThreadedEventLoopGroup.singleton`.
    ///   - logger: where connection events and dropped messages are logged.
    ///   - metricsFactory: where counters go. Default: the bootstrapped `MetricsSystem.factory`.
    ///   - metricsDimensions: put on every counter before its own (``SIPTransportMetrics``): the
    ///     gateway's `side`, so that its two transports are counted apart.
    ///   - capture: where every message sent and received is copied (``HEPCapture``).
    ///   - connectionCounts: the open connections the limits count (shared by shards).
    /// - Throws: the TLS material could not be turned into TLS contexts.
    public init(
        configuration: Configuration, eventLoop: (any EventLoop)? = nil,
        logger: Logger = Logger(label: "sip.transport"),
        metricsFactory: (any MetricsFactory)? = nil, metricsDimensions: [(String, String)] = [],
        capture: (any SIPMessageCapture)? = nil, connectionCounts: SIPConnectionCounts = SIPConnectionCounts()
    ) throws {
        self.configuration = configuration
        self.counts = connectionCounts
        self.capture = capture
        self.nextConnection = UInt64(configuration.shard) << SIPConnectionID.shardShift + 1
        self.eventLoop = eventLoop ?? MultiThreadedEventLoopGroup.singleton.next()
        self.logger = logger
        self.metrics = SIPTransportMetrics(
            factory: metricsFactory ?? MetricsSystem.factory, kinds: configuration.listeners.map(\.kind),
            dimensions: metricsDimensions)
        self.peerHosts = Set(configuration.peerHosts.map { SIPHostAddress.canonicalIP($0) ?? $0 })
        self.tlsContexts = NIOLockedValueBox(
            try configuration.tls.map {
                (
                    try NIOSSLContext(configuration: $0.serverConfiguration()),
                    try NIOSSLContext(configuration: $0.clientConfiguration())
                )
            })
    }

    /// New certificate, key and trust roots for the connections opened or accepted from now on
    /// (a certificate renewed while the gateway runs); open connections keep theirs. Only a
    /// transport made with TLS can take it.
    /// - Throws: the material cannot be turned into TLS contexts; the old ones stay.
    public func replaceTLS(_ tls: TLS) throws {
        guard configuration.tls != nil else {
            throw SIPTransportError(.unsupportedTransport, "this transport was made without TLS")
        }
        let contexts = (
            server: try NIOSSLContext(configuration: tls.serverConfiguration()),
            client: try NIOSSLContext(configuration: tls.clientConfiguration())
        )
        tlsContexts.withLockedValue { $0 = contexts }
    }

    // MARK: - Lifecycle

    /// Binds every listener in order and returns the bound addresses in the same order (an
    /// ephemeral port, from port 0, is reported as bound). On failure everything bound so far
    /// is closed and the error is rethrown. `ports`, when given, replace the listeners' ports
    /// one for one (the ports another shard bound, ``SIPShardedTransport``).
    @discardableResult
    public func start(ports: [UInt16]? = nil) async throws -> [SIPTarget] {
        try await eventLoop.submit {
            guard self.phase == .idle else {
                throw SIPTransportError(.shutDown, "start() called twice or after shutdown()")
            }
            self.phase = .started
        }.get()
        var bound: [SIPTarget] = []
        do {
            for (index, configured) in configuration.listeners.enumerated() {
                var listener = configured
                if let ports, ports.indices.contains(index) { listener.port = ports[index] }
                bound.append(try await bind(listener))
            }
        } catch {
            await shutdown()
            throw error
        }
        return bound
    }

    private func bind(_ listener: Listener) async throws -> SIPTarget {
        guard SIPHostAddress.canonicalIP(listener.host) != nil else {
            throw SIPTransportError(.invalidTarget, "listener host \(listener.host) is not an IP literal")
        }
        let host = SIPHostAddress.unbracketed(listener.host)
        let channel: any Channel
        switch listener.kind {
        case .udp:
            // NIO's datagram default reads at most 2,048 bytes; a SIP datagram may be up to 65,535
            // (RFC 3261 §18.1.1 only asks senders to prefer TCP above 1,300). Vector reads
            // (`recvmmsg`) take up to `datagramsPerRead` datagrams per system call; NIO splits
            // the receive buffer evenly between them, so it holds 64 KiB per datagram. NIO
            // reuses that buffer from read to read (its pooled receive buffer: the handler copies
            // each datagram out, so the buffer is uniquely owned again before the next read).
            let datagramsPerRead = 8
            channel = try await DatagramBootstrap(group: eventLoop)
                .channelOption(.socketOption(.so_reuseaddr), value: 1)
                .channelOption(.socketOption(Self.reusePortOption), value: configuration.reusePort ? 1 : 0)
                .channelOption(.datagramVectorReadMessageCount, value: datagramsPerRead)
                .channelOption(
                    .recvAllocator,
                    value: FixedSizeRecvByteBufferAllocator(capacity: 65_536 * datagramsPerRead)
                )
                // The kernel's default receive buffer (rmem_default, 208 KiB on Linux) holds about
                // 100 SIP datagrams: a 50 ms pause of the event loop at 2,000 NOTIFY/s overflowed it
                // in the sipp benchmark (scripts/bench). 4 MiB (capped by net.core.rmem_max).
                .channelOption(.socketOption(.so_rcvbuf), value: 4 << 20)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(SIPDatagramChannelHandler(transport: self))
                    }
                }
                .bind(host: host, port: Int(listener.port)).get()
        case .tcp, .tls:
            if listener.kind == .tls, serverTLSContext == nil {
                throw SIPTransportError(.unsupportedTransport, "a TLS listener needs Configuration.tls")
            }
            let kind = listener.kind
            channel = try await ServerBootstrap(group: eventLoop)
                .serverChannelOption(.backlog, value: 256)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .serverChannelOption(.socketOption(Self.reusePortOption), value: configuration.reusePort ? 1 : 0)
                .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try self.acceptStream(channel, kind: kind)
                    }
                }
                .bind(host: host, port: Int(listener.port)).get()
        }
        guard let local = SIPHostAddress.target(listener.kind, channel.localAddress) else {
            try? await channel.close()
            throw SIPTransportError(.invalidTarget, "listener \(listener.host) has no IP address")
        }
        try await eventLoop.submit {
            if listener.kind == .udp {
                self.datagramChannels.append(channel)
                self.datagramLocals[ObjectIdentifier(channel)] = local
            } else {
                self.serverChannels.append(channel)
            }
        }.get()
        boundListeners.withLockedValue { $0.append((listener, local)) }
        // Once per listener: the other shards' sockets on the same address say so at debug level.
        logger.log(
            level: configuration.shard == 0 ? .info : .debug, "SIP listener bound",
            metadata: ["transport": "\(listener.kind)", "address": "\(local.hostPort)"])
        return local
    }

    /// Closes every listener and connection; sends fail with ``SIPTransportError/Code/shutDown``
    /// afterwards. Safe to call more than once.
    public func shutdown() async {
        let closing = try? await eventLoop.submit { () -> [EventLoopFuture<Void>] in
            self.phase = .shutDown
            var channels: [any Channel] = self.serverChannels + self.datagramChannels
            channels.append(contentsOf: self.connections.values.map(\.channel))
            self.serverChannels = []
            self.datagramChannels = []
            return channels.map { $0.close().recover { _ in } }
        }.get()
        guard let closing else { return }
        try? await EventLoopFuture.andAllComplete(closing, on: eventLoop).get()
        boundListeners.withLockedValue { $0 = [] }
    }

    // MARK: - SIPTransport

    public func setMessageHandler(_ handler: @escaping @Sendable (SIPReceivedMessage) -> Void) {
        self.handler.withLockedValue { $0 = MessageHandler(deliver: handler) }
    }

    /// The first listener of `kind`: its advertised host and port, else the bound ones. A
    /// listener bound to a wildcard address (`0.0.0.0`, `::`) needs an advertised host.
    public func advertisedAddress(for kind: SIPTransportKind) -> SIPTarget? {
        advertisedAddresses().first { $0.kind == kind }
    }

    /// The advertised address of the first listener of `kind` in the address family of
    /// `target` (IPv4 or IPv6), for the Via of a request sent there; else
    /// ``advertisedAddress(for:)``.
    public func advertisedAddress(for kind: SIPTransportKind, toward target: SIPTarget) -> SIPTarget? {
        let wantIPv6 = SIPHostAddress.unbracketed(target.host).contains(":")
        let bound = boundListeners.withLockedValue { $0 }
        for entry in bound where entry.listener.kind == kind && entry.local.isIPv6 == wantIPv6 {
            return SIPTarget(
                kind, host: entry.listener.advertisedHost ?? entry.local.host,
                port: entry.listener.advertisedPort ?? entry.local.port)
        }
        return advertisedAddress(for: kind)
    }

    /// Every listener's advertised address, in listener order.
    public func advertisedAddresses() -> [SIPTarget] {
        boundListeners.withLockedValue { bound in
            bound.map { entry in
                SIPTarget(
                    entry.listener.kind, host: entry.listener.advertisedHost ?? entry.local.host,
                    port: entry.listener.advertisedPort ?? entry.local.port)
            }
        }
    }

    public func send(_ message: SIPMessage, to target: SIPTarget, connection: SIPConnectionID?) -> EventLoopFuture<Void>
    {
        if eventLoop.inEventLoop { return sendOnLoop(message, to: target, connection: connection) }
        return eventLoop.flatSubmit { self.sendOnLoop(message, to: target, connection: connection) }
    }

    /// Whether a stream connection to `target` is open here; on the transport's loop.
    func hasConnection(to target: SIPTarget) -> Bool {
        eventLoop.assertInEventLoop()
        if let id = connectionByRemote[target], connections[id] != nil { return true }
        return connectionByRemote[SIPHostAddress.normalized(target)].map { connections[$0] != nil } ?? false
    }

    /// Whether a stream connection is open (for the transaction layer's §18.2.2 choice).
    public func isOpen(_ connection: SIPConnectionID) -> EventLoopFuture<Bool> {
        eventLoop.submit { self.connections[connection] != nil }
    }

    // MARK: - Sending

    private func sendOnLoop(_ message: SIPMessage, to target: SIPTarget, connection: SIPConnectionID?)
        -> EventLoopFuture<Void>
    {
        eventLoop.assertInEventLoop()
        guard phase == .started else {
            return eventLoop.makeFailedFuture(SIPTransportError(.shutDown, "the transport is not running"))
        }
        let bytes = message.serialized()
        switch target.kind {
        case .udp:
            return sendDatagram(bytes, isRequest: message.isRequest, to: target)
        case .tcp, .tls:
            return sendStream(bytes, to: target, connection: connection)
        }
    }

    private func sendDatagram(_ bytes: [UInt8], isRequest: Bool, to target: SIPTarget) -> EventLoopFuture<Void> {
        guard
            let address = try? SocketAddress(ipAddress: SIPHostAddress.unbracketed(target.host), port: Int(target.port))
        else {
            return eventLoop.makeFailedFuture(SIPTransportError(.invalidTarget, "\(target.host) is not an IP literal"))
        }
        if isRequest, bytes.count > configuration.maxUDPRequestSize {
            return eventLoop.makeFailedFuture(
                SIPTransportError(
                    .messageTooLarge,
                    "\(bytes.count)-byte request exceeds the \(configuration.maxUDPRequestSize)-byte UDP limit (RFC 3261 §18.1.1: use TCP)"
                ))
        }
        guard bytes.count <= 65_507 else {
            return eventLoop.makeFailedFuture(
                SIPTransportError(.messageTooLarge, "\(bytes.count) bytes do not fit in a UDP datagram"))
        }
        guard let channel = datagramChannels.first(where: { $0.localAddress?.protocol == address.protocol }) else {
            return eventLoop.makeFailedFuture(
                SIPTransportError(
                    .unsupportedTransport, "no UDP listener for the address family of \(target.hostPort)"))
        }
        if capture != nil { captureSent(bytes, on: channel, to: target) }
        let envelope = AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes))
        let result = eventLoop.makePromise(of: Void.self)
        writeBatched(envelope, on: channel, kind: .udp, completing: result) { error in
            SIPTransportError(.connectionClosed, "UDP send to \(target.hostPort) failed: \(error)")
        }
        return result.futureResult
    }

    /// Writes `data` without flushing and queues one flush of every written channel for later in
    /// this loop iteration; `result` completes when the bytes are written (or fails, with the
    /// error mapped by `mapError`), and the message is counted as sent.
    private func writeBatched<Data: Sendable>(
        _ data: Data, on channel: any Channel, kind: SIPTransportKind,
        completing result: EventLoopPromise<Void>,
        mapError: @escaping @Sendable (any Error) -> SIPTransportError
    ) {
        let written = eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { outcome in
            switch outcome {
            case .success:
                self.metrics.increment(SIPTransportMetrics.messagesSent, kind)
                result.succeed(())
            case .failure(let error):
                result.fail(mapError(error))
            }
        }
        channel.write(data, promise: written)
        unflushed[ObjectIdentifier(channel)] = channel
        if !flushQueued {
            flushQueued = true
            eventLoop.execute { self.flushWritten() }
        }
    }

    private func flushWritten() {
        flushQueued = false
        swap(&flushing, &unflushed)
        // A flush completes write promises, whose callbacks may send again: those writes go to
        // `unflushed` and queue the next flush.
        for channel in flushing.values { channel.flush() }
        flushing.removeAll(keepingCapacity: true)
    }

    private func sendStream(_ bytes: [UInt8], to target: SIPTarget, connection: SIPConnectionID?) -> EventLoopFuture<
        Void
    > {
        if let connection, let open = connections[connection] {
            return write(bytes, on: open, id: connection)
        }
        // Targets usually name the peer exactly as the table does (an IP literal in canonical
        // form): look that up before normalising, which formats the address anew.
        if let id = connectionByRemote[target], let open = connections[id] {
            return write(bytes, on: open, id: id)
        }
        let key = SIPHostAddress.normalized(target)
        if let id = connectionByRemote[key], let open = connections[id] {
            return write(bytes, on: open, id: id)
        }
        return connect(key, serverName: target.serverName).flatMap { id in
            guard let open = self.connections[id] else {
                return self.eventLoop.makeFailedFuture(
                    SIPTransportError(.connectionClosed, "\(id) closed before the write"))
            }
            return self.write(bytes, on: open, id: id)
        }
    }

    private func write(_ bytes: [UInt8], on connection: Connection, id: SIPConnectionID) -> EventLoopFuture<Void> {
        connections[id]?.sent += 1
        let kind = connection.kind
        let channel = connection.channel
        let mapError = { @Sendable (error: any Error) in
            Self.transportError(error, kind: kind, context: "write on \(id)")
        }
        let result = eventLoop.makePromise(of: Void.self)
        // An open connection's `ready` has succeeded already, so this runs at once.
        connection.ready.whenComplete { outcome in
            switch outcome {
            case .success:
                if let capture = self.capture {
                    capture.capture(
                        SIPCapturedMessage(
                            bytes: bytes, transport: kind, source: connection.local, destination: connection.remote))
                }
                self.writeBatched(
                    ByteBuffer(bytes: bytes), on: channel, kind: kind, completing: result, mapError: mapError)
            case .failure(let error):
                result.fail(mapError(error))
            }
        }
        return result.futureResult
    }

    /// Opens (or joins the opening of) a connection to `key`, an already normalised target.
    private func connect(_ key: SIPTarget, serverName: String?) -> EventLoopFuture<SIPConnectionID> {
        if let pending = pendingConnects[key] { return pending }
        guard let address = try? SocketAddress(ipAddress: key.host, port: Int(key.port)) else {
            return eventLoop.makeFailedFuture(SIPTransportError(.invalidTarget, "\(key.host) is not an IP literal"))
        }
        let counted = !peerHosts.contains(key.host)
        let pendingCounted = pendingConnects.keys.count(where: { !peerHosts.contains($0.host) })
        guard !counted || counts.outboundFits(pending: pendingCounted, limit: configuration.maxOutboundConnections)
        else {
            metrics.refused(key.kind, .outboundLimit)
            return eventLoop.makeFailedFuture(
                SIPTransportError(
                    .connectFailed,
                    "\(configuration.maxOutboundConnections) connections opened by us are open (Configuration.maxOutboundConnections)"
                ))
        }
        var expectedNames: [String]? = nil
        var sni: String? = nil
        if key.kind == .tls {
            guard let tls = configuration.tls, clientTLSContext != nil else {
                return eventLoop.makeFailedFuture(
                    SIPTransportError(.unsupportedTransport, "TLS sends need Configuration.tls"))
            }
            var withName = key
            withName.serverName = serverName
            let names = configuration.expectedServerNames(for: withName)
            if tls.verifyServerName {
                guard !names.isEmpty else {
                    metrics.refused(.tls, .noCertificateName)
                    logger.warning(
                        "refusing TLS to an IP address without a certificate name (RFC 5922 §4)",
                        metadata: ["remote": "\(key.hostPort)"])
                    return eventLoop.makeFailedFuture(
                        SIPTransportError(
                            .tlsFailed,
                            "no certificate name to verify \(key.hostPort) against: configure the certificate-names of the peer "
                                + "at that address (an IP address alone is never accepted, RFC 5922 §4)"))
                }
                expectedNames = names
            }
            // SNI carries a host name, never an IP literal (RFC 6066 §3); a wildcard is no host.
            sni =
                SIPServerIdentity.isName(serverName)
                ? serverName : names.first { SIPServerIdentity.isName($0) && !$0.contains("*") }
        }
        let id = SIPConnectionID(nextConnection)
        nextConnection += 1
        let ready = eventLoop.makePromise(of: Void.self)
        let kind = key.kind
        let (sniName, namesToCheck) = (sni, expectedNames)
        let future = ClientBootstrap(group: eventLoop)
            .connectTimeout(configuration.connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try self.configureStream(
                        channel, kind: kind, id: id, serverName: sniName,
                        expectedServerNames: namesToCheck, ready: ready)
                }
            }
            .connect(to: address)
            .flatMapErrorThrowing { error -> any Channel in
                ready.fail(error)
                throw Self.transportError(error, kind: kind, context: "connect to \(key.hostPort)", connecting: true)
            }
            .flatMapThrowing { channel -> SIPConnectionID in
                guard channel.isActive, self.phase == .started else {
                    channel.close(promise: nil)
                    throw SIPTransportError(.connectionClosed, "connection to \(key.hostPort) closed at once")
                }
                let local = SIPHostAddress.target(kind, channel.localAddress) ?? SIPTarget(kind, host: "", port: 0)
                self.register(
                    id,
                    Connection(
                        kind: kind, channel: channel, remote: key, local: local,
                        ready: ready.futureResult, peerCertificateNames: [], inbound: false,
                        countedOutbound: counted))
                return id
            }
        pendingConnects[key] = future
        future.whenComplete { _ in self.pendingConnects[key] = nil }
        return future
    }

    // MARK: - Connections

    /// Sets up the pipeline of a stream channel: idle timer, TLS, framing (with the handshake
    /// and message timers and, for connections we open, the server name check).
    private func configureStream(
        _ channel: any Channel, kind: SIPTransportKind, id: SIPConnectionID,
        serverName: String?, expectedServerNames: [String]? = nil, isServer: Bool = false,
        ready: EventLoopPromise<Void>
    ) throws {
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(IdleStateHandler(allTimeout: configuration.idleTimeout))
        if kind == .tls {
            if isServer {
                guard let context = serverTLSContext else {
                    throw SIPTransportError(.unsupportedTransport, "no TLS configuration")
                }
                try sync.addHandler(NIOSSLServerHandler(context: context))
            } else {
                guard let context = clientTLSContext else {
                    throw SIPTransportError(.unsupportedTransport, "no TLS configuration")
                }
                try sync.addHandler(try NIOSSLClientHandler(context: context, serverHostname: serverName))
            }
        }
        let framer = SIPStreamFramer(
            limits: configuration.parserLimits,
            maxBufferedBytes: configuration.maxBufferedBytesPerConnection)
        try sync.addHandler(
            SIPStreamChannelHandler(
                transport: self, id: id, kind: kind, framer: framer, ready: ready,
                expectedServerNames: expectedServerNames,
                tlsHandshakeTimeout: configuration.tlsHandshakeTimeout, headerTimeout: configuration.headerTimeout))
    }

    /// An accepted TCP/TLS connection (on the loop, from the child channel initializer).
    private func acceptStream(_ channel: any Channel, kind: SIPTransportKind) throws {
        eventLoop.assertInEventLoop()
        guard phase == .started, let remote = SIPHostAddress.target(kind, channel.remoteAddress),
            let local = SIPHostAddress.target(kind, channel.localAddress)
        else { throw SIPTransportError(.shutDown, "not accepting connections") }
        // The configured peers' addresses have slots of their own: strangers filling the shared
        // table cannot lock the gateway's own peers out (the per-address limit still applies).
        let counted = !peerHosts.contains(SIPHostAddress.canonicalIP(remote.host) ?? remote.host)
        switch counts.admitInbound(from: remote.host, counted: counted, limits: configuration) {
        case nil: break
        case .inboundLimit:
            // Counted; logged at debug only, so that a flood of connections is no flood of logs.
            metrics.refused(kind, .inboundLimit)
            logger.debug(
                "refusing a SIP connection: Configuration.maxInboundConnections reached",
                metadata: ["limit": "\(configuration.maxInboundConnections)", "remote": "\(remote.hostPort)"])
            throw SIPTransportError(.connectFailed, "too many inbound connections")
        case .addressLimit:
            metrics.refused(kind, .addressLimit)
            logger.debug(
                "refusing a SIP connection: Configuration.maxInboundConnectionsPerAddress reached",
                metadata: ["limit": "\(configuration.maxInboundConnectionsPerAddress)", "remote": "\(remote.host)"])
            throw SIPTransportError(.connectFailed, "too many connections from \(remote.host)")
        }
        let id = SIPConnectionID(nextConnection)
        nextConnection += 1
        let ready = eventLoop.makePromise(of: Void.self)
        do {
            try configureStream(channel, kind: kind, id: id, serverName: nil, isServer: true, ready: ready)
        } catch {
            counts.releaseInbound(from: remote.host, counted: counted)
            ready.fail(error)
            throw error
        }
        register(
            id,
            Connection(
                kind: kind, channel: channel, remote: remote, local: local, ready: ready.futureResult,
                peerCertificateNames: [], inbound: true, countedInbound: counted))
    }

    private func register(_ id: SIPConnectionID, _ connection: Connection) {
        connections[id] = connection
        connectionByRemote[connection.remote] = id
        counts.opened(id, to: connection.remote)
        // An inbound connection took its slot when it was accepted (``acceptStream(_:kind:)``).
        if !connection.inbound, connection.countedOutbound { counts.openedOutbound() }
        metrics.increment(SIPTransportMetrics.connectionsOpened, connection.kind)
        logger.debug(
            "SIP connection opened",
            metadata: [
                "connection": "\(id)", "transport": "\(connection.kind)", "remote": "\(connection.remote.hostPort)",
            ])
    }

    func connectionReady(_ id: SIPConnectionID, peerCertificateNames: [String]) {
        connections[id]?.peerCertificateNames = peerCertificateNames
        logger.debug("TLS handshake done", metadata: ["connection": "\(id)", "peer": "\(peerCertificateNames)"])
    }

    func connectionClosed(_ id: SIPConnectionID) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        if connectionByRemote[connection.remote] == id { connectionByRemote[connection.remote] = nil }
        counts.closed(id, to: connection.remote)
        if connection.inbound {
            counts.releaseInbound(from: connection.remote.host, counted: connection.countedInbound)
        } else if connection.countedOutbound {
            counts.closedOutbound()
        }
        metrics.increment(SIPTransportMetrics.connectionsClosed, connection.kind)
        logger.debug(
            "SIP connection closed", metadata: ["connection": "\(id)", "remote": "\(connection.remote.hostPort)"])
    }

    func connectionTimedOut(_ id: SIPConnectionID, kind: SIPTransportKind, _ timeout: SIPTransportMetrics.Timeout) {
        metrics.timedOut(kind, timeout)
        logger.debug(
            "closing SIP connection: timeout", metadata: ["connection": "\(id)", "timeout": "\(timeout.rawValue)"])
    }

    func serverNameRefused(_ id: SIPConnectionID, expected: [String], presented: [String]) {
        metrics.refused(.tls, .certificateName)
        logger.warning(
            "closing TLS connection: the server's certificate is not for the expected name (RFC 5922 §4)",
            metadata: ["connection": "\(id)", "expected": "\(expected)", "presented": "\(presented)"])
    }

    func connectionError(_ id: SIPConnectionID, kind: SIPTransportKind, _ error: any Error) {
        logger.notice(
            "SIP connection error", metadata: ["connection": "\(id)", "transport": "\(kind)", "error": "\(error)"])
    }

    /// The framer gave up on connection `id` (RFC 3261 §18.3): counted, and a message refused
    /// for its size is answered first, on the connection (413 or 513, RFC 3261 §21.4.11,
    /// §21.5.14, when its header section still gives Via, From, To, Call-ID and CSeq). The
    /// future completes when the connection may be closed: after that answer is written.
    func framingLost(_ id: SIPConnectionID, kind: SIPTransportKind, _ error: SIPParseError, refused: [UInt8]?)
        -> EventLoopFuture<Void>
    {
        logger.notice(
            "closing SIP connection: framing lost (RFC 3261 §18.3)",
            metadata: ["connection": "\(id)", "error": "\(error)"])
        guard let refused, let connection = connections[id],
            let answered = rejectMalformed(refused, error, kind: kind, source: connection.remote, connection: id)
        else {
            if refused == nil {
                metrics.increment(SIPTransportMetrics.malformedDropped, kind, reason: error.code.rawValue)
            }
            return eventLoop.makeSucceededVoidFuture()
        }
        return answered.recover { _ in }
    }

    func logDatagramError(_ error: any Error) {
        logger.debug("UDP socket error", metadata: ["error": "\(error)"])
    }

    // MARK: - Receiving

    func receiveStream(
        _ bytes: [UInt8], connection id: SIPConnectionID, kind: SIPTransportKind, peerCertificateNames: [String]
    ) {
        guard let connection = connections[id] else { return }
        connections[id]?.received += 1
        receive(
            bytes, kind: kind, source: connection.remote, local: connection.local, connection: id,
            peerCertificateNames: peerCertificateNames)
    }

    /// One framed message (a datagram, or a message cut from a stream).
    func receive(
        _ bytes: [UInt8], kind: SIPTransportKind, source: SIPTarget, local: SIPTarget,
        connection: SIPConnectionID?, peerCertificateNames: [String]
    ) {
        eventLoop.assertInEventLoop()
        guard phase == .started else { return }
        if capture != nil { captureReceived(bytes, kind: kind, source: source, local: local) }
        let message: SIPMessage
        do {
            message = try SIPMessage(parsing: bytes, limits: configuration.parserLimits)
        } catch {
            if error.code == .emptyMessage { return }  // a CRLF keep-alive datagram
            rejectMalformed(bytes, error, kind: kind, source: source, connection: connection)
            return
        }
        var delivered = message
        switch message {
        case .request(var request):
            do {
                try request.headers.stampTopVia(source: source)
            } catch {
                rejectMalformed(bytes, error, kind: kind, source: source, connection: connection)
                return
            }
            delivered = .request(request)
        case .response(let response):
            if configuration.discardResponsesWithForeignSentBy, !sentByIsOurs(response) {
                metrics.increment(SIPTransportMetrics.malformedDropped, kind, reason: "via-sent-by-mismatch")
                logger.debug(
                    "discarding a response whose top Via is not ours (RFC 3261 §18.1.2)",
                    metadata: ["source": "\(source)"])
                return
            }
        }
        metrics.increment(SIPTransportMetrics.messagesReceived, kind)
        let received = SIPReceivedMessage(
            message: delivered, source: source, local: local, connection: connection,
            peerCertificateNames: peerCertificateNames)
        let current = handler.withLockedValue { $0 }
        current?.deliver(received)
    }

    /// 400 (413, 513 past a limit) when a response can be formed, else drop; both counted. The
    /// answer's send, or nil when dropped.
    @discardableResult
    private func rejectMalformed(
        _ bytes: [UInt8], _ error: SIPParseError, kind: SIPTransportKind, source: SIPTarget,
        connection: SIPConnectionID?
    ) -> EventLoopFuture<Void>? {
        let tag = String(UInt64.random(in: 1...UInt64.max), radix: 36)
        guard
            var response = SIPResponse.badRequest(
                salvaging: bytes, error: error, toTag: tag, limits: configuration.parserLimits),
            (try? response.headers.stampTopVia(source: source)) != nil,
            let topVia = try? response.headers.via.first,
            var route = try? SIPResponseRoute.forResponse(topVia: topVia, requestConnection: connection)
        else {
            metrics.increment(SIPTransportMetrics.malformedDropped, kind, reason: error.code.rawValue)
            logger.debug("dropping a malformed message", metadata: ["source": "\(source)", "error": "\(error)"])
            return nil
        }
        // A datagram's 400 goes back the way the request came (its Via was just stamped with the
        // source), and a stream's on its own connection.
        if route.target.kind != kind {
            route = SIPResponseRoute(
                connection: connection, target: SIPTarget(kind, host: source.host, port: source.port))
        }
        logger.debug(
            "answering a malformed request with \(response.statusCode)",
            metadata: ["source": "\(source)", "error": "\(error)"])
        let future = sendOnLoop(.response(response), to: route.target, connection: route.connection)
        future.whenSuccess { self.metrics.increment(SIPTransportMetrics.badRequestSent, kind) }
        future.whenFailure { error in
            self.logger.debug("could not send 400", metadata: ["error": "\(error)"])
        }
        return future
    }

    /// RFC 3261 §18.1.2: "If the value does not correspond to a value that the client transport
    /// is configured to insert into the sent-by parameter, the response MUST be silently
    /// discarded." Matches any listener's advertised or bound address (a wildcard bound address
    /// matches any host on its port).
    private func sentByIsOurs(_ response: SIPResponse) -> Bool {
        guard let via = try? response.headers.via.first else { return false }
        let kind = SIPTransportKind(viaToken: via.transport)
        let port = via.port ?? kind?.defaultPort ?? 5060
        let ours = boundListeners.withLockedValue { $0 }
        for entry in ours {
            let advertisedHost = entry.listener.advertisedHost ?? entry.local.host
            let advertisedPort = entry.listener.advertisedPort ?? entry.local.port
            if port == advertisedPort, SIPHostAddress.same(via.host, advertisedHost) { return true }
            let wildcard = entry.local.host == "0.0.0.0" || entry.local.host == "::"
            if port == entry.local.port, wildcard || SIPHostAddress.same(via.host, entry.local.host) { return true }
        }
        return false
    }

    // MARK: - Errors

    static func transportError(
        _ error: any Error, kind: SIPTransportKind, context: String,
        connecting: Bool = false
    ) -> SIPTransportError {
        if let error = error as? SIPTransportError { return error }
        if error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError {
            return SIPTransportError(.tlsFailed, "\(context): \(error)")
        }
        return SIPTransportError(connecting ? .connectFailed : .connectionClosed, "\(context): \(error)")
    }
}
