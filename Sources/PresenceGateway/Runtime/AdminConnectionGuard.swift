import Metrics
import NIOConcurrencyHelpers
import NIOCore

/// Admits admin connections within ``AdminServer/Limits`` and closes those that idle or drip.
///
/// One per server: counts open connections in all and per remote IP address (the child
/// channels run on any loop of the group, so behind a lock), and makes a ``Handler`` for each
/// admitted connection. Counters (swift-metrics), present at zero from the start:
///
/// | label | dimensions | counts |
/// |---|---|---|
/// | `gateway_admin_connections_refused_total` | `reason`: `connection-limit`, `address-limit` | connections closed at once |
/// | `gateway_admin_timeouts_total` | `kind`: `idle`, `header` | connections closed by a timeout |
final class AdminConnectionGuard: Sendable {
    let limits: AdminServer.Limits
    private let open = NIOLockedValueBox<(total: Int, byAddress: [String: Int])>((0, [:]))
    private let refusedTotal: Counter
    private let refusedAddress: Counter
    let idleTimeouts: Counter
    let headerTimeouts: Counter

    init(limits: AdminServer.Limits, factory: any MetricsFactory) {
        self.limits = limits
        refusedTotal = Counter(
            label: "gateway_admin_connections_refused_total", dimensions: [("reason", "connection-limit")],
            factory: factory)
        refusedAddress = Counter(
            label: "gateway_admin_connections_refused_total", dimensions: [("reason", "address-limit")],
            factory: factory)
        idleTimeouts = Counter(label: "gateway_admin_timeouts_total", dimensions: [("kind", "idle")], factory: factory)
        headerTimeouts = Counter(
            label: "gateway_admin_timeouts_total", dimensions: [("kind", "header")], factory: factory)
        for counter in [refusedTotal, refusedAddress, idleTimeouts, headerTimeouts] { counter.increment(by: 0) }
    }

    /// Counts a new connection from `address` in, or returns false (and counts the refusal)
    /// when a limit is reached. Each admitted connection must be ``release(_:)``d once.
    func admit(_ address: String) -> Bool {
        let refusal: Counter? = open.withLockedValue { open in
            if open.total >= limits.maxConnections { return refusedTotal }
            if open.byAddress[address, default: 0] >= limits.maxConnectionsPerAddress { return refusedAddress }
            open.total += 1
            open.byAddress[address, default: 0] += 1
            return nil
        }
        refusal?.increment()
        return refusal == nil
    }

    func release(_ address: String) {
        open.withLockedValue { open in
            open.total -= 1
            let left = open.byAddress[address, default: 1] - 1
            open.byAddress[address] = left > 0 ? left : nil
        }
    }

    /// Sent outbound by the request handler when a request has arrived whole (its `.end`).
    struct RequestComplete: Sendable {}

    /// First in an admin connection's pipeline, ahead of the HTTP decoder: starts the request
    /// clock at the first byte of a request, stops it on ``RequestComplete``, and closes the
    /// connection when it runs out or when the idle handler before it reports idleness.
    final class Handler: ChannelDuplexHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        typealias OutboundIn = IOData
        typealias OutboundOut = IOData

        private let connectionGuard: AdminConnectionGuard
        private var requestTimer: Scheduled<Void>?

        init(_ connectionGuard: AdminConnectionGuard) { self.connectionGuard = connectionGuard }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if requestTimer == nil, unwrapInboundIn(data).readableBytes > 0 {
                let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
                let counter = connectionGuard.headerTimeouts
                requestTimer = context.eventLoop.assumeIsolated().scheduleTask(in: connectionGuard.limits.headerTimeout)
                {
                    counter.increment()
                    bound.value.close(promise: nil)
                }
            }
            context.fireChannelRead(data)
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if event is IdleStateHandler.IdleStateEvent {
                connectionGuard.idleTimeouts.increment()
                context.close(promise: nil)
                return
            }
            context.fireUserInboundEventTriggered(event)
        }

        func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
            guard event is RequestComplete else {
                return context.triggerUserOutboundEvent(event, promise: promise)
            }
            requestTimer?.cancel()
            requestTimer = nil
            promise?.succeed(())
        }

        func channelInactive(context: ChannelHandlerContext) {
            requestTimer?.cancel()
            requestTimer = nil
            context.fireChannelInactive()
        }
    }
}
