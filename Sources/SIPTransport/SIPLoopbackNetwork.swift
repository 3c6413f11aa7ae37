public import NIOCore
public import SIPMessages

/// An in-memory SIP network on one event loop, for tests of the layers above the transport.
///
/// Every endpoint is a ``SIPTransport`` with one or more addresses (any ``SIPTransportKind``). A message
/// sent between endpoints is serialized to bytes and parsed again by the receiver, so tests
/// exercise the wire form; the receiver applies RFC 3261 §18.2.1 to requests (`received`,
/// RFC 3581 `rport`) like a socket transport and delivers on the loop, after ``latency``.
///
/// Fault injection: ``dropNext(_:failingSend:where:)`` drops the next N matching messages
/// (silently, as UDP loses datagrams, or failing the send, as a broken connection would). Every
/// message that crossed (or was dropped) is in ``log``.
///
/// Confinement: the network and its endpoints are used on ``eventLoop`` only (tests drive an
/// `EmbeddedEventLoop` from one thread; `advanceTime` is the clock). Nothing here locks.
public final class SIPLoopbackNetwork: @unchecked Sendable {
    /// One message that crossed the network (or was dropped by fault injection).
    public struct Record: Sendable {
        /// The sender's address.
        public var from: SIPTarget
        /// Where it was sent.
        public var to: SIPTarget
        /// The bytes on the wire.
        public var bytes: [UInt8]
        /// The message as sent (before the receiver's §18.2.1 processing); nil for raw bytes
        /// (``Endpoint/sendRaw(_:to:)``) that do not parse.
        public var message: SIPMessage?
        /// When it was sent (the loop's clock).
        public var time: NIODeadline
        /// Whether fault injection dropped it.
        public var dropped: Bool
    }

    /// A predicate over messages for fault injection.
    public typealias Match = @Sendable (Record) -> Bool

    private struct DropRule {
        var remaining: Int
        var failingSend: Bool
        var match: Match
    }

    public let eventLoop: any EventLoop
    /// Delay between a send and its delivery; zero delivers on the loop's next run.
    public var latency: TimeAmount
    /// Parser limits the receivers apply (``SIPParserLimits/default`` unless changed).
    public var parserLimits: SIPParserLimits = .default
    /// Every message sent, in order, dropped ones included.
    public private(set) var log: [Record] = []
    /// Messages a receiver could not parse (they are not delivered; counted here).
    public private(set) var unparseableCount = 0
    /// Of those, requests answered with a 400 (``SIPMessages/SIPResponse/badRequest(salvaging:error:toTag:limits:)``,
    /// as ``SIPNetworkTransport`` does: RFC 3261 §16.3, §18.2).
    public private(set) var badRequestsSent = 0

    private var endpoints: [SIPTarget: Endpoint] = [:]
    private var dropRules: [DropRule] = []
    private var connections: [Set<SIPTarget>: SIPConnectionID] = [:]
    private var nextConnection: UInt64 = 1

    /// A network on `eventLoop` delivering after `latency` (default: zero, next loop run).
    public init(eventLoop: any EventLoop, latency: TimeAmount = .zero) {
        self.eventLoop = eventLoop
        self.latency = latency
    }

    /// Creates an endpoint listening at `address` and, optionally, more addresses (one per
    /// transport kind, like a server listening on UDP, TCP and TLS). An address already taken
    /// returns the endpoint that has it.
    public func endpoint(_ address: SIPTarget, _ more: SIPTarget...) -> Endpoint {
        if let existing = endpoints[address] { return existing }
        let endpoint = Endpoint(network: self, addresses: [address] + more)
        for a in endpoint.addresses { endpoints[a] = endpoint }
        return endpoint
    }

    /// Removes the endpoint with `address` (all its addresses): later sends to it fail with
    /// ``SIPTransportError/Code/connectFailed``.
    public func removeEndpoint(_ address: SIPTarget) {
        guard let endpoint = endpoints[address] else { return }
        for a in endpoint.addresses {
            endpoints[a] = nil
            connections = connections.filter { !$0.key.contains(a) }
        }
    }

    /// Drops the next `count` messages for which `match` is true. With `failingSend` the send's
    /// future fails with ``SIPTransportError/Code/dropped`` (a transport error, RFC 3261 §18.4);
    /// otherwise the send succeeds and the message is lost (UDP loss).
    public func dropNext(_ count: Int = 1, failingSend: Bool = false, where match: @escaping Match) {
        guard count > 0 else { return }
        dropRules.append(DropRule(remaining: count, failingSend: failingSend, match: match))
    }

    /// The messages in ``log`` that were delivered (not dropped).
    public var delivered: [Record] { log.filter { !$0.dropped } }

    /// Clears ``log``.
    public func clearLog() { log.removeAll() }

    fileprivate func send(
        _ message: SIPMessage, from sender: Endpoint, to target: SIPTarget,
        connection: SIPConnectionID?
    ) -> EventLoopFuture<Void> {
        send(bytes: message.serialized(), message: message, from: sender, to: target)
    }

    fileprivate func send(
        bytes: [UInt8], message: SIPMessage?, from sender: Endpoint,
        to target: SIPTarget
    ) -> EventLoopFuture<Void> {
        guard let source = sender.advertisedAddress(for: target.kind) else {
            return eventLoop.makeFailedFuture(
                SIPTransportError(
                    .unsupportedTransport, "endpoint \(sender.address) has no \(target.kind) address"))
        }
        guard endpoints[target] != nil else {
            return eventLoop.makeFailedFuture(SIPTransportError(.connectFailed, "no loopback endpoint at \(target)"))
        }
        let record = Record(
            from: source, to: target, bytes: bytes, message: message,
            time: eventLoop.now, dropped: false)
        if let index = dropRules.firstIndex(where: { $0.match(record) }) {
            var dropped = record
            dropped.dropped = true
            log.append(dropped)
            let failing = dropRules[index].failingSend
            dropRules[index].remaining -= 1
            if dropRules[index].remaining == 0 { dropRules.remove(at: index) }
            if failing {
                return eventLoop.makeFailedFuture(
                    SIPTransportError(.dropped, "fault injection dropped a message to \(target)"))
            }
            return eventLoop.makeSucceededVoidFuture()
        }
        log.append(record)
        let connectionID = target.kind.isReliable ? self.connection(between: source, and: target) : nil
        let deliver: @Sendable () -> Void = { [self] in
            self.deliver(bytes, from: source, to: target, connection: connectionID)
        }
        if latency > .zero {
            eventLoop.scheduleTask(in: latency, deliver)
        } else {
            eventLoop.execute(deliver)
        }
        return eventLoop.makeSucceededVoidFuture()
    }

    private func connection(between a: SIPTarget, and b: SIPTarget) -> SIPConnectionID {
        let key: Set<SIPTarget> = [a, b]
        if let id = connections[key] { return id }
        let id = SIPConnectionID(nextConnection)
        nextConnection += 1
        connections[key] = id
        return id
    }

    private func deliver(_ bytes: [UInt8], from source: SIPTarget, to local: SIPTarget, connection: SIPConnectionID?) {
        // The receiver may have been removed while the message was in flight.
        guard let receiver = endpoints[local] else { return }
        let parsed: SIPMessage
        do {
            parsed = try SIPMessage(parsing: bytes, limits: parserLimits)
        } catch {
            unparseableCount += 1
            rejectMalformed(bytes, error, from: source, at: receiver, connection: connection)
            return
        }
        let message = Self.applyingReceivedProcessing(parsed, source: source)
        receiver.handler?(
            SIPReceivedMessage(
                message: message, source: source, local: local,
                connection: connection))
    }

    /// A malformed request gets a 400 when enough of it survives to form one (RFC 3261 §16.3,
    /// §18.2; RFC 4475 §3.3.1, §3.3.8, §3.3.9), sent back the way it came; anything else is
    /// dropped. The same rule as ``SIPNetworkTransport``'s.
    private func rejectMalformed(
        _ bytes: [UInt8], _ error: SIPParseError, from source: SIPTarget, at receiver: Endpoint,
        connection: SIPConnectionID?
    ) {
        let tag = String(UInt64.random(in: 1...UInt64.max), radix: 36)
        guard var response = SIPResponse.badRequest(salvaging: bytes, error: error, toTag: tag, limits: parserLimits),
            (try? response.headers.stampTopVia(source: source)) != nil,
            let topVia = try? response.headers.via.first,
            var route = try? SIPResponseRoute.forResponse(topVia: topVia, requestConnection: connection)
        else { return }
        if route.target.kind != source.kind {
            route = SIPResponseRoute(connection: connection, target: source)
        }
        badRequestsSent += 1
        _ = send(.response(response), from: receiver, to: route.target, connection: route.connection)
    }

    /// RFC 3261 §18.2.1 with RFC 3581 §4, as a receiving transport applies it to a request
    /// (``SIPHeaders/stampTopVia(source:)``, shared with ``SIPNetworkTransport``): `received`
    /// when the sent-by host differs from the source address, `rport` filled in with the source
    /// port (and `received` added) when requested.
    ///
    /// Responses and requests whose top Via does not parse are returned unchanged.
    public static func applyingReceivedProcessing(_ message: SIPMessage, source: SIPTarget) -> SIPMessage {
        guard case .request(var request) = message else { return message }
        guard (try? request.headers.stampTopVia(source: source)) == true else { return message }
        return .request(request)
    }

    /// A node on a ``SIPLoopbackNetwork`` with one or more addresses: a ``SIPTransport``.
    public final class Endpoint: SIPTransport, @unchecked Sendable {
        /// The first address (the one the endpoint was created with).
        public var address: SIPTarget { addresses[0] }
        /// Every address, at most one per transport kind is advertised (the first of its kind).
        public let addresses: [SIPTarget]
        // Strong on purpose: an endpoint outliving its network must not trap. The cycle is
        // broken by ``SIPLoopbackNetwork/removeEndpoint(_:)``.
        private let network: SIPLoopbackNetwork
        fileprivate var handler: (@Sendable (SIPReceivedMessage) -> Void)?

        fileprivate init(network: SIPLoopbackNetwork, addresses: [SIPTarget]) {
            self.network = network
            self.addresses = addresses
        }

        public var eventLoop: any EventLoop { network.eventLoop }

        public func send(_ message: SIPMessage, to target: SIPTarget, connection: SIPConnectionID?) -> EventLoopFuture<
            Void
        > {
            network.send(message, from: self, to: target, connection: connection)
        }

        /// Sends bytes as they are (malformed messages, RFC 4475 vectors that do not parse); the
        /// receiver parses them like any other.
        public func sendRaw(_ bytes: [UInt8], to target: SIPTarget) -> EventLoopFuture<Void> {
            network.send(bytes: bytes, message: try? SIPMessage(parsing: bytes), from: self, to: target)
        }

        public func setMessageHandler(_ handler: @escaping @Sendable (SIPReceivedMessage) -> Void) {
            self.handler = handler
        }

        public func advertisedAddress(for kind: SIPTransportKind) -> SIPTarget? {
            addresses.first { $0.kind == kind }
        }
    }
}
