import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PresenceGateway
import Prometheus
import Testing

/// The admin endpoint against hostile clients on real loopback sockets: idle connections,
/// dripped requests and one address opening many connections. Timeouts are configured short;
/// every wait is bounded.
@Suite(.serialized) struct AdminServerLimitsTests {
    /// A loop of its own, as SIPNetworkTransportHardeningTests has: on NIO's shared loops, other
    /// suites' clock-bounded work ran the 300 ms idle timer seconds late on a loaded machine.
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// A raw TCP client that records whether the server closed the connection.
    final class RawClient: Sendable {
        let channel: any Channel
        private let state: NIOLockedValueBox<(bytes: [UInt8], closed: Bool)>

        private final class Watcher: ChannelInboundHandler, Sendable {
            typealias InboundIn = ByteBuffer
            let box: NIOLockedValueBox<(bytes: [UInt8], closed: Bool)>
            init(_ box: NIOLockedValueBox<(bytes: [UInt8], closed: Bool)>) { self.box = box }
            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                let bytes = Array(unwrapInboundIn(data).readableBytesView)
                box.withLockedValue { $0.bytes.append(contentsOf: bytes) }
            }
            func channelInactive(context: ChannelHandlerContext) {
                box.withLockedValue { $0.closed = true }
                context.fireChannelInactive()
            }
            func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
        }

        init(port: Int, from source: String = "127.0.0.1") async throws {
            let box = NIOLockedValueBox<(bytes: [UInt8], closed: Bool)>(([], false))
            state = box
            channel = try await ClientBootstrap(group: AdminServerLimitsTests.group)
                .bind(to: try SocketAddress(ipAddress: source, port: 0))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Watcher(box)) }
                }
                .connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: port)).get()
        }

        var isClosed: Bool { state.withLockedValue { $0.closed } }
        var text: String { String(decoding: state.withLockedValue { $0.bytes }, as: UTF8.self) }

        func write(_ text: String) async throws { try await channel.writeAndFlush(ByteBuffer(string: text)).get() }

        func close() async { try? await channel.close() }
    }

    /// Polls every 10 ms for at most `seconds` (a bound against hanging, not a timing check).
    static func waitUntil(_ what: String, seconds: Double = 10, _ probe: () -> Bool) async throws {
        for _ in 0..<Int(seconds * 100) {
            if probe() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("timed out waiting for \(what)")
    }

    static func start(_ limits: AdminServer.Limits) async throws -> (AdminServer, PrometheusCollectorRegistry, Int) {
        let registry = PrometheusCollectorRegistry()
        let server = try await AdminServer.start(host: "127.0.0.1", port: 0, registry: registry, group: Self.group,
                                                 limits: limits, metricsFactory: PrometheusMetricsFactory(registry: registry)) {
            (true, #"{"status":"ok"}"#)
        }
        return (server, registry, try #require(server.localAddress?.port))
    }

    static func metrics(_ registry: PrometheusCollectorRegistry) -> String {
        String(decoding: registry.emitToBuffer(), as: UTF8.self)
    }

    @Test func countersExistAtZeroFromTheStart() async throws {
        let (server, registry, _) = try await Self.start(AdminServer.Limits())
        let text = Self.metrics(registry)
        for line in [#"gateway_admin_connections_refused_total{reason="connection-limit"} 0"#,
                     #"gateway_admin_connections_refused_total{reason="address-limit"} 0"#,
                     #"gateway_admin_timeouts_total{kind="idle"} 0"#, #"gateway_admin_timeouts_total{kind="header"} 0"#] {
            #expect(text.contains(line), "\(line)")
        }
        try await server.close()
    }

    @Test func idleAdminConnectionsAreClosed() async throws {
        let (server, registry, port) = try await Self.start(AdminServer.Limits(idleTimeout: .milliseconds(300)))
        var idle: [RawClient] = []
        for _ in 0..<5 { idle.append(try await RawClient(port: port)) }
        let started = ContinuousClock.now
        // 30 s: in the full run this test starts while every other suite starts too.
        try await Self.waitUntil("the idle connections to close", seconds: 30) { idle.allSatisfy { $0.isClosed } }
        #expect(idle.allSatisfy { $0.isClosed }, "closed: \(idle.map(\.isClosed)) after \(ContinuousClock.now - started); active: \(idle.map(\.channel.isActive)); \(Self.metrics(registry).split(separator: "\n").filter { $0.contains("admin") })")
        #expect(Self.metrics(registry).contains(#"gateway_admin_timeouts_total{kind="idle"} 5"#))
        try await server.close()
    }

    @Test func drippedRequestIsClosedAfterTheHeaderTimeoutAndAWholeOneIsAnswered() async throws {
        let (server, registry, port) = try await Self.start(AdminServer.Limits(idleTimeout: .seconds(30), headerTimeout: .milliseconds(500)))
        let dripper = try await RawClient(port: port)
        // One byte every 100 ms keeps the idle timer from firing; 40 bytes take 4 s.
        for character in "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: aaaaaaaaaaaaaaaa".prefix(40) where !dripper.isClosed {
            try? await dripper.write(String(character))
            try await Task.sleep(for: .milliseconds(100))
        }
        // 30 s, as for the idle connections: the full run starts every suite at once.
        try await Self.waitUntil("the dripping connection to close", seconds: 30) { dripper.isClosed }
        #expect(dripper.isClosed)
        #expect(dripper.text.isEmpty)
        let text = Self.metrics(registry)
        #expect(text.contains(#"gateway_admin_timeouts_total{kind="header"} 1"#))
        #expect(text.contains(#"gateway_admin_timeouts_total{kind="idle"} 0"#))
        let client = try await RawClient(port: port)
        try await client.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        try await Self.waitUntil("the answer") { client.text.contains(#"{"status":"ok"}"#) }
        #expect(client.text.hasPrefix("HTTP/1.1 200 OK"))
        await client.close()
        try await server.close()
    }

    @Test func oneAddressCannotTakeEveryAdminConnection() async throws {
        let (server, registry, port) = try await Self.start(AdminServer.Limits(maxConnections: 10, maxConnectionsPerAddress: 2))
        var flood: [RawClient] = []
        for _ in 0..<6 { flood.append(try await RawClient(port: port, from: "127.0.0.1")) }
        try await Self.waitUntil("four refusals") { flood.filter(\.isClosed).count == 4 }
        #expect(Self.metrics(registry).contains(#"gateway_admin_connections_refused_total{reason="address-limit"} 4"#))
        let other = try await RawClient(port: port, from: "127.0.0.2")
        try await other.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        try await Self.waitUntil("the answer") { other.text.contains(#"{"status":"ok"}"#) }
        #expect(other.text.hasPrefix("HTTP/1.1 200 OK"))
        for client in flood { await client.close() }
        await other.close()
        try await server.close()
    }
}
