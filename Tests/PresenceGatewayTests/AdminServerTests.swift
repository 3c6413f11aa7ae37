import NIOCore
import NIOPosix
import PresenceGateway
import Prometheus
import Testing

/// The admin endpoint over a real loopback socket.
@Suite struct AdminServerTests {
    /// Sends one HTTP/1.1 request with `Connection: close` and returns the whole response text.
    static func get(_ method: String, _ path: String, port: Int) async throws -> String {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(ByteBuffer(string: "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
            var text = ""
            for try await var chunk in inbound { text += chunk.readString(length: chunk.readableBytes) ?? "" }
            return text
        }
    }

    @Test func metricsHealthAndErrors() async throws {
        let registry = PrometheusCollectorRegistry()
        // As the gateway counts: through the swift-metrics factory over the registry.
        PrometheusMetricsFactory(registry: registry).makeCounter(label: "gateway_notifies_mapped_total",
                                                                 dimensions: [("direction", "oma_to_enterprise")]).increment(by: 3)
        let server = try await AdminServer.start(host: "127.0.0.1", port: 0, registry: registry, group: MultiThreadedEventLoopGroup.singleton) {
            (true, #"{"status":"ok"}"#)
        }
        let port = try #require(server.localAddress?.port)
        let metrics = try await Self.get("GET", "/metrics", port: port)
        #expect(metrics.hasPrefix("HTTP/1.1 200 OK"))
        #expect(metrics.contains(#"gateway_notifies_mapped_total{direction="oma_to_enterprise"} 3"#))
        let health = try await Self.get("GET", "/health", port: port)
        #expect(health.hasPrefix("HTTP/1.1 200 OK"))
        #expect(health.contains(#"{"status":"ok"}"#))
        #expect(try await Self.get("GET", "/nothing", port: port).hasPrefix("HTTP/1.1 404"))
        #expect(try await Self.get("POST", "/metrics", port: port).hasPrefix("HTTP/1.1 405"))
        try await server.close()
    }

    @Test func unhealthyIs503() async throws {
        let server = try await AdminServer.start(host: "127.0.0.1", port: 0, registry: PrometheusCollectorRegistry(),
                                                 group: MultiThreadedEventLoopGroup.singleton) { (false, #"{"status":"stopping"}"#) }
        let port = try #require(server.localAddress?.port)
        #expect(try await Self.get("GET", "/health", port: port).hasPrefix("HTTP/1.1 503"))
        try await server.close()
    }
}
