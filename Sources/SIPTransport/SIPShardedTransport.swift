public import Logging
public import Metrics
public import NIOCore
public import SIPMessages

/// One side's sockets shared by the shards of a gateway (docs/shards.md): a
/// ``SIPNetworkTransport`` per shard, each on its shard's event loop, all bound to the same
/// listeners with `SO_REUSEPORT`.
///
/// The kernel hands a datagram or a connection to one of the sockets by the sender's address,
/// not by owner, so the transport that reads a message parses it, asks ``ShardMap/owner(of:)``,
/// and hands it to the owner's loop when it is not its own: each message reaches exactly one
/// shard's handler, on that shard's loop. A shard sees the sockets through ``shard(_:)``, a
/// ``SIPTransport`` on its loop: a send on a connection another shard's transport holds goes
/// to that transport (the connection's identifier names it) and its result comes back to the
/// sender's loop; any other send leaves from the shard's own sockets, whose addresses are the
/// same. The members count into the same counters (a side's figures are the sum of its
/// shards'), and their connections against the same limits (``SIPConnectionCounts``).
public final class SIPShardedTransport: Sendable {
    public let map: ShardMap
    /// The shards' transports, in shard order.
    public let members: [SIPNetworkTransport]
    private let handlers: [HandlerSlot]
    /// The members' connections, counted and found together.
    private let connections: SIPConnectionCounts

    /// One transport per loop of `loops` (their number is the number of shards), each made
    /// with `configuration`, its shard, and, when there are several, `SO_REUSEPORT` (one alone
    /// binds as any transport does: a port another socket holds is refused).
    public init(
        configuration: SIPNetworkTransport.Configuration, loops: [any EventLoop],
        logger: Logger = Logger(label: "sip.transport"), metricsFactory: (any MetricsFactory)? = nil,
        metricsDimensions: [(String, String)] = [], capture: (any SIPMessageCapture)? = nil
    ) throws {
        map = ShardMap(count: loops.count)
        let counts = SIPConnectionCounts()
        connections = counts
        members = try loops.enumerated().map { shard, loop in
            var own = configuration
            own.shard = shard
            own.reusePort = loops.count > 1
            return try SIPNetworkTransport(
                configuration: own, eventLoop: loop, logger: logger, metricsFactory: metricsFactory,
                metricsDimensions: metricsDimensions, capture: capture, connectionCounts: counts)
        }
        handlers = loops.map { HandlerSlot(eventLoop: $0) }
        for (shard, member) in members.enumerated() {
            member.setMessageHandler { [weak self] received in self?.deliver(received, readBy: shard) }
        }
    }

    /// Binds shard 0's listeners, then every other shard's to the same addresses (a port 0
    /// resolved by the first); returns the addresses bound, in listener order. On failure
    /// everything bound is closed.
    @discardableResult
    public func start() async throws -> [SIPTarget] {
        let bound = try await members[0].start()
        do {
            for member in members.dropFirst() {
                try await member.start(ports: bound.map(\.port))
            }
        } catch {
            await shutdown()
            throw error
        }
        return bound
    }

    public func shutdown() async {
        for member in members { await member.shutdown() }
    }

    /// The configuration the members were made with (each with its own shard).
    public var configuration: SIPNetworkTransport.Configuration { members[0].configuration }

    /// New TLS material for every member's new connections (``SIPNetworkTransport/replaceTLS(_:)``).
    public func replaceTLS(_ tls: SIPNetworkTransport.TLS) throws {
        for member in members { try member.replaceTLS(tls) }
    }

    /// A page of the open connections of every member, in shard order, and their number.
    public func openConnections(offset: Int, limit: Int) async throws -> (
        total: Int, page: [SIPNetworkTransport.OpenConnection]
    ) {
        var total = 0
        var page: [SIPNetworkTransport.OpenConnection] = []
        for member in members {
            let (count, part) = try await member.openConnections(
                offset: max(0, offset - total), limit: max(0, limit - page.count)
            ).get()
            total += count
            page += part
        }
        return (total, page)
    }

    /// Shard `index`'s view of the sockets.
    public func shard(_ index: Int) -> any SIPTransport { Shard(sockets: self, index: index) }

    /// A message read by `reader`'s transport, to its owner.
    private func deliver(_ received: SIPReceivedMessage, readBy reader: Int) {
        let owner = map.owner(of: received.message)
        guard owner != reader else {
            handlers[owner].deliver(received)
            return
        }
        let handler = handlers[owner]
        handler.eventLoop.execute { handler.deliver(received) }
    }

    /// A shard's message handler, confined to the shard's loop: set there, and read there for
    /// every message, which ``deliver(_:readBy:)`` calls on the owner's loop (read there, or
    /// handed over), so no message takes a lock for it. (Not a `NIOLockedValueBox` of the
    /// closure either: reading a closure through that box's `inout` access writes it back
    /// wrapped in two more reabstraction thunks, so every message made the next one's call
    /// deeper, until the loop's stack overflowed after about 25,000 messages.)
    private final class HandlerSlot: @unchecked Sendable {
        let eventLoop: any EventLoop
        private var handler: (@Sendable (SIPReceivedMessage) -> Void)?

        init(eventLoop: any EventLoop) { self.eventLoop = eventLoop }

        /// Installs `handler` on the shard's loop; messages that arrive before it are dropped,
        /// as those a transport without a handler reads (a UDP peer retransmits them).
        func set(_ handler: @escaping @Sendable (SIPReceivedMessage) -> Void) {
            guard eventLoop.inEventLoop else { return eventLoop.execute { self.handler = handler } }
            self.handler = handler
        }

        func deliver(_ received: SIPReceivedMessage) {
            eventLoop.assertInEventLoop()
            handler?(received)
        }
    }

    private final class Shard: SIPTransport {
        let sockets: SIPShardedTransport
        let index: Int

        init(sockets: SIPShardedTransport, index: Int) {
            self.sockets = sockets
            self.index = index
        }

        var eventLoop: any EventLoop { sockets.members[index].eventLoop }

        /// On the connection named, or else one open to a stream target on any shard (RFC 3261
        /// §18.1.1: a connection is reused; a peer such as sipp that keeps one connection sees
        /// the requests and the responses in a dialog on it, in order), handed to the loop that
        /// holds it; otherwise on this shard's sockets.
        func send(_ message: SIPMessage, to target: SIPTarget, connection: SIPConnectionID?) -> EventLoopFuture<Void> {
            let own = sockets.members[index]
            var connection = connection
            if connection == nil, target.kind != .udp, own.eventLoop.inEventLoop, !own.hasConnection(to: target) {
                connection = sockets.connections.connection(to: target)
            }
            guard let holder = connection?.shard, holder != index, sockets.members.indices.contains(holder) else {
                return own.send(message, to: target, connection: connection)
            }
            return sockets.members[holder].send(message, to: target, connection: connection).hop(to: eventLoop)
        }

        func setMessageHandler(_ handler: @escaping @Sendable (SIPReceivedMessage) -> Void) {
            sockets.handlers[index].set(handler)
        }

        func advertisedAddress(for kind: SIPTransportKind) -> SIPTarget? {
            sockets.members[index].advertisedAddress(for: kind)
        }
    }
}
