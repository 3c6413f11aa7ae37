import NIOConcurrencyHelpers
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
    /// One piece of work: ``stop()`` cancels it and waits for it to end.
    final class Job: Sendable {
        private struct State {
            var started = false
            var stopped = false
            var ended = false
            var waiting: [CheckedContinuation<Void, Never>] = []
        }

        private let state = NIOLockedValueBox(State())
        /// Finished by ``stop()``: the piece is cancelled.
        private let stopping: AsyncStream<Void>
        private let stopSignal: AsyncStream<Void>.Continuation

        fileprivate init() {
            (stopping, stopSignal) = AsyncStream.makeStream(of: Void.self)
        }

        /// Cancels the piece and waits for it to end; at once for a piece that never started,
        /// which then never will.
        func stop() async {
            stopSignal.finish()
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLockedValue { state in
                    guard state.started, !state.ended else {
                        state.stopped = true
                        return true
                    }
                    state.waiting.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }

        /// Runs `body` until it returns or ``stop()`` cancels it.
        fileprivate func execute(_ body: @escaping @Sendable () async -> Void) async {
            let begins = state.withLockedValue { state in
                if !state.stopped { state.started = true }
                return state.started
            }
            guard begins else { return }
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await body() }
                group.addTask { [stopping] in for await _ in stopping {} }
                // The first to end (the piece, or the stop) ends the other.
                await group.next()
                group.cancelAll()
            }
            let waiting = state.withLockedValue { state in
                state.ended = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }
    }

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
