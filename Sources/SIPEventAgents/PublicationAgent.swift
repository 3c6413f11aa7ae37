public import NIOCore
public import SIPMessages
public import SIPStack
public import SIPTransport

/// The publisher side at run time (RFC 3903 §4, an EPA/PUA): drives ``PublicationClient`` values
/// over a ``SIPTransactionLayer``: sends their PUBLISHes, feeds the final responses back (a
/// Timer F timeout as 408 and a transport error as 503, RFC 3261 §8.1.3.1), and runs the refresh
/// and retry timers. A 412 to a refresh or modify makes the client publish its state afresh
/// (RFC 3903 §4.1); the agent only carries the messages.
///
/// Confinement: every method is called on the layer's event loop and every callback runs there.
public final class PublicationAgent: @unchecked Sendable {
    public struct Handle: Sendable, Hashable, CustomStringConvertible {
        public var rawValue: UInt64
        public var description: String { "publication#\(rawValue)" }
    }

    public enum Event: Sendable, Hashable {
        /// The ESC holds the state under this entity-tag (RFC 3903 §4.1) until the deadline.
        case published(Handle, entityTag: String, expiresAt: NIODeadline)
        case removed(Handle)
        case failed(Handle, statusCode: Int?, reason: String)
    }

    private struct Entry {
        var machine: PublicationClient
        var refresh: Scheduled<Void>?
        var retry: Scheduled<Void>?
    }

    public let layer: SIPTransactionLayer
    public var routing: SIPEventRouting
    /// Publications at once. Default 10,000.
    public let maxPublications: Int
    private let jitter: @Sendable () -> Double
    private let onEvent: @Sendable (Event) -> Void
    private var entries: [Handle: Entry] = [:]
    private var nextHandle: UInt64 = 0
    public var eventLoop: any EventLoop { layer.eventLoop }

    public init(
        layer: SIPTransactionLayer, routing: SIPEventRouting = SIPEventRouting(), maxPublications: Int = 10_000,
        jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        onEvent: @escaping @Sendable (Event) -> Void
    ) {
        self.layer = layer
        self.routing = routing
        self.maxPublications = maxPublications
        self.jitter = jitter
        self.onEvent = onEvent
    }

    public var count: Int { entries.count }

    public func publication(_ handle: Handle) -> PublicationClient? { entries[handle]?.machine }

    /// Starts a publication: the initial PUBLISH (RFC 3903 §4.2).
    @discardableResult
    public func publish(_ configuration: PublicationClient.Configuration, body: [UInt8], contentType: String)
        throws(SIPStackError) -> Handle
    {
        eventLoop.assertInEventLoop()
        guard entries.count < maxPublications else {
            throw SIPStackError(.tooManySubscriptions, "\(entries.count) publications are running")
        }
        nextHandle += 1
        let handle = Handle(rawValue: nextHandle)
        let (machine, actions) = PublicationClient.start(
            configuration, body: body, contentType: contentType,
            callID: SIPEventTokens.callID(host: configuration.from.uri.host), localTag: SIPEventTokens.token())
        entries[handle] = Entry(machine: machine)
        perform(actions, handle: handle)
        return handle
    }

    /// New state (RFC 3903 §4.4).
    public func modify(_ handle: Handle, body: [UInt8], contentType: String) {
        update(handle) { $0.modify(body: body, contentType: contentType) }
    }

    /// Refreshes at once (RFC 3903 §4.3; the refresh timer does it on its own).
    public func refresh(_ handle: Handle) {
        update(handle) { [now = eventLoop.now] in $0.refresh(now: now) }
    }

    /// Removes the state (RFC 3903 §4.5).
    public func remove(_ handle: Handle) {
        update(handle) { $0.remove() }
    }

    private func update(_ handle: Handle, _ body: (inout PublicationClient) -> [PublicationClient.Action]) {
        eventLoop.assertInEventLoop()
        guard var entry = entries[handle] else { return }
        let actions = body(&entry.machine)
        entries[handle] = entry
        perform(actions, handle: handle)
    }

    private func perform(_ actions: [PublicationClient.Action], handle: Handle) {
        for action in actions {
            switch action {
            case .send(let request):
                send(request, handle: handle)
            case .scheduleRefresh(let deadline):
                entries[handle]?.refresh?.cancel()
                entries[handle]?.refresh = eventLoop.scheduleTask(deadline: deadline) { [self] in
                    self.entries[handle]?.refresh = nil
                    self.refresh(handle)
                }
            case .scheduleRetry(let deadline):
                entries[handle]?.retry?.cancel()
                entries[handle]?.retry = eventLoop.scheduleTask(deadline: deadline) { [self] in
                    self.entries[handle]?.retry = nil
                    self.update(handle) { [now = self.eventLoop.now] in $0.retry(now: now) }
                }
            case .published(let tag, let expiresAt):
                onEvent(.published(handle, entityTag: tag, expiresAt: expiresAt))
            case .removed:
                finish(handle)
                onEvent(.removed(handle))
            case .failed(let code, let reason):
                finish(handle)
                onEvent(.failed(handle, statusCode: code, reason: reason))
            }
        }
    }

    private func finish(_ handle: Handle) {
        guard let entry = entries.removeValue(forKey: handle) else { return }
        entry.refresh?.cancel()
        entry.retry?.cancel()
    }

    private func send(_ request: SIPRequest, handle: Handle) {
        guard let target = routing.target(for: request) else {
            eventLoop.execute { self.update(handle) { [now = self.eventLoop.now] in $0.transactionFailed(now: now) } }
            return
        }
        do {
            try layer.send(request, to: target) { [self] event in
                guard event.response.statusCode >= 200 else { return }
                self.update(handle) { [now = self.eventLoop.now, jitter = self.jitter()] in
                    $0.receive(event.response, now: now, jitter: jitter)
                }
            }
        } catch {
            eventLoop.execute { self.update(handle) { [now = self.eventLoop.now] in $0.transactionFailed(now: now) } }
        }
    }
}
