import NIOCore
import NIOPosix
import PresenceGateway
import Prometheus
import Testing

/// A listener that cannot bind stops the start with an error naming the side, transport,
/// address and port it was configured with, not only the socket error.
struct ListenerBindTests {
    @Test func takenPortNamesTheListener() async throws {
        let taken = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(taken.localAddress?.port)
        let yaml = """
            state: { store: memory }
            listen:
              - { side: oma, transport: udp, address: 127.0.0.1, port: \(port) }
              - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 0 }
            enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:9;transport=tcp" }
            oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:9" }
            """
        let server = try GatewayServer(configuration: try GatewayConfiguration(yaml: yaml), registry: PrometheusCollectorRegistry())
        let error = await #expect(throws: ConfigurationError.self) { try await server.start() }
        #expect(error?.message.contains("oma side") == true, "\(error?.description ?? "")")
        #expect(error?.message.contains("udp 127.0.0.1:\(port)") == true, "\(error?.description ?? "")")
        await server.stop()
        try await taken.close()
    }
}
