import NIOCore
import NIOPosix
import Synchronization
import UPnPDevice

/// Runs a device on 127.0.0.1 (free HTTP and SSDP ports, no multicast) around `body`, then cancels
/// it and waits until it has said byebye and closed its sockets.
func withDevice<T: Sendable>(
    backend: any PresenceServiceBackend = InMemoryPresenceBackend(), announceTo: Int? = nil,
    eventing: GENAConfiguration = GENAConfiguration(), notifyTimeoutSeconds: Int64 = 5,
    _ body: @Sendable (PresenceDevice) async throws -> T
) async throws -> T {
    let configuration = PresenceDeviceConfiguration(
        identity: DeviceIdentity(uuid: makeUUID()), httpHost: "127.0.0.1", httpPort: 0, ssdpHost: "127.0.0.1",
        ssdpPort: 0, joinMulticastGroup: false, announceHost: announceTo == nil ? nil : "127.0.0.1",
        announcePort: announceTo ?? 0, eventing: eventing,
        notifyTimeoutSeconds: notifyTimeoutSeconds)
    let device = try await PresenceDevice.bind(configuration: configuration, backend: backend)
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await device.run() }
        do {
            let result = try await body(device)
            group.cancelAll()
            try await group.waitForAll()
            return result
        } catch {
            group.cancelAll()
            throw error
        }
    }
}

/// A UDP socket on 127.0.0.1 for the tests: sends datagrams and keeps what arrives.
final class UDPProbe: Sendable {
    let channel: any Channel
    let port: Int
    let received: Collector

    final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let datagrams = Mutex<[String]>([])

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let text = String(decoding: unwrapInboundIn(data).data.readableBytesView, as: UTF8.self)
            datagrams.withLock { $0.append(text) }
        }
    }

    init() async throws {
        let collector = Collector()
        received = collector
        channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(collector) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
    }

    func send(_ bytes: [UInt8], to port: Int) async throws {
        let address = try SocketAddress(ipAddress: "127.0.0.1", port: port)
        try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: ByteBuffer(bytes: bytes))).get()
    }

    /// Waits until at least `count` datagrams arrived or `seconds` passed; returns and forgets them.
    func take(count: Int, seconds: Double) async throws -> [String] {
        for _ in 0..<Int(seconds * 50) where received.datagrams.withLock({ $0.count }) < count {
            try await Task.sleep(for: .milliseconds(20))
        }
        return received.datagrams.withLock { datagrams in
            defer { datagrams.removeAll() }
            return datagrams
        }
    }

    func close() async {
        try? await channel.close()
    }
}
