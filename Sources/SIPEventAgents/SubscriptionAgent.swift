public import NIOCore
public import SIPMessages
public import SIPStack
public import SIPTransport
public import _GatewayInternals

/// The subscriber side at run time (RFC 6665 §4.1): drives ``SubscriberSubscription`` values over a
/// ``SIPTransactionLayer``. It sends their SUBSCRIBEs in client transactions, feeds the final
/// responses back (a Timer F timeout as 408 and a transport error as 503, RFC 3261 §8.1.3.1),
/// routes each incoming NOTIFY or BENOTIFY to its subscription by Call-ID and local tag — the
/// NOTIFY's To tag is the SUBSCRIBE's From tag, so a NOTIFY that arrives before the 200 (RFC 6665
/// §4.1.2.4) finds its subscription the same way — answers NOTIFYs (never BENOTIFYs, [MS-PRES]
/// §3.4.5.1.4), runs the refresh and resubscribe timers and delivers notifications to a callback.
///
/// Confinement: every method is called on the layer's event loop and every callback runs there;
/// the loop's `now` is the clock (an `EmbeddedEventLoop`'s `advanceTime` drives it in tests).
public final class SubscriptionAgent: @unchecked Sendable {
    /// A subscription as the application knows it; stays the same across a resubscription after
    /// `terminated;reason=deactivated` or a 481 (RFC 6665 §4.1.3), which makes a new dialog.
    public struct Handle: Sendable, Hashable, CustomStringConvertible {
        public var rawValue: UInt64
        public var description: String { "subscription#\(rawValue)" }
    }

    /// What the agent reports.
    public enum Event: Sendable {
        /// A NOTIFY, BENOTIFY or piggybacked 200 OK body ([MS-PRES] §4.4.2).
        case notification(Handle, SubscriberSubscription.Notification)
        /// The subscription will start afresh with a new dialog (RFC 6665 §4.1.3).
        case resubscribing(Handle, reason: String)
        /// Over for good: a final response code, a termination reason or `unsubscribed`.
        case ended(Handle, reason: String)
    }

    /// Upper bounds. Default: 10,000 subscriptions at once.
    public struct Limits: Sendable, Hashable {
        public var maxSubscriptions: Int
        /// Resubscriptions in a row without a notification in between; beyond, the subscription
        /// ends (a notifier that keeps deactivating at once must not make a loop). Default 5.
        public var maxConsecutiveResubscriptions: Int
        public init(maxSubscriptions: Int = 10_000, maxConsecutiveResubscriptions: Int = 5) {
            self.maxSubscriptions = maxSubscriptions
            self.maxConsecutiveResubscriptions = maxConsecutiveResubscriptions
        }
    }

    private typealias DialogKey = SIPDialogKey

    private struct Entry {
        var machine: SubscriberSubscription
        var refresh = TimerSlot()
        var resubscriptions = 0
    }

    public let layer: SIPTransactionLayer
    public var routing: SIPEventRouting
    public let limits: Limits
    private let jitter: @Sendable () -> Double
    private let onEvent: @Sendable (Event) -> Void
    private var entries = DenseTable<Handle, Entry>()
    /// Every subscription's refresh timer, on one scheduled task.
    private var refreshTimers = TimerQueue<Handle>()
    /// The pending restarts of subscriptions that ended and start afresh (RFC 6665 §4.1.3): few
    /// at a time, so kept apart from the entries.
    private var resubscribeTasks: [Handle: Scheduled<Void>] = [:]
    private var handles: [DialogKey: Handle] = [:]
    private var nextHandle: UInt64 = 0
    public var eventLoop: any EventLoop { layer.eventLoop }

    /// `jitter` returns a value in 0..<1 that spreads refreshes (see
    /// ``SubscriberSubscription/receive(_:now:jitter:overTLS:)``); inject a constant in tests.
    public init(
        layer: SIPTransactionLayer, routing: SIPEventRouting = SIPEventRouting(), limits: Limits = Limits(),
        jitter: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        onEvent: @escaping @Sendable (Event) -> Void
    ) {
        self.layer = layer
        self.routing = routing
        self.limits = limits
        self.jitter = jitter
        self.onEvent = onEvent
    }

    /// Makes this agent the layer's only request handler (NOTIFY and BENOTIFY). A host that also
    /// serves other methods calls ``handle(_:)`` from its own handler instead.
    public func installAsRequestHandler() {
        layer.setRequestHandler(for: [.notify, .benotify]) { [self] incoming in
            if !self.handle(incoming) {
                try? self.layer.respond(
                    SIPResponse(
                        replyingTo: incoming.request, statusCode: 405, reasonPhrase: "Method Not Allowed",
                        toTag: incoming.toTag, headers: [(.allow, "NOTIFY, BENOTIFY")]),
                    to: incoming.transaction)
            }
        }
    }

    /// The number of live subscriptions.
    public var count: Int { entries.count }

    /// The state machine of a live subscription.
    public func subscription(_ handle: Handle) -> SubscriberSubscription? { entries[handle]?.machine }

    /// Starts a subscription (RFC 6665 §4.1.2.1). Throws when the limit is reached.
    @discardableResult
    public func subscribe(_ configuration: SubscriberSubscription.Configuration) throws(SIPStackError) -> Handle {
        eventLoop.assertInEventLoop()
        guard entries.count < limits.maxSubscriptions else {
            throw SIPStackError(.tooManySubscriptions, "\(entries.count) subscriptions are running")
        }
        nextHandle += 1
        let handle = Handle(rawValue: nextHandle)
        begin(handle, configuration: configuration, resubscriptions: 0)
        return handle
    }

    /// Unsubscribes (RFC 6665 §4.1.2.3); `ended` follows with the final NOTIFY or failure.
    public func unsubscribe(_ handle: Handle) {
        eventLoop.assertInEventLoop()
        guard var entry = entries[handle] else { return }
        resubscribeTasks.removeValue(forKey: handle)?.cancel()
        entry.refresh.cancel()
        let actions = entry.machine.unsubscribe()
        entries[handle] = entry
        perform(actions, handle: handle, server: nil)
    }

    /// Sends an in-dialog SUBSCRIBE with a new body now and for every later refresh (a batched
    /// category subscription adding or removing resources, [MS-PRES] §4.5).
    public func resubscribe(_ handle: Handle, body: [UInt8]) {
        eventLoop.assertInEventLoop()
        guard var entry = entries[handle] else { return }
        let actions = entry.machine.resubscribe(body: body, now: eventLoop.now)
        entries[handle] = entry
        perform(actions, handle: handle, server: nil)
    }

    /// Refreshes at once (the refresh timer does it on its own).
    public func refresh(_ handle: Handle) {
        eventLoop.assertInEventLoop()
        guard var entry = entries[handle] else { return }
        let actions = entry.machine.refresh(now: eventLoop.now)
        entries[handle] = entry
        perform(actions, handle: handle, server: nil)
    }

    /// A request from the layer. Returns false when it is not a NOTIFY or BENOTIFY (the caller
    /// answers it); NOTIFYs for no known subscription get 481 (RFC 6665 §4.1.3).
    @discardableResult
    public func handle(_ incoming: SIPTransactionLayer.IncomingRequest) -> Bool {
        eventLoop.assertInEventLoop()
        let request = incoming.request
        guard request.method == .notify || request.method == .benotify else { return false }
        guard let callID = try? request.headers.callID, let tag = (try? request.headers.to)?.tag,
            let handle = handles[DialogKey(callID: callID, localTag: tag)], var entry = entries[handle]
        else {
            if request.method == .notify {
                try? layer.respond(
                    SIPResponse(
                        replyingTo: request, statusCode: 481, reasonPhrase: "Subscription Does Not Exist",
                        toTag: incoming.toTag), to: incoming.transaction)
            }
            return true
        }
        let actions = entry.machine.receive(
            notify: request, now: eventLoop.now, jitter: jitter(),
            overTLS: incoming.received.source.kind == .tls)
        if actions.contains(where: { if case .deliver = $0 { return true } else { return false } }) {
            entry.resubscriptions = 0
        }
        entries[handle] = entry
        perform(actions, handle: handle, server: incoming.transaction)
        return true
    }

    // MARK: Driving

    private func begin(_ handle: Handle, configuration: SubscriberSubscription.Configuration, resubscriptions: Int) {
        let tag = SIPEventTokens.token()
        let callID = SIPEventTokens.callID(host: configuration.contact.uri.host)
        let (machine, actions) = SubscriberSubscription.start(configuration, callID: callID, localTag: tag)
        resubscribeTasks[handle] = nil
        entries[handle] = Entry(machine: machine, resubscriptions: resubscriptions)
        handles[DialogKey(callID: callID, localTag: tag)] = handle
        perform(actions, handle: handle, server: nil)
    }

    private func perform(_ actions: [SubscriberSubscription.Action], handle: Handle, server: SIPServerTransactionKey?) {
        var restartAt: NIODeadline?
        for action in actions {
            switch action {
            case .send(let request):
                send(request, handle: handle)
            case .respond(let response):
                if let server { try? layer.respond(response, to: server) }
            case .scheduleRefresh(let deadline):
                scheduleRefresh(handle, at: deadline)
            case .scheduleResubscribe(let deadline):
                restartAt = deadline
            case .deliver(let notification):
                onEvent(.notification(handle, notification))
            case .ended(let reason):
                guard let entry = entries[handle] else { continue }
                entries[handle]?.refresh.cancel()
                resubscribeTasks.removeValue(forKey: handle)?.cancel()
                handles[DialogKey(callID: entry.machine.callID, localTag: entry.machine.localTag)] = nil
                if let restartAt, entry.resubscriptions < limits.maxConsecutiveResubscriptions {
                    let configuration = entry.machine.configuration
                    let count = entry.resubscriptions + 1
                    resubscribeTasks[handle] = eventLoop.scheduleTask(deadline: restartAt) { [self] in
                        guard self.entries[handle] != nil else { return }
                        self.begin(handle, configuration: configuration, resubscriptions: count)
                    }
                    onEvent(.resubscribing(handle, reason: reason))
                } else {
                    entries[handle] = nil
                    onEvent(.ended(handle, reason: reason))
                }
            }
        }
    }

    private func scheduleRefresh(_ handle: Handle, at deadline: NIODeadline) {
        guard var entry = entries[handle] else { return }
        let queue = entry.refresh.schedule(at: deadline)
        entries[handle] = entry
        if let queue { refreshTimers.add(handle, at: queue, on: eventLoop) { [self] in self.refreshTimersFired() } }
    }

    private func refreshTimersFired() {
        let now = eventLoop.now
        for (deadline, handle) in refreshTimers.due(now: now) {
            guard var entry = entries[handle] else { continue }
            let outcome = entry.refresh.came(deadline, now: now)
            entries[handle] = entry
            switch outcome {
            case .fire: refresh(handle)
            case .requeue(let at):
                refreshTimers.add(handle, at: at, on: eventLoop) { [self] in self.refreshTimersFired() }
            case .ignore: break
            }
        }
        refreshTimers.rearm(on: eventLoop) { [self] in self.refreshTimersFired() }
    }

    private func send(_ request: SIPRequest, handle: Handle) {
        guard let target = routing.target(for: request) else {
            deliverFailure(handle: handle, request: request)
            return
        }
        do {
            try layer.send(request, to: target) { [self] event in
                let response = event.response
                guard response.statusCode >= 200 else { return }
                self.receive(response, for: request, handle: handle)
            }
        } catch {
            // Deferred: the failure is reported after the actions that sent the request.
            eventLoop.execute { self.deliverFailure(handle: handle, request: request) }
        }
    }

    private func deliverFailure(handle: Handle, request: SIPRequest) {
        receive(
            SIPResponse(replyingTo: request, statusCode: 503, reasonPhrase: "Service Unavailable"), for: request,
            handle: handle)
    }

    private func receive(_ response: SIPResponse, for request: SIPRequest, handle: Handle) {
        guard var entry = entries[handle], entry.machine.callID == (try? request.headers.callID) else { return }
        let actions = entry.machine.receive(
            response, now: eventLoop.now, jitter: jitter(),
            overTLS: request.uri.scheme == .sips)
        entries[handle] = entry
        perform(actions, handle: handle, server: nil)
    }
}

extension SubscriptionAgent.Handle: PackedTableKey {
    public var tableBits: UInt64 { rawValue }
    public init(tableBits: UInt64) { self.init(rawValue: tableBits) }
}
