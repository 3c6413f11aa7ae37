public import Logging
public import Metrics
internal import NIOConcurrencyHelpers
public import NIOCore
internal import NIOPosix
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#elseif canImport(Darwin)
    internal import Darwin
#endif

/// Copies every SIP message a transport sends and receives to a HEP v3 collector over UDP
/// (``HEPPacket``: Homer, sngrep, Kamailio's `sipcapture`), without ever holding up the relay.
///
/// - ``capture(_:)`` (the transports' event loop) stamps the time, appends the message to a
///   bounded queue under a lock and returns; a full queue drops the message and counts it. The
///   byte array is shared with the transport's, not copied.
/// - A drain on ``eventLoop`` (chosen apart from the relay's loop where the group has another)
///   takes the whole queue at once, finds each Call-ID, encodes the packets and writes them to
///   its own UDP socket, flushing at the channel's write watermark and at the end of the batch.
///   When the socket cannot take more (the channel stays unwritable after a flush) the copy is
///   dropped and counted rather than buffered.
/// - A collector that is down costs nothing: UDP to a closed port is sent and forgotten (the
///   socket is not connected, so ICMP errors are not reported back).
///
/// Counters (swift-metrics, through the injected factory), at zero from the start:
///
/// | label | dimensions | counts |
/// |---|---|---|
/// | `gateway_capture_sent_total` | | HEP packets written to the socket |
/// | `gateway_capture_dropped_total` | `reason`: `queue-full`, `too-large`, `send-failed` | messages not captured |
public final class HEPCapture: SIPMessageCapture, @unchecked Sendable {
    // @unchecked: the queue is behind its lock; everything else mutable is confined to
    // `eventLoop`.

    /// Where the packets go and what they carry.
    public struct Configuration: Sendable, Hashable {
        /// The collector's IP address (IPv4, or IPv6 with or without brackets).
        public var host: String
        public var port: UInt16
        /// The capture agent id (HEP chunk 0x000c).
        public var captureID: UInt32
        /// Messages waiting to be sent at most; beyond, new ones are dropped.
        public var queueCapacity: Int

        public init(host: String, port: UInt16, captureID: UInt32, queueCapacity: Int = 10_000) {
            self.host = host
            self.port = port
            self.captureID = captureID
            self.queueCapacity = queueCapacity
        }
    }

    /// Why a message was not captured (`reason` of `gateway_capture_dropped_total`).
    public enum DropReason: String, Sendable, CaseIterable {
        /// The queue held ``Configuration/queueCapacity`` messages, or the socket took no more.
        case queueFull = "queue-full"
        /// Longer than a HEP v3 packet or a UDP datagram can be (65,507 bytes).
        case tooLarge = "too-large"
        /// The socket refused the packet, or the capture was not running.
        case sendFailed = "send-failed"
    }

    /// Counts since start, readable from any thread (the counters carry the same figures).
    public struct Statistics: Sendable, Hashable {
        public var sent = 0
        public var dropped: [DropReason: Int] = [:]
        public var droppedTotal: Int { dropped.values.reduce(0, +) }
    }

    public let configuration: Configuration
    /// The loop that encodes and sends.
    public let eventLoop: any EventLoop
    private let destination: SocketAddress
    private let logger: Logger
    private let sentCounter: Counter
    private let droppedCounters: [DropReason: Counter]

    private struct Item {
        var message: SIPCapturedMessage
        var seconds: UInt32
        var microseconds: UInt32
    }

    private struct Queue {
        var items: [Item] = []
        var drainQueued = false
        var statistics = Statistics()
    }

    private let queue = NIOLockedValueBox(Queue())

    // Confined to `eventLoop`.
    private var channel: (any Channel)?
    /// The batch being sent (swapped with the queue's items, so both keep their storage).
    private var draining: [Item] = []
    /// Parsed addresses by text: peers and listeners repeat.
    private var addresses: [String: HEPPacket.Address] = [:]
    private var failing = false
    /// Whether messages are copied: an operator turns capture off and on while the gateway runs
    /// (README, "Runtime control": `PUT /capture`); while off, nothing is queued or counted.
    private let copying = Atomic<Bool>(true)

    /// - Parameters:
    ///   - eventLoop: where the encoding and sending run: best a loop other than the relay's.
    /// - Throws: ``SIPTransportError`` when the host is not an IP literal.
    public init(
        configuration: Configuration, eventLoop: any EventLoop, logger: Logger = Logger(label: "sip.capture"),
        metricsFactory: (any MetricsFactory)? = nil
    ) throws {
        guard
            let address = try? SocketAddress(
                ipAddress: SIPHostAddress.unbracketed(configuration.host), port: Int(configuration.port))
        else {
            throw SIPTransportError(.invalidTarget, "capture host \(configuration.host) is not an IP literal")
        }
        self.configuration = configuration
        self.eventLoop = eventLoop
        self.destination = address
        self.logger = logger
        let factory = metricsFactory ?? MetricsSystem.factory
        sentCounter = Counter(label: "gateway_capture_sent_total", factory: factory)
        droppedCounters = Dictionary(
            uniqueKeysWithValues: DropReason.allCases.map {
                (
                    $0,
                    Counter(
                        label: "gateway_capture_dropped_total", dimensions: [("reason", $0.rawValue)], factory: factory)
                )
            })
        sentCounter.increment(by: 0)
        for counter in droppedCounters.values { counter.increment(by: 0) }
    }

    /// A loop of `group` other than `relay`'s when there is one (so that encoding and sending
    /// never take the relay's thread), else `relay`.
    public static func loop(in group: any EventLoopGroup, apartFrom relay: any EventLoop) -> any EventLoop {
        for loop in group.makeIterator() where ObjectIdentifier(loop) != ObjectIdentifier(relay) { return loop }
        return relay
    }

    /// Opens the sending socket (an ephemeral port on the wildcard address of the collector's
    /// address family).
    public func start() async throws {
        let any = destination.protocol == .inet6 ? "::" : "0.0.0.0"
        let channel = try await DatagramBootstrap(group: eventLoop)
            .channelOption(.socketOption(.so_sndbuf), value: 4 << 20)
            .bind(host: any, port: 0).get()
        try await eventLoop.submit { self.channel = channel }.get()
        logger.info(
            "HEP v3 capture to \(configuration.host):\(configuration.port), agent id \(configuration.captureID)")
    }

    /// Sends what is queued, then closes the socket; later messages are dropped.
    public func shutdown() async {
        let closing: (any Channel)? =
            (try? await eventLoop.submit { () -> (any Channel)? in
                self.drain()
                defer { self.channel = nil }
                return self.channel
            }.get()) ?? nil
        try? await closing?.close()
    }

    public var statistics: Statistics { queue.withLockedValue { $0.statistics } }

    /// Whether messages are copied to the collector (true from the start).
    public var isEnabled: Bool {
        get { copying.load(ordering: .relaxed) }
        set { copying.store(newValue, ordering: .relaxed) }
    }

    // MARK: - On the relay's loop

    public func capture(_ message: SIPCapturedMessage) {
        guard copying.load(ordering: .relaxed) else { return }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let item = Item(
            message: message, seconds: UInt32(truncatingIfNeeded: now.tv_sec),
            microseconds: UInt32(truncatingIfNeeded: now.tv_nsec / 1000))
        let capacity = configuration.queueCapacity
        let (accepted, schedule) = queue.withLockedValue { q -> (Bool, Bool) in
            guard q.items.count < capacity else {
                q.statistics.dropped[.queueFull, default: 0] += 1
                return (false, false)
            }
            q.items.append(item)
            if q.drainQueued { return (true, false) }
            q.drainQueued = true
            return (true, true)
        }
        if !accepted { droppedCounters[.queueFull]?.increment() }
        if schedule { eventLoop.execute { self.drain() } }
    }

    // MARK: - On the capture loop

    private func drain() {
        eventLoop.assertInEventLoop()
        queue.withLockedValue { q in
            swap(&q.items, &draining)
            q.drainQueued = false
        }
        guard !draining.isEmpty else { return }
        defer { draining.removeAll(keepingCapacity: true) }
        guard let channel, channel.isActive else {
            count(dropped: .sendFailed, draining.count, error: "the capture socket is not open")
            return
        }
        var tooLarge = 0
        var unencodable = 0
        var full = 0
        for item in draining {
            // Past the channel's high watermark (64 KiB pending), what is pending goes to the
            // socket now (NIO writes it with sendmmsg); still unwritable means the socket buffer
            // is full, and the copy is dropped rather than buffered.
            if !channel.isWritable { channel.flush() }
            guard channel.isWritable else {
                full += 1
                continue
            }
            guard let packet = packet(item) else {
                unencodable += 1
                continue
            }
            guard let bytes = packet.encoded(), bytes.count <= 65_507 else {
                tooLarge += 1
                continue
            }
            let envelope = AddressedEnvelope(remoteAddress: destination, data: channel.allocator.buffer(bytes: bytes))
            let written = eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { outcome in
                switch outcome {
                case .success:
                    self.failing = false
                    self.sentCounter.increment()
                    self.queue.withLockedValue { $0.statistics.sent += 1 }
                case .failure(let error):
                    self.count(dropped: .sendFailed, 1, error: "\(error)")
                }
            }
            channel.write(envelope, promise: written)
        }
        channel.flush()
        if tooLarge > 0 { count(dropped: .tooLarge, tooLarge) }
        if unencodable > 0 { count(dropped: .sendFailed, unencodable, error: "an address is not an IP literal") }
        if full > 0 { count(dropped: .queueFull, full) }
    }

    private func count(dropped reason: DropReason, _ n: Int, error: String? = nil) {
        droppedCounters[reason]?.increment(by: Int64(n))
        queue.withLockedValue { $0.statistics.dropped[reason, default: 0] += n }
        // Logged once per run of failures, never per message.
        if reason == .sendFailed, !failing {
            failing = true
            logger.warning(
                "HEP capture: messages dropped", metadata: ["reason": "\(reason.rawValue)", "error": "\(error ?? "")"])
        }
    }

    private func packet(_ item: Item) -> HEPPacket? {
        let m = item.message
        guard let source = address(m.source.host), let destination = address(m.destination.host) else { return nil }
        return HEPPacket(
            transport: m.transport, source: source, sourcePort: m.source.port, destination: destination,
            destinationPort: m.destination.port, seconds: item.seconds, microseconds: item.microseconds,
            captureID: configuration.captureID, correlationID: HEPPacket.callID(in: m.bytes), payload: m.bytes)
    }

    /// The bytes of an IP literal (cached: the same few addresses come back all the time).
    private func address(_ host: String) -> HEPPacket.Address? {
        if let known = addresses[host] { return known }
        guard let socket = try? SocketAddress(ipAddress: SIPHostAddress.unbracketed(host), port: 0) else { return nil }
        let parsed: HEPPacket.Address?
        switch socket {
        case .v4(let a):
            let value = UInt32(bigEndian: a.address.sin_addr.s_addr)
            parsed = HEPPacket.Address(bytes: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) })
        case .v6(let a):
            // The sixteen octets of in6_addr, a tuple in C, in network order.
            let octets = Mirror(reflecting: a.address.sin6_addr.__in6_u.__u6_addr8).children.compactMap {
                $0.value as? UInt8
            }
            parsed = HEPPacket.Address(bytes: octets)
        case .unixDomainSocket: parsed = nil
        }
        if addresses.count >= 4096 { addresses.removeAll(keepingCapacity: true) }
        addresses[host] = parsed
        return parsed
    }
}
