public import NIOCore
public import SIPMessages
public import SIPStack
public import SIPTransport
public import _GatewayInternals

/// The notifier side at run time (RFC 6665 §4.2) for the packages of a registry: drives
/// ``NotifierSubscription`` values over a ``SIPTransactionLayer``.
///
/// A new SUBSCRIBE is checked (``SubscriptionTerms/evaluate(_:registry:negotiated:)``), then put to
/// the policy (accept as active or pending, RFC 6665 §4.2.1.3, or reject with a status); accepted
/// subscriptions get the 200 and the first NOTIFY with the resource's current state (or the state
/// piggybacked in the 200, [MS-PRES] §4.4.2). In-dialog SUBSCRIBEs refresh or end them (§4.2.1.2),
/// expiry timers send `terminated;reason=timeout` (§4.2.2), and ``publish(resource:)`` notifies
/// every active subscriber of a resource. NOTIFYs go in client transactions (a 481, a timeout or a
/// transport error removes the subscription, §4.2.2); BENOTIFYs are sent once, outside any
/// transaction, as they take no response ([MS-PRES] §3.4.5.1.4).
///
/// Confinement: every method is called on the layer's event loop and every callback runs there;
/// the loop's `now` is the clock.
public final class NotifierAgent: @unchecked Sendable {
    public struct Handle: Sendable, Hashable, CustomStringConvertible {
        public var rawValue: UInt64
        public var description: String { "notifier-subscription#\(rawValue)" }
    }

    /// What the policy decides for a new subscription.
    public enum Decision: Sendable, Hashable {
        case active
        /// Waiting for authorization (RFC 6665 §4.2.1.3); ``activate(_:)`` later.
        case pending
        /// Refused with this status (e.g. 403 Forbidden, 404 Not Found).
        case reject(status: Int, reason: String)
    }

    /// A new subscription, as the policy sees it.
    public struct Request: Sendable {
        public var subscribe: SIPRequest
        public var terms: SubscriptionTerms
        /// The resource: ``NotifierAgent/resourceKey(_:)`` of the Request-URI.
        public var resource: String
        public var watcher: SIPAddress?
    }

    public enum Event: Sendable {
        case subscribed(Handle, resource: String)
        case ended(Handle, resource: String, reason: String)
    }

    /// Upper bounds.
    public struct Limits: Sendable, Hashable {
        /// Subscriptions at once; beyond, new SUBSCRIBEs get 503 with Retry-After. Default 100,000.
        public var maxSubscriptions: Int
        /// Whether the first state rides in the 200 OK for subscribers that support
        /// `ms-piggyback-first-notify` ([MS-PRES] §4.4.2). Default true.
        public var piggyback: Bool
        public init(maxSubscriptions: Int = 100_000, piggyback: Bool = true) {
            self.maxSubscriptions = maxSubscriptions
            self.piggyback = piggyback
        }
    }

    private typealias DialogKey = SIPDialogKey

    private struct Entry {
        var machine: NotifierSubscription
        var resource: String
        var expiry = TimerSlot()
    }

    public let layer: SIPTransactionLayer
    public let registry: SIPEventPackageRegistry
    /// The Contact of 200 responses and NOTIFYs.
    public var contact: SIPAddress
    public var routing: SIPEventRouting
    public let limits: Limits
    private let policy: @Sendable (Request) -> Decision
    private let state: @Sendable (_ resource: String, _ bodyType: String) -> [UInt8]?
    private let onEvent: @Sendable (Event) -> Void
    private var entries = DenseTable<Handle, Entry>()
    /// Every subscription's expiry timer, on one scheduled task.
    private var expiryTimers = TimerQueue<Handle>()
    private var handles: [DialogKey: Handle] = [:]
    private var byResource: [String: Subscribers] = [:]

    /// The subscriptions of one resource: most resources have one subscriber, kept inline.
    private enum Subscribers {
        case one(Handle)
        case many(Set<Handle>)

        var handles: [Handle] {
            switch self {
            case .one(let handle): [handle]
            case .many(let set): Array(set)
            }
        }

        func inserting(_ handle: Handle) -> Subscribers {
            switch self {
            case .one(let other):
                return other == handle ? self : .many([other, handle])
            case .many(var set):
                set.insert(handle)
                return .many(set)
            }
        }

        /// nil when none is left.
        func removing(_ handle: Handle) -> Subscribers? {
            switch self {
            case .one(let other): return other == handle ? nil : self
            case .many(var set):
                set.remove(handle)
                if set.count == 1, let last = set.first { return .one(last) }
                return set.isEmpty ? nil : .many(set)
            }
        }
    }
    private var nextHandle: UInt64 = 0
    public var eventLoop: any EventLoop { layer.eventLoop }

    /// `state` returns the resource's current state as a body of the given type (nil: no body,
    /// e.g. nothing published yet).
    public init(
        layer: SIPTransactionLayer, registry: SIPEventPackageRegistry = SIPEventPackageRegistry(),
        contact: SIPAddress, routing: SIPEventRouting = SIPEventRouting(), limits: Limits = Limits(),
        policy: @escaping @Sendable (Request) -> Decision = { _ in .active },
        state: @escaping @Sendable (_ resource: String, _ bodyType: String) -> [UInt8]?,
        onEvent: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.layer = layer
        self.registry = registry
        self.contact = contact
        self.routing = routing
        self.limits = limits
        self.policy = policy
        self.state = state
        self.onEvent = onEvent
    }

    /// Makes this agent the layer's only request handler (SUBSCRIBE).
    public func installAsRequestHandler() {
        layer.setRequestHandler(for: [.subscribe]) { [self] incoming in
            _ = self.handle(incoming)
        }
    }

    /// The resource key of a URI: `user@host`, the host lower-cased (RFC 3261 §19.1.4 compares
    /// hosts case-insensitively and users case-sensitively).
    public static func resourceKey(_ uri: SIPURI) -> String {
        (uri.user.map { $0 + "@" } ?? "") + uri.host.lowercased()
    }

    public var count: Int { entries.count }

    public func subscription(_ handle: Handle) -> NotifierSubscription? { entries[handle]?.machine }

    /// The live subscriptions to a resource.
    public func subscriptions(of resource: String) -> [Handle] {
        (byResource[resource]?.handles ?? []).sorted { $0.rawValue < $1.rawValue }
    }

    /// A SUBSCRIBE from the layer. Returns false for other methods (the caller answers them).
    @discardableResult
    public func handle(_ incoming: SIPTransactionLayer.IncomingRequest) -> Bool {
        eventLoop.assertInEventLoop()
        let request = incoming.request
        guard request.method == .subscribe else { return false }
        if let tag = (try? request.headers.to)?.tag {
            inDialog(incoming, localTag: tag)
        } else {
            initial(incoming)
        }
        return true
    }

    private func reply(
        _ incoming: SIPTransactionLayer.IncomingRequest, _ status: Int, _ reason: String,
        toTag: String? = nil, headers: SIPHeaders = []
    ) {
        try? layer.respond(
            SIPResponse(
                replyingTo: incoming.request, statusCode: status, reasonPhrase: reason,
                toTag: toTag ?? incoming.toTag, headers: headers), to: incoming.transaction)
    }

    private func initial(_ incoming: SIPTransactionLayer.IncomingRequest) {
        let request = incoming.request
        let terms: SubscriptionTerms
        switch SubscriptionTerms.evaluate(request, registry: registry) {
        case .reject(let status, let reason, let headers):
            reply(incoming, status, reason, headers: headers)
            return
        case .accept(let t):
            terms = t
        }
        guard entries.count < limits.maxSubscriptions else {
            reply(incoming, 503, "Service Unavailable", headers: [(.retryAfter, "30")])
            return
        }
        let resource = Self.resourceKey(request.uri)
        let decision = policy(
            Request(subscribe: request, terms: terms, resource: resource, watcher: try? request.headers.from))
        let status: NotifierSubscription.Status
        switch decision {
        case .active: status = .active
        case .pending: status = .pending
        case .reject(let code, let reason):
            reply(incoming, code, reason)
            return
        }
        let body = status == .active ? state(resource, terms.bodyType) : nil
        let machine: NotifierSubscription
        let actions: [NotifierSubscription.Action]
        do {
            (machine, actions) = try NotifierSubscription.accept(
                request, terms: terms, status: status, localTag: incoming.toTag, contact: contact, body: body,
                now: eventLoop.now, overTLS: incoming.received.source.kind == .tls, piggyback: limits.piggyback)
        } catch {
            reply(incoming, 400, "Bad Request")
            return
        }
        nextHandle += 1
        let handle = Handle(rawValue: nextHandle)
        entries[handle] = Entry(machine: machine, resource: resource)
        handles[DialogKey(callID: machine.dialog.id.callID, localTag: machine.dialog.id.localTag)] = handle
        byResource[resource] = byResource[resource].map { $0.inserting(handle) } ?? .one(handle)
        onEvent(.subscribed(handle, resource: resource))
        perform(actions, handle: handle, server: incoming.transaction)
    }

    private func inDialog(_ incoming: SIPTransactionLayer.IncomingRequest, localTag: String) {
        let request = incoming.request
        guard let callID = try? request.headers.callID,
            let handle = handles[DialogKey(callID: callID, localTag: localTag)],
            var entry = entries[handle]
        else {
            reply(incoming, 481, "Subscription Does Not Exist", toTag: localTag)
            return
        }
        switch SubscriptionTerms.evaluate(request, registry: registry, negotiated: entry.machine.terms.bodyType) {
        case .reject(let status, let reason, let headers):
            reply(incoming, status, reason, toTag: localTag, headers: headers)
        case .accept(let terms):
            let body =
                entry.machine.status == .active || terms.expires == 0
                ? state(entry.resource, entry.machine.terms.bodyType) : nil
            let actions = entry.machine.refresh(request, terms: terms, body: body, now: eventLoop.now)
            entries[handle] = entry
            perform(actions, handle: handle, server: incoming.transaction)
        }
    }

    /// The resource's state changed: every active subscriber gets a NOTIFY (or BENOTIFY) with the
    /// state in its negotiated body type (RFC 6665 §4.2.2). Returns how many were notified.
    @discardableResult
    public func publish(resource: String) -> Int {
        eventLoop.assertInEventLoop()
        var sent = 0
        for handle in subscriptions(of: resource) {
            guard var entry = entries[handle] else { continue }
            let body = state(resource, entry.machine.terms.bodyType) ?? []
            let actions = entry.machine.stateChanged(body: body, now: eventLoop.now)
            entries[handle] = entry
            if !actions.isEmpty { sent += 1 }
            perform(actions, handle: handle, server: nil)
        }
        return sent
    }

    /// Authorizes a pending subscription (RFC 6665 §4.2.1.3).
    public func activate(_ handle: Handle) {
        eventLoop.assertInEventLoop()
        guard var entry = entries[handle] else { return }
        let actions = entry.machine.activate(
            body: state(entry.resource, entry.machine.terms.bodyType), now: eventLoop.now)
        entries[handle] = entry
        perform(actions, handle: handle, server: nil)
    }

    /// Ends a subscription with a final NOTIFY (RFC 6665 §4.2.2 reasons).
    public func terminate(_ handle: Handle, reason: String, retryAfter: UInt32? = nil) {
        eventLoop.assertInEventLoop()
        guard var entry = entries[handle] else { return }
        let actions = entry.machine.terminate(reason: reason, retryAfter: retryAfter, now: eventLoop.now)
        entries[handle] = entry
        perform(actions, handle: handle, server: nil)
    }

    // MARK: Driving

    private func perform(_ actions: [NotifierSubscription.Action], handle: Handle, server: SIPServerTransactionKey?) {
        for action in actions {
            switch action {
            case .respond(let response):
                if let server { try? layer.respond(response, to: server) }
            case .notify(let request):
                sendNotify(request, handle: handle)
            case .scheduleExpiry(let deadline):
                guard var entry = entries[handle] else { continue }
                let queue = entry.expiry.schedule(at: deadline)
                entries[handle] = entry
                if let queue {
                    expiryTimers.add(handle, at: queue, on: eventLoop) { [self] in self.expiryTimersFired() }
                }
            case .remove:
                remove(handle)
            }
        }
    }

    private func expiryTimersFired() {
        let now = eventLoop.now
        for (deadline, handle) in expiryTimers.due(now: now) {
            guard var entry = entries[handle] else { continue }
            switch entry.expiry.came(deadline, now: now) {
            case .fire:
                let actions = entry.machine.expire(now: now)
                entries[handle] = entry
                perform(actions, handle: handle, server: nil)
            case .requeue(let at):
                entries[handle] = entry
                expiryTimers.add(handle, at: at, on: eventLoop) { [self] in self.expiryTimersFired() }
            case .ignore:
                entries[handle] = entry
            }
        }
        expiryTimers.rearm(on: eventLoop) { [self] in self.expiryTimersFired() }
    }

    private func remove(_ handle: Handle) {
        guard var entry = entries.removeValue(forKey: handle) else { return }
        entry.expiry.cancel()
        let id = entry.machine.dialog.id
        handles[DialogKey(callID: id.callID, localTag: id.localTag)] = nil
        byResource[entry.resource] = byResource[entry.resource]?.removing(handle)
        var reason = "terminated"
        if case .terminated(let r) = entry.machine.status, let r { reason = r }
        onEvent(.ended(handle, resource: entry.resource, reason: reason))
    }

    private func sendNotify(_ request: SIPRequest, handle: Handle) {
        guard let target = routing.target(for: request) else {
            notifyFailed(handle, status: nil)
            return
        }
        if request.method == .benotify {
            if !layer.sendWithoutTransaction(request, to: target) { notifyFailed(handle, status: nil) }
            return
        }
        do {
            try layer.send(request, to: target) { [self] event in
                let code = event.response.statusCode
                guard code >= 300 else { return }
                switch event {
                case .response: self.notifyFailed(handle, status: code)
                case .timeout, .transportError: self.notifyFailed(handle, status: nil)
                }
            }
        } catch {
            eventLoop.execute { self.notifyFailed(handle, status: nil) }
        }
    }

    private func notifyFailed(_ handle: Handle, status: Int?) {
        guard var entry = entries[handle] else { return }
        let actions = entry.machine.notifyFailed(status: status)
        entries[handle] = entry
        perform(actions, handle: handle, server: nil)
    }
}

extension NotifierAgent.Handle: PackedTableKey {
    public var tableBits: UInt64 { rawValue }
    public init(tableBits: UInt64) { self.init(rawValue: tableBits) }
}
