public import Metrics
public import NIOCore
import NIOHTTP1
import NIOPosix
public import Prometheus

/// The operator's HTTP endpoint: `GET /metrics` in the Prometheus text format and `GET /health`
/// (200 with a one-line JSON status while the gateway runs, 503 once it is shutting down), and
/// with an ``AdminAPI`` the runtime control API and status page; anything else is 404.
/// Connections are held within ``Limits`` (idle and request timeouts, connections in all and per
/// address; ``AdminConnectionGuard``).
public final class AdminServer: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let channel: any Channel

    /// The address it listens on (port 0 in `bind` gives an ephemeral port, read here).
    public var localAddress: SocketAddress? { channel.localAddress }

    private init(registry: PrometheusCollectorRegistry, channel: any Channel) {
        self.registry = registry
        self.channel = channel
    }

    /// An admin connection refused by ``Limits`` (closed as soon as it is accepted).
    struct Refused: Error {}

    /// Binds `host:port` and serves until ``close()``.
    ///
    /// - Parameters:
    ///   - limits: connection limits and timeouts. Default: ``Limits/init(maxConnections:maxConnectionsPerAddress:idleTimeout:headerTimeout:)``'s defaults.
    ///   - metricsFactory: where the refusal and timeout counters go. Default: `MetricsSystem.factory`.
    public static func start(
        host: String, port: Int, registry: PrometheusCollectorRegistry, group: any EventLoopGroup,
        limits: Limits = Limits(), metricsFactory: (any MetricsFactory)? = nil, api: AdminAPI? = nil,
        health: @escaping @Sendable () -> (healthy: Bool, detail: String)
    ) async throws -> AdminServer {
        let admission = AdminConnectionGuard(limits: limits, factory: metricsFactory ?? MetricsSystem.factory)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 16)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let address = channel.remoteAddress?.ipAddress ?? ""
                    guard admission.admit(address) else { throw Refused() }
                    channel.closeFuture.whenComplete { _ in admission.release(address) }
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(IdleStateHandler(allTimeout: limits.idleTimeout))
                    try sync.addHandler(AdminConnectionGuard.Handler(admission))
                    try sync.configureHTTPServerPipeline(withErrorHandling: true)
                    try sync.addHandler(Handler(registry: registry, api: api, health: health))
                }
            }
            .bind(host: host, port: port).get()
        return AdminServer(registry: registry, channel: channel)
    }

    public func close() async throws {
        try await channel.close()
    }

    /// Answers one request per head; keep-alive is honoured.
    final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let registry: PrometheusCollectorRegistry
        let api: AdminAPI?
        let health: @Sendable () -> (healthy: Bool, detail: String)
        var head: HTTPRequestHead?
        var body: [UInt8] = []
        var tooLarge = false

        init(
            registry: PrometheusCollectorRegistry, api: AdminAPI?,
            health: @escaping @Sendable () -> (healthy: Bool, detail: String)
        ) {
            self.registry = registry
            self.api = api
            self.health = health
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let request):
                head = request
                body = []
                tooLarge = false
            case .body(let chunk):
                // Only the API takes a body, and a small one: the rest is counted, not kept.
                if body.count + chunk.readableBytes > AdminAPI.maxBody {
                    tooLarge = true
                } else {
                    body += chunk.readableBytesView
                }
            case .end:
                context.triggerUserOutboundEvent(AdminConnectionGuard.RequestComplete(), promise: nil)
                guard let request = head else { return }
                head = nil
                respond(to: request, context: context)
            }
        }

        func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
            let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
            if path == "/metrics" || path == "/health" || api == nil {
                let reply: AdminAPI.Reply
                if request.method != .GET && request.method != .HEAD {
                    reply = AdminAPI.Reply(
                        status: .methodNotAllowed, type: "text/plain", body: Array("GET only\n".utf8),
                        headers: [("Allow", "GET, HEAD")])
                } else if path == "/metrics" {
                    reply = AdminAPI.Reply(
                        status: .ok, type: "text/plain; version=0.0.4", body: registry.emitToBuffer())
                } else if path == "/health" {
                    let (healthy, detail) = health()
                    reply = AdminAPI.Reply(
                        status: healthy ? .ok : .serviceUnavailable, body: Array((detail + "\n").utf8))
                } else {
                    reply = AdminAPI.Reply(status: .notFound, type: "text/plain", body: Array("not found\n".utf8))
                }
                return write(reply, for: request, context: context)
            }
            guard let api else { return }
            let remote = context.channel.remoteAddress?.ipAddress ?? ""
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            api.handle(request, body: body, tooLarge: tooLarge, remote: remote, on: context.eventLoop)
                .hop(to: context.eventLoop)
                .whenComplete { result in
                    let (handler, context) = bound.value
                    let reply = (try? result.get()) ?? AdminAPI.error(.internalServerError, "\(result)")
                    handler.write(reply, for: request, context: context)
                }
        }

        func write(_ reply: AdminAPI.Reply, for request: HTTPRequestHead, context: ChannelHandlerContext) {
            guard context.channel.isActive else { return }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: reply.type)
            headers.add(name: "Content-Length", value: String(reply.body.count))
            for (name, value) in reply.headers { headers.add(name: name, value: value) }
            let keepAlive = request.isKeepAlive
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(
                wrapOutboundOut(
                    .head(HTTPResponseHead(version: request.version, status: reply.status, headers: headers))),
                promise: nil)
            if request.method != .HEAD {
                context.write(
                    wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: reply.body)))),
                    promise: nil)
            }
            let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if !keepAlive {
                let channel = context.channel
                done.whenComplete { _ in channel.close(promise: nil) }
            }
        }
    }
}
