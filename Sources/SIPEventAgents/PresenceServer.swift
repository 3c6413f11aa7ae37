public import MSPresenceEvents
public import NIOCore
public import PresenceDocuments
public import SIPMessages
public import SIPStack
import SIPTransport

/// A presence server at run time on one ``SIPTransactionLayer``, in both dialects, so that a
/// publication changes what subscribers get:
///
/// - PUBLISH (RFC 3903) goes to a ``PublicationServer`` (the ESC); a change notifies the
///   resource's subscribers through a ``NotifierAgent``, whose state is the latest publication
///   of the subscriber's negotiated body type (no composition of several publications, no mapping
///   between PIDF and msrtc.pidf: a subscriber of a type nobody published gets no body).
/// - SERVICE with a category publish ([MS-PRES] §3.2.5.1.2) goes to a
///   ``CategoryPublicationStore`` (versions, 409 on conflict); a change notifies the batch
///   dialogs that subscribed to that publisher's changed categories (§3.4.5.2).
/// - SUBSCRIBE: a batched category SUBSCRIBE (`Require: adhoclist, categoryList`, §3.4.5.1.1), or
///   a single one (a category list body without those, §3.4.5.1.1, §4.6), makes or updates a
///   ``BatchCategorySubscription`` (200 OK with the RLMI list and the
///   categories, piggybacked; later BENOTIFYs); any other SUBSCRIBE goes to the ``NotifierAgent``.
///
/// What a watcher sees of a publisher is one container's instances (``Configuration/container``,
/// default 400; container access rules are the gateway's, not this server's).
///
/// Confinement: every method is called on the layer's event loop and every callback runs there.
public final class PresenceServer: @unchecked Sendable {
    public struct Configuration: Sendable {
        /// The server's Contact in 200 responses and NOTIFYs.
        public var contact: SIPAddress
        /// The container whose instances watchers see ([MS-PRES] §3.2.5.1.1). Default 400.
        public var container: UInt32
        /// Batch dialogs at once; beyond, 503. Default 10,000.
        public var maxBatchDialogs: Int
        /// Multipart boundary of 200 OK bodies ([MS-PRES] §2.2.2.4.2).
        public var boundary: String

        public init(
            contact: SIPAddress, container: UInt32 = 400, maxBatchDialogs: Int = 10_000,
            boundary: String = "presence-server-boundary"
        ) {
            self.contact = contact
            self.container = container
            self.maxBatchDialogs = maxBatchDialogs
            self.boundary = boundary
        }
    }

    private typealias DialogKey = SIPDialogKey

    private struct BatchEntry {
        var subscription: BatchCategorySubscription
        var expiry: Scheduled<Void>?
    }

    public let layer: SIPTransactionLayer
    public let configuration: Configuration
    /// PIDF subscriptions.
    public let notifier: NotifierAgent
    /// PIDF publications.
    public let esc: PublicationServer
    public private(set) var store: CategoryPublicationStore
    private let pidf: PIDFState
    private var batches: [DialogKey: BatchEntry] = [:]
    private var storeTimers: [CategoryPublicationStore.Key: Scheduled<Void>] = [:]
    private let registry = SIPEventPackageRegistry()
    private let utcSeconds: @Sendable () -> Int64
    public var eventLoop: any EventLoop { layer.eventLoop }

    /// `utcSeconds` is the wall clock for `publishTime` stamps (injected for tests).
    public init(
        layer: SIPTransactionLayer, configuration: Configuration,
        store: CategoryPublicationStore = CategoryPublicationStore(),
        utcSeconds: @escaping @Sendable () -> Int64
    ) {
        self.layer = layer
        self.configuration = configuration
        self.store = store
        self.utcSeconds = utcSeconds
        let pidf = PIDFState()
        self.pidf = pidf
        notifier = NotifierAgent(
            layer: layer, contact: configuration.contact,
            state: { resource, bodyType in
                // No mapping between formats here: the latest publication of the negotiated type.
                pidf.states[resource]?.last { $0.contentType.lowercased() == bodyType }?.body
            })
        pidf.notifier = notifier
        esc = PublicationServer(layer: layer) { resource, publications in
            pidf.states[resource] = publications
            pidf.notifier?.publish(resource: resource)
        }
    }

    /// Each resource's publications, shared by the ESC's and the notifier's callbacks (on the loop).
    private final class PIDFState: @unchecked Sendable {
        var states: [String: [EventStateCompositor.Publication]] = [:]
        weak var notifier: NotifierAgent?
    }

    /// Installs the server as the layer's request handler (SUBSCRIBE, PUBLISH, SERVICE).
    public func installAsRequestHandler() {
        layer.setRequestHandler(for: [.subscribe, .publish, .service]) { [self] incoming in
            self.handle(incoming)
        }
    }

    /// The number of live batch dialogs.
    public var batchDialogCount: Int { batches.count }

    /// A request from the layer.
    public func handle(_ incoming: SIPTransactionLayer.IncomingRequest) {
        eventLoop.assertInEventLoop()
        let request = incoming.request
        switch request.method {
        case .publish:
            esc.handle(incoming)
        case .service:
            service(incoming)
        case .subscribe:
            if !batchSubscribe(incoming) { notifier.handle(incoming) }
        default:
            try? layer.respond(
                SIPResponse(
                    replyingTo: request, statusCode: 405, reasonPhrase: "Method Not Allowed",
                    toTag: incoming.toTag, headers: [(.allow, "SUBSCRIBE, PUBLISH, SERVICE")]),
                to: incoming.transaction)
        }
    }

    // MARK: SERVICE

    private func service(_ incoming: SIPTransactionLayer.IncomingRequest) {
        let endpoint = (try? incoming.request.headers.from)?.parameters.value("epid")
        let actions = store.receive(
            incoming.request, endpointID: endpoint, now: eventLoop.now,
            utcSeconds: utcSeconds(), toTag: incoming.toTag)
        performStore(actions, incoming: incoming)
    }

    private func performStore(
        _ actions: [CategoryPublicationStore.Action], incoming: SIPTransactionLayer.IncomingRequest?
    ) {
        for action in actions {
            switch action {
            case .respond(let response):
                if let incoming { try? layer.respond(response, to: incoming.transaction) }
            case .scheduleExpiry(let key, let deadline):
                storeTimers[key]?.cancel()
                storeTimers[key] = eventLoop.scheduleTask(deadline: deadline) { [self] in
                    self.storeTimers[key] = nil
                    self.performStore(self.store.expire(key, now: self.eventLoop.now), incoming: nil)
                }
            case .changed(let changes):
                for publisher in Set(changes.map(\.publisher)).sorted() {
                    categoriesChanged(publisher: publisher)
                }
            }
        }
    }

    /// The categories document a watcher sees of a publisher: the configured container's instances.
    public func categories(of publisher: String) -> CategoriesDocument {
        let visible = store.entries(of: publisher).filter { $0.key.container == configuration.container }
        return CategoriesDocument(
            uri: publisher,
            categories: visible.map { entry in
                var category = entry.category
                category.container = nil
                return category
            })
    }

    private func categoriesChanged(publisher: String) {
        let document = categories(of: publisher)
        for key in batches.keys.sorted(by: { ($0.callID, $0.localTag) < ($1.callID, $1.localTag) }) {
            guard var entry = batches[key], entry.subscription.resources[publisher] != nil else { continue }
            let actions = entry.subscription.resourceChanged(document, now: eventLoop.now)
            batches[key] = entry
            performBatch(actions, key: key, server: nil)
        }
    }

    // MARK: Batch SUBSCRIBE

    /// Handles a batched category SUBSCRIBE (new or in one of its dialogs); false when the request
    /// is not one (it goes to the notifier).
    private func batchSubscribe(_ incoming: SIPTransactionLayer.IncomingRequest) -> Bool {
        let request = incoming.request
        let toTag = (try? request.headers.to)?.tag
        let key = toTag.flatMap { tag in request.headers.callID.map { DialogKey(callID: $0, localTag: tag) } }
        let existing = key.flatMap { batches[$0] }
        guard existing != nil || (toTag == nil && BatchCategorySubscription.isCategorySubscribe(request)) else {
            return false
        }
        func reply(_ code: Int, _ reason: String, _ headers: SIPHeaders = []) {
            try? layer.respond(
                SIPResponse(
                    replyingTo: request, statusCode: code, reasonPhrase: reason,
                    toTag: toTag ?? incoming.toTag, headers: headers), to: incoming.transaction)
        }
        let terms: SubscriptionTerms
        switch SubscriptionTerms.evaluate(
            request, registry: registry, negotiated: existing?.subscription.subscription.terms.bodyType)
        {
        case .reject(let status, let reason, let headers):
            reply(status, reason, headers)
            return true
        case .accept(let t):
            terms = t
        }
        let batch: BatchSubscribe
        if request.body.isEmpty, existing != nil {
            batch = BatchSubscribe(actions: [])
        } else {
            do { batch = try BatchSubscribe(bytes: request.body) } catch {
                reply(400, "Bad batchSub body")
                return true
            }
        }
        if let (status, reason) = BatchCategorySubscription.refusal(of: request, batch: batch) {
            reply(status, reason)
            return true
        }
        let resolve: (String, [CategoryName]) -> BatchCategorySubscription.Resolution = { [self] uri, _ in
            .accepted(self.categories(of: uri))
        }
        if let key, var entry = existing {
            let actions = entry.subscription.update(
                request, batch: batch, terms: terms, boundary: configuration.boundary,
                now: eventLoop.now, resolve: resolve)
            batches[key] = entry
            performBatch(actions, key: key, server: incoming.transaction)
            return true
        }
        guard batches.count < configuration.maxBatchDialogs else {
            reply(503, "Service Unavailable", [(.retryAfter, "30")])
            return true
        }
        do {
            let (subscription, actions) = try BatchCategorySubscription.accept(
                request, batch: batch, terms: terms, localTag: incoming.toTag, contact: configuration.contact,
                boundary: configuration.boundary, now: eventLoop.now,
                overTLS: incoming.received.source.kind == .tls, resolve: resolve)
            let newKey = DialogKey(callID: request.headers.callID ?? "", localTag: incoming.toTag)
            if let subscription { batches[newKey] = BatchEntry(subscription: subscription) }
            performBatch(actions, key: newKey, server: incoming.transaction)
        } catch {
            reply(400, "Bad Request")
        }
        return true
    }

    private func performBatch(
        _ actions: [NotifierSubscription.Action], key: DialogKey, server: SIPServerTransactionKey?
    ) {
        for action in actions {
            switch action {
            case .respond(let response):
                if let server { try? layer.respond(response, to: server) }
            case .notify(let request):
                sendNotify(request, key: key)
            case .scheduleExpiry(let deadline):
                batches[key]?.expiry?.cancel()
                batches[key]?.expiry = eventLoop.scheduleTask(deadline: deadline) { [self] in
                    guard var entry = self.batches[key] else { return }
                    entry.expiry = nil
                    let actions = entry.subscription.expire(now: self.eventLoop.now)
                    self.batches[key] = entry
                    self.performBatch(actions, key: key, server: nil)
                }
            case .remove:
                batches.removeValue(forKey: key)?.expiry?.cancel()
            }
        }
    }

    /// NOTIFY in a client transaction; BENOTIFY once, outside any ([MS-PRES] §3.4.5.1.4).
    private func sendNotify(_ request: SIPRequest, key: DialogKey) {
        let first = (try? request.headers.route)?.first?.uri ?? request.uri
        guard let target = SIPEventRouting.literalTarget(first) ?? SIPEventRouting.literalTarget(request.uri) else {
            notifyFailed(key, status: nil)
            return
        }
        if request.method == .benotify {
            if !layer.sendWithoutTransaction(request, to: target) { notifyFailed(key, status: nil) }
            return
        }
        do {
            try layer.send(request, to: target) { [self] event in
                let code = event.response.statusCode
                guard code >= 300 else { return }
                if case .response = event {
                    self.notifyFailed(key, status: code)
                } else {
                    self.notifyFailed(key, status: nil)
                }
            }
        } catch {
            eventLoop.execute { self.notifyFailed(key, status: nil) }
        }
    }

    private func notifyFailed(_ key: DialogKey, status: Int?) {
        guard var entry = batches[key] else { return }
        let actions = entry.subscription.notifyFailed(status: status)
        batches[key] = entry
        performBatch(actions, key: key, server: nil)
    }
}
