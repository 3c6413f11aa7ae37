import PresenceGateway

extension GatewayServer {
    /// Starts the gateway as the process runs it (``GatewayServer/run()``: with its background
    /// work, the XCAP polling and the validity timer) in a task of its own, and returns once it is
    /// ready; ``GatewayServer/stop(grace:)`` ends it. A start that fails throws its error.
    func startRunning() async throws {
        let (phases, phase) = AsyncStream.makeStream(of: GatewayServer.Phase.self)
        let (reloads, noReloads) = AsyncStream.makeStream(of: Void.self)
        noReloads.finish()
        let running = Task {
            defer { phase.finish() }
            try await run(reloadingOn: reloads) { phase.yield($0) }
        }
        for await step in phases where step == .ready { return }
        try await running.value
    }
}
