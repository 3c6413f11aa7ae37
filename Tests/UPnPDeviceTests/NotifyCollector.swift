import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// An HTTP server on 127.0.0.1 (on `port`, or a free one) that takes NOTIFYs (answering
/// `status`, or never answering when `silent`) and keeps them: the control point side of GENA
/// for the socket tests.
final class NotifyCollector: Sendable {
    struct Notify: Sendable {
        var method: String
        var headers: [String: String]
        var body: String
    }

    let channel: any Channel
    let port: Int
    let store = Store()

    final class Store: Sendable {
        let notifies = Mutex<[Notify]>([])
    }

    init(silent: Bool = false, port: Int = 0, status: HTTPResponseStatus = .ok) async throws {
        let box = store
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard !silent else { return }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(store: box, status: status))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        self.port = channel.localAddress?.port ?? 0
    }

    var callback: String { "<http://127.0.0.1:\(port)/notify>" }

    /// Waits until `count` NOTIFYs arrived or `seconds` passed; returns all received so far.
    func wait(for count: Int, seconds: Double) async throws -> [Notify] {
        for _ in 0..<Int(seconds * 50) where store.notifies.withLock({ $0.count }) < count {
            try await Task.sleep(for: .milliseconds(20))
        }
        return store.notifies.withLock { $0 }
    }

    func close() async {
        try? await channel.close()
    }

    final class Handler: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let store: Store
        let status: HTTPResponseStatus
        let partial = Mutex<Notify?>(nil)

        init(store: Store, status: HTTPResponseStatus) {
            self.store = store
            self.status = status
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                let headers = Dictionary(head.headers.map { ($0.name.uppercased(), $0.value) }) { first, _ in first }
                partial.withLock { $0 = Notify(method: head.method.rawValue, headers: headers, body: "") }
            case .body(let chunk):
                partial.withLock { $0?.body += String(buffer: chunk) }
            case .end:
                if let notify = partial.withLock({ $0 }) { store.notifies.withLock { $0.append(notify) } }
                let head = HTTPResponseHead(version: .http1_1, status: status, headers: ["Content-Length": "0"])
                context.write(wrapOutboundOut(.head(head)), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
