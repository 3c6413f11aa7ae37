public import NIOCore
public import SIPMessages
public import SIPStack
public import SIPTransport

/// The ESC at run time (RFC 3903 §6): drives an ``EventStateCompositor`` with the PUBLISHes a
/// ``SIPTransactionLayer`` hands it, runs the publications' expiry timers, and reports each
/// resource whose composed state changed (RFC 3903 §6 step 5), so a ``NotifierAgent`` can notify
/// its watchers.
///
/// Confinement: every method is called on the layer's event loop and every callback runs there.
public final class PublicationServer: @unchecked Sendable {
    public let layer: SIPTransactionLayer
    public private(set) var compositor: EventStateCompositor
    private let onChange: @Sendable (_ resource: String, _ publications: [EventStateCompositor.Publication]) -> Void
    private let authorize: @Sendable (SIPRequest, _ resource: String) -> Bool
    private var timers: [String: Scheduled<Void>] = [:]
    public var eventLoop: any EventLoop { layer.eventLoop }

    /// `authorize` decides whether the sender may publish for the resource (RFC 3903 §6 step 1;
    /// refused: 403).
    public init(
        layer: SIPTransactionLayer, compositor: EventStateCompositor = EventStateCompositor(),
        authorize: @escaping @Sendable (SIPRequest, _ resource: String) -> Bool = { _, _ in true },
        onChange: @escaping @Sendable (_ resource: String, _ publications: [EventStateCompositor.Publication]) -> Void
    ) {
        self.layer = layer
        self.compositor = compositor
        self.authorize = authorize
        self.onChange = onChange
    }

    /// The current publications of a resource, oldest first.
    public func publications(of resource: String) -> [EventStateCompositor.Publication] {
        compositor.publications(of: resource)
    }

    /// A PUBLISH from the layer; false for other methods (the caller answers them).
    @discardableResult
    public func handle(_ incoming: SIPTransactionLayer.IncomingRequest) -> Bool {
        eventLoop.assertInEventLoop()
        let request = incoming.request
        guard request.method == .publish else { return false }
        let resource = NotifierAgent.resourceKey(request.uri)
        guard authorize(request, resource) else {
            try? layer.respond(
                SIPResponse(replyingTo: request, statusCode: 403, reasonPhrase: "Forbidden", toTag: incoming.toTag),
                to: incoming.transaction)
            return true
        }
        let actions = compositor.receive(
            request, resource: resource, now: eventLoop.now,
            entropy: UInt64.random(in: 0...UInt64.max))
        perform(actions, incoming: incoming)
        return true
    }

    private func perform(_ actions: [EventStateCompositor.Action], incoming: SIPTransactionLayer.IncomingRequest?) {
        for action in actions {
            switch action {
            case .respond(let response):
                guard let incoming else { continue }
                try? layer.respond(response, to: incoming.transaction)
            case .scheduleExpiry(let tag, let deadline):
                timers[tag]?.cancel()
                timers[tag] = eventLoop.scheduleTask(deadline: deadline) { [self] in
                    self.timers[tag] = nil
                    let actions = self.compositor.expire(entityTag: tag, now: self.eventLoop.now)
                    self.perform(actions, incoming: nil)
                }
            case .cancelExpiry(let tag):
                timers.removeValue(forKey: tag)?.cancel()
            case .changed(let resource, let publications):
                onChange(resource, publications)
            }
        }
    }
}
