import NIOConcurrencyHelpers

/// A piece of long-running async work that ``stop()`` ends: the work is cancelled and ``stop()``
/// waits until it has ended; at once when it never began, which then never will. A PostgreSQL
/// store's connection pool runs in one (``PostgresStateStore/run()``), as does each piece of the
/// gateway's background work.
public final class StoppableRun: Sendable {
    private struct State {
        var started = false
        var stopped = false
        var ended = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = NIOLockedValueBox(State())
    /// Finished by ``stop()``: the work is cancelled.
    private let stopping: AsyncStream<Void>
    private let stopSignal: AsyncStream<Void>.Continuation

    public init() {
        (stopping, stopSignal) = AsyncStream.makeStream(of: Void.self)
    }

    /// Runs `body` until it returns or ``stop()`` cancels it; nothing once stopped.
    public func execute(_ body: @escaping @Sendable () async -> Void) async {
        let begins = state.withLockedValue { state in
            if !state.stopped { state.started = true }
            return state.started
        }
        guard begins else { return }
        await withTaskGroup(of: Void.self) { [stopping] group in
            group.addTask { await body() }
            group.addTask { for await _ in stopping {} }
            // The first to end (the work, or the stop) ends the other.
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

    /// Cancels the work and waits for it to end.
    public func stop() async {
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
}
