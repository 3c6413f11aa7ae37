import NIOConcurrencyHelpers
public import NIOCore
public import UPnPDevice

/// The UPnP Presence:1 service's backend on the gateway (flow 5, docs/flows.md): each action
/// hops to the relay loop and runs there on the core (`GatewayCore+UPnPPresence`), whose
/// messages the runtime then sends like any other step's; the evented variables' changes come
/// from the core as ``GatewayCore/Action/upnpEvent(_:)``. Before the gateway has started, and
/// after it stopped, every action fails with UPnP error 501. With several shards the service is
/// the first shard's; the user's decisions on watchers are taken on every shard, whose watchers
/// of the user they decide (docs/shards.md, "Across shards").
public final class GatewayPresenceBackend: PresenceServiceBackend {
    public let changes: AsyncStream<EventedChange>
    private let continuation: AsyncStream<EventedChange>.Continuation
    private let runtimes = NIOLockedValueBox<[GatewayRuntime]>([])

    public init() {
        (changes, continuation) = AsyncStream.makeStream(of: EventedChange.self, bufferingPolicy: .bufferingNewest(256))
    }

    /// Serves the actions with the first of `runtimes` from now on (none: no longer).
    func serve(_ runtimes: [GatewayRuntime]) {
        runtimes.first?.presenceServiceChanged = { [continuation] change in continuation.yield(change) }
        self.runtimes.withLockedValue { $0 = runtimes }
    }

    public func getPresence() async throws -> String {
        try await step { core, _ in (core.upnpPresence(), []) }
    }

    public func updatePresence(_ userPresence: String) async throws {
        try await step { core, now in ((), try core.updateUPnPPresence(userPresence, now: now)) }
    }

    public func getContactPresence(targetContact: String) async throws -> String {
        try await step { core, _ in (try core.upnpContactPresence(targetContact), []) }
    }

    public func getPresenceOfContactsUpdate() async throws -> String {
        try await step { core, _ in (core.takeUPnPContactsUpdate(), []) }
    }

    public func registerForContactPresence(contact: String, expire: Int32, controlPoint: String) async throws
        -> String
    {
        try await step { core, now in
            try core.registerUPnPContact(contact, expire: expire, controlPoint: controlPoint, now: now)
        }
    }

    public func authorizePresenceReactive(contact: String, expire: Int32, userPresenceInfo: String) async throws {
        try await decide { core, now in
            try core.authorizeUPnPWatcher(contact, expire: expire, userPresenceInfo: userPresenceInfo, now: now)
        }
    }

    public func authorizePresenceProactive(userPresenceInfo: String, expire: Int32, watcherList: String) async throws {
        try await decide { core, now in
            try core.authorizeUPnPWatchers(watcherList, expire: expire, userPresenceInfo: userPresenceInfo, now: now)
        }
    }

    public func eventedValues() async -> [EventedVariable: String] {
        (try? await step { core, _ in (core.upnpEventedValues(), []) }) ?? [:]
    }

    /// Runs `body` on the first shard's core on its loop, and carries out the actions it returns.
    private func step<T: Sendable>(
        _ body: @escaping @Sendable (inout GatewayCore, NIODeadline) throws -> (T, [GatewayCore.Action])
    ) async throws -> T {
        guard let runtime = runtimes.withLockedValue({ $0.first }) else {
            throw UPnPFault(code: 501, description: "Action Failed: the gateway is not running")
        }
        return try await runtime.eventLoop.submit { try runtime.presenceService(body) }.get()
    }

    /// A decision on the user's watchers: taken on the first shard, whose fault is the action's,
    /// then on every other shard at the same moment, in order.
    private func decide(
        _ body: @escaping @Sendable (inout GatewayCore, NIODeadline) throws -> [GatewayCore.Action]
    ) async throws {
        let now = try await step { core, now in (now, try body(&core, now)) }
        for runtime in runtimes.withLockedValue({ $0.dropFirst() }) {
            try await runtime.eventLoop.submit { try runtime.presenceService { core, _ in ((), try body(&core, now)) } }
                .get()
        }
    }
}
