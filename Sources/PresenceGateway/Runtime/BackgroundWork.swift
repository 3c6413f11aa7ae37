import GatewayState
import ServiceLifecycle

/// The gateway's long-running work besides the relay loop: the XCAP sources' polling, the timer
/// that applies pres-rules validity, the PostgreSQL store's connection pool. Each piece runs as a
/// child task of ``run()``, which ``GatewayServer/run()`` runs as a service of its group, shut
/// down after the gateway itself: what the gateway's stop still needs (the store's connections)
/// runs until the stop is done.
///
/// A piece is handed over with ``start(_:)`` and ended on its own with its ``Job/stop()``; what
/// is left when the group shuts this service down is cancelled. Work started while nothing runs
/// ``run()`` waits for it (``GatewayServer/start()`` alone starts none).
final class BackgroundWork: Service, Sendable {
    /// One piece of work: ``StoppableRun/stop()`` cancels it and waits for it to end.
    typealias Job = StoppableRun

    private let pieces: AsyncStream<(Job, @Sendable () async -> Void)>
    private let queue: AsyncStream<(Job, @Sendable () async -> Void)>.Continuation

    init() {
        (pieces, queue) = AsyncStream.makeStream(of: (Job, @Sendable () async -> Void).self)
    }

    /// Runs `body` as a child task of ``run()``.
    @discardableResult
    func start(_ body: @escaping @Sendable () async -> Void) -> Job {
        let job = Job()
        queue.yield((job, body))
        return job
    }

    /// Runs each piece handed over until graceful shutdown or cancellation, then cancels those
    /// still running and waits for them.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await (job, body) in pieces.cancelOnGracefulShutdown() {
                group.addTask { await job.execute(body) }
            }
            group.cancelAll()
        }
    }
}
