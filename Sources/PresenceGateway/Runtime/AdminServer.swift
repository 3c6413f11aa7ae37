public import Metrics
public import NIOCore
import NIOHTTP1
import NIOPosix
public import Prometheus

/// The operator's HTTP endpoint: `GET /metrics` in the Prometheus text format and `GET /health`
/// (200 with a one-line JSON status while the gateway runs, 503 once it is shutting down).
/// Anything else is 404; methods other than GET and HEAD are 405. Requests are small and
/// answered at once; bodies are ignored. Connections are held within ``Limits`` (idle and
/// request timeouts, connections in all and per address; ``AdminConnectionGuard``).
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
    public static func start(host: String, port: Int, registry: PrometheusCollectorRegistry, group: any EventLoopGroup,
                             limits: Limits = Limits(), metricsFactory: (any MetricsFactory)? = nil,
                             health: @escaping @Sendable () -> (healthy: Bool, detail: String)) async throws -> AdminServer {
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
                    try sync.addHandler(Handler(registry: registry, health: health))
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
        let health: @Sendable () -> (healthy: Bool, detail: String)
        var head: HTTPRequestHead?

        init(registry: PrometheusCollectorRegistry, health: @escaping @Sendable () -> (healthy: Bool, detail: String)) {
            self.registry = registry
            self.health = health
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let request): head = request
            case .body: break
            case .end:
                context.triggerUserOutboundEvent(AdminConnectionGuard.RequestComplete(), promise: nil)
                guard let request = head else { return }
                head = nil
                respond(to: request, context: context)
            }
        }

        func respond(to request: HTTPRequestHead, context: ChannelHandlerContext) {
            let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.uri
            let (status, type, body): (HTTPResponseStatus, String, [UInt8])
            if request.method != .GET && request.method != .HEAD {
                (status, type, body) = (.methodNotAllowed, "text/plain", Array("GET only\n".utf8))
            } else if path == "/metrics" {
                (status, type, body) = (.ok, "text/plain; version=0.0.4", registry.emitToBuffer())
            } else if path == "/health" {
                let (healthy, detail) = health()
                (status, type, body) = (healthy ? .ok : .serviceUnavailable, "application/json", Array((detail + "\n").utf8))
            } else {
                (status, type, body) = (.notFound, "text/plain", Array("not found\n".utf8))
            }
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: type)
            headers.add(name: "Content-Length", value: String(body.count))
            if status == .methodNotAllowed { headers.add(name: "Allow", value: "GET, HEAD") }
            let keepAlive = request.isKeepAlive
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
            if request.method != .HEAD {
                context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
            }
            let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
            if !keepAlive {
                let channel = context.channel
                done.whenComplete { _ in channel.close(promise: nil) }
            }
        }
    }
}
