import NIOCore
import NIOPosix
import Synchronization

/// A raw TCP connection to 127.0.0.1 that keeps what arrives as text, for the exchanges an HTTP
/// client library does not show (100 Continue).
final class RawConnection: Sendable {
    let channel: any Channel
    let store = Store()

    final class Store: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let text = Mutex("")

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let received = String(buffer: unwrapInboundIn(data))
            text.withLock { $0 += received }
        }
    }

    init(port: Int) async throws {
        let store = self.store
        channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(store) }
            }
            .connect(host: "127.0.0.1", port: port).get()
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text)).get()
    }

    /// What arrived once it contains `marker`, or after `seconds`.
    func received(containing marker: String, seconds: Double) async throws -> String {
        for _ in 0..<Int(seconds * 50) where !store.text.withLock({ $0.contains(marker) }) {
            try await Task.sleep(for: .milliseconds(20))
        }
        return store.text.withLock { $0 }
    }

    func close() async {
        try? await channel.close()
    }
}
