import Logging
import NIOConcurrencyHelpers
public import NIOCore
public import ServiceLifecycle

/// The gateway as a swift-service-lifecycle service: `presence-gateway` runs it in its
/// `ServiceGroup`, whose SIGTERM or SIGINT is the graceful shutdown.
///
/// ``run()`` runs one group of two services, shut down in reverse order:
/// 1. the background work (``BackgroundWork``: XCAP polling, the validity timer, the store's
///    connection pool), each piece a child task;
/// 2. the gateway itself: ``start()``, reloads while it runs, and at graceful shutdown
///    ``stop(grace:)`` (final NOTIFYs and unsubscribes, or the state written), which ends the
///    pieces of work it started.
///
/// The background work is shut down after the gateway has stopped, so the store's pool serves
/// the stop's last writes.
extension GatewayServer: Service {
    /// What ``run(reloadingOn:reporting:)`` reports as it goes: for a service manager (systemd's
    /// notify protocol in `presence-gateway`).
    public enum Phase: Sendable, Hashable {
        /// Restoring dialogs and binding the listeners.
        case starting
        /// Listeners bound and dialogs restored; again after each reload.
        case ready
        /// Reading the configuration again.
        case reloading
        /// Graceful shutdown: final NOTIFYs and unsubscribes, or the state written.
        case stopping
    }

    /// Where ``run()`` is.
    enum RunState {
        case idle
        /// Its group runs; ``stop(grace:)`` waits in `waiting` for it to end.
        case running(ServiceGroup, waiting: [CheckedContinuation<Void, Never>])
        case ended
    }

    /// Starts the gateway and runs it until graceful shutdown (or ``stop(grace:)``), then stops
    /// it as `shutdown:` says.
    public func run() async throws {
        let (none, end) = AsyncStream.makeStream(of: Void.self)
        end.finish()
        try await run(reloadingOn: none)
    }

    /// ``run()``, reading the configuration again (``reload()``) for each element of `reloads`
    /// once started (SIGHUP in `presence-gateway`; an invalid file is logged and the running
    /// configuration stays), and telling `report` each ``Phase``.
    public func run<Reloads: AsyncSequence & Sendable>(
        reloadingOn reloads: Reloads, reporting report: @escaping @Sendable (Phase) -> Void = { _ in }
    ) async throws where Reloads.Element: Sendable {
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: work),
                    .init(service: Gateway(server: self, reloads: reloads, report: report)),
                ],
                logger: logger))
        running.withLockedValue { $0 = .running(group, waiting: []) }
        defer {
            let waiting = running.withLockedValue { running -> [CheckedContinuation<Void, Never>] in
                defer { running = .ended }
                guard case .running(_, let waiting) = running else { return [] }
                return waiting
            }
            for continuation in waiting { continuation.resume() }
        }
        try await group.run()
    }

    /// While ``run()`` runs: shuts its group down gracefully with `grace` for the final
    /// transactions, waits for it to end, and returns true. False when it does not run.
    func stopRunning(grace: TimeAmount) async -> Bool {
        guard
            let group = running.withLockedValue({ running -> ServiceGroup? in
                guard case .running(let group, _) = running else { return nil }
                return group
            })
        else { return false }
        stopGrace.withLockedValue { $0 = grace }
        await group.triggerGracefulShutdown()
        await withCheckedContinuation { continuation in
            let resumeNow = running.withLockedValue { running in
                guard case .running(let group, var waiting) = running else { return true }
                waiting.append(continuation)
                running = .running(group, waiting: waiting)
                return false
            }
            if resumeNow { continuation.resume() }
        }
        return true
    }

    /// The gateway in ``run()``'s group: starts, reloads on request, and stops at graceful
    /// shutdown.
    private struct Gateway<Reloads: AsyncSequence & Sendable>: Service where Reloads.Element: Sendable {
        let server: GatewayServer
        let reloads: Reloads
        let report: @Sendable (Phase) -> Void

        func run() async throws {
            report(.starting)
            try await server.start()
            report(.ready)
            await withDiscardingTaskGroup { group in
                group.addTask { [server, reloads, report] in
                    do {
                        for try await _ in reloads.cancelOnGracefulShutdown() {
                            report(.reloading)
                            _ = try? await server.reload()
                            report(.ready)
                        }
                    } catch {}
                }
                try? await gracefulShutdown()
                group.cancelAll()
            }
            report(.stopping)
            await server.shutDown(grace: server.stopGrace.withLockedValue { $0 })
        }
    }
}
