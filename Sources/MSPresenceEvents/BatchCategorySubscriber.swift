import Multipart
public import NIOCore
public import PresenceDocuments
public import SIPMessages
public import SIPStack

/// A batched category subscription on the subscriber side ([MS-PRES] §2.2.2.4, §3.4.5.1): the
/// gateway subscribing to enterprise resources on behalf of one watcher, in one dialog.
///
/// It sends the batch SUBSCRIBE (From = To = the watcher, §3.4.5.1.1; the Request-URI may be a
/// pool GRUU), reads the multipart/related 200 OK and later notifications into per-resource
/// events — categories for accepted resources, the RLMI instance for rejected ones, so the owner
/// can act on `resubscribe` (with or without `poolFqdn`) and `terminated` (§3.4.5.1.3.1) — and
/// adds or removes resources with in-dialog SUBSCRIBEs. Dialog, refresh and termination handling
/// are a ``SubscriberSubscription``'s.
public struct BatchCategorySubscriber: Sendable {
    /// One piece of news about one resource.
    public enum ResourceEvent: Sendable, Hashable {
        /// The resource's categories (the complete set of instances of each category named,
        /// [MS-PRES] §3.2.5.3; an empty category element means nothing visible).
        case categories(CategoriesDocument)
        /// The notifier does not (or no longer) serve this resource here: `resubscribe` (to
        /// `poolFqdn` when given, else a single SUBSCRIBE to the resource), `terminated` with a
        /// reason and statusCode, or `pending`.
        case rejected(uri: String, instance: RLMIList.Instance)
    }

    public enum Action: Sendable {
        /// A dialog-level action of the underlying subscription (send, respond, schedule, ended;
        /// its `.deliver` actions are turned into ``resources(_:)``).
        case subscription(SubscriberSubscription.Action)
        /// What the last response or notification said about resources, in document order.
        case resources([ResourceEvent])
        /// A body that could not be read; the subscription goes on (the notification was answered).
        case unreadableBody(String)
    }

    public internal(set) var subscription: SubscriberSubscription
    /// The resources this dialog subscribes to (accepted or still asked for), in order.
    public private(set) var resources: [String] {
        get {
            switch resourceList {
            case .one(let uri): [uri]
            case .many(let uris): uris
            }
        }
        set { resourceList = ResourceList(newValue) }
    }
    public let categories: [CategoryName]
    /// Resources waiting for the outstanding SUBSCRIBE to be answered before their own is sent.
    var queued: [BatchSubscribe.Action] = []
    /// The actions of the outstanding SUBSCRIBE when a resource in them carries a `context`: a
    /// 413 to it sends them again without ([MS-PRES] §3.6.5.3: the resource's subscriber list is
    /// full, which does not stop the subscription).
    private var sentContexts: [BatchSubscribe.Action]?
    /// A 413 answered the dialog's first SUBSCRIBE, which carried a `context`: the dialog ended,
    /// and its resources are to be subscribed again without one.
    public private(set) var refusedContext = false
    /// The resources: most dialogs a gateway keeps have one, held without an array allocation.
    private var resourceList: ResourceList

    private enum ResourceList: Sendable {
        case one(String)
        case many([String])

        init(_ uris: [String]) { self = uris.count == 1 ? .one(uris[0]) : .many(uris) }
    }

    init(subscription: SubscriberSubscription, resources: [String], categories: [CategoryName]) {
        self.subscription = subscription
        self.categories = categories
        self.resourceList = ResourceList(resources)
    }

    /// The headers of a batch category SUBSCRIBE (§4.5): `Require: adhoclist,
    /// categoryList`, `Supported: eventlist, ms-benotify, ms-piggyback-first-notify`, and Accept
    /// for categories, RLMI and multipart/related (§3.4.5.1.1).
    ///
    /// A *single* category SUBSCRIBE (§3.4.5.1.1; example §4.6) has the same
    /// body with one resource but no `Require`, and its To is the resource: `single` gives it.
    public static func configuration(
        watcher: SIPAddress, target: SIPURI, contact: SIPAddress,
        expires: UInt32, single: SIPAddress? = nil
    ) -> SubscriberSubscription.Configuration {
        SubscriberSubscription.Configuration(
            target: target, from: watcher, to: single ?? watcher, contact: contact,
            accept: [SIPBodyType.msrtcCategories, SIPBodyType.rlmi, SIPBodyType.multipartRelated],
            expires: expires, supported: ["eventlist", "ms-benotify", "ms-piggyback-first-notify"],
            extraHeaders: single == nil ? [(.require, "adhoclist, categoryList")] : [],
            bodyType: SIPBodyType.msrtcCategoryList, bodyGivenPerRequest: true)
    }

    /// Starts the dialog with one `subscribe` action for `resources` and `categories`. `target` is
    /// the Request-URI: the watcher's own URI, or a pool GRUU from a `poolFqdn` hint (batch), or
    /// the resource (single).
    ///
    /// `context`: each resource carries ``BatchSubscribe/Resource/addedAsWatcher``, so that the
    /// watcher joins its subscriber list (§3.6).
    public static func start(
        watcher: SIPAddress, target: SIPURI, contact: SIPAddress, resources: [String],
        categories: [CategoryName], expires: UInt32 = 3600, callID: String,
        localTag: String, context: Bool = false
    ) -> (BatchCategorySubscriber, [Action]) {
        start(
            configuration(watcher: watcher, target: target, contact: contact, expires: expires),
            resources: resources, categories: categories, callID: callID, localTag: localTag, context: context)
    }

    /// Starts a single category subscription of `watcher` to `resource` (§4.6): Request-URI and To
    /// are the resource.
    public static func startSingle(
        watcher: SIPAddress, resource: SIPAddress, contact: SIPAddress,
        categories: [CategoryName], expires: UInt32 = 3600, callID: String,
        localTag: String, context: Bool = false
    ) -> (BatchCategorySubscriber, [Action]) {
        start(
            configuration(watcher: watcher, target: resource.uri, contact: contact, expires: expires, single: resource),
            resources: [resource.uri.description], categories: categories, callID: callID, localTag: localTag,
            context: context)
    }

    private static func start(
        _ base: SubscriberSubscription.Configuration, resources: [String], categories: [CategoryName],
        callID: String, localTag: String, context: Bool
    ) -> (BatchCategorySubscriber, [Action]) {
        var configuration = base
        let action = subscribeAction(resources, categories, context: context)
        configuration.body = body(base.from, [action])
        let (subscription, actions) = SubscriberSubscription.start(configuration, callID: callID, localTag: localTag)
        var subscriber = BatchCategorySubscriber(
            subscription: subscription, resources: resources, categories: categories)
        if context { subscriber.sentContexts = [action] }
        return (subscriber, actions.map { .subscription($0) })
    }

    /// Adds resources to the dialog (a `subscribe` action in an in-dialog SUBSCRIBE, §4.5). Sent
    /// at once when no SUBSCRIBE is outstanding, else after its response. `context` as for
    /// ``start(watcher:target:contact:resources:categories:expires:callID:localTag:context:)``.
    public mutating func add(_ uris: [String], context: Bool = false, now: NIODeadline) -> [Action] {
        let new = uris.filter { !resources.contains($0) }
        guard !new.isEmpty else { return [] }
        resources += new
        return send(Self.subscribeAction(new, categories, context: context), now: now)
    }

    /// Removes resources (an `unsubscribe` action, §4.5). The dialog stays, even when empty.
    public mutating func remove(_ uris: [String], now: NIODeadline) -> [Action] {
        let gone = uris.filter { resources.contains($0) }
        guard !gone.isEmpty else { return [] }
        resources.removeAll { gone.contains($0) }
        return send(
            BatchSubscribe.Action(kind: .unsubscribe, resources: gone.map { .init(uri: $0) }, categories: categories),
            now: now)
    }

    /// Drops resources from this side's list without telling the notifier: for resources it
    /// rejected (they are not in its state, [MS-PRES] §3.4.5.1.3) and that are followed up
    /// elsewhere.
    public mutating func forget(_ uris: [String]) {
        resources.removeAll { uris.contains($0) }
        for index in queued.indices {
            queued[index].resources.removeAll { uris.contains($0.uri) }
        }
        queued.removeAll { $0.resources.isEmpty }
    }

    /// The refresh timer fired: an in-dialog SUBSCRIBE naming every resource of the dialog, so
    /// that the notifier's state and this side's agree after any lost update.
    public mutating func refresh(now: NIODeadline) -> [Action] {
        let all = BatchSubscribe.Action(
            kind: .subscribe, resources: resources.map { .init(uri: $0) }, categories: categories)
        return wrap(subscription.resubscribe(body: Self.body(subscription.configuration.from, [all]), now: now))
    }

    /// Ends the dialog (Expires 0).
    public mutating func unsubscribe() -> [Action] { wrap(subscription.unsubscribe()) }

    /// A response to the outstanding SUBSCRIBE: the piggybacked multipart body becomes resource
    /// events; queued additions or removals go out next.
    public mutating func receive(_ response: SIPResponse, now: NIODeadline, jitter: Double) -> [Action] {
        let answered = response.statusCode >= 200 ? sentContexts : nil
        if response.statusCode >= 200 { sentContexts = nil }
        var actions = wrap(subscription.receive(response, now: now, jitter: jitter))
        if response.statusCode == 413, let answered {
            if case .terminated = subscription.status {
                refusedContext = true
            } else {
                queued.insert(contentsOf: answered.map(Self.withoutContext), at: 0)
            }
        }
        if response.statusCode >= 200, subscription.outstanding == nil, !queued.isEmpty {
            let next = queued
            queued = []
            actions += resubscribe(next, now: now)
        }
        return actions
    }

    /// A NOTIFY or BENOTIFY of this dialog.
    public mutating func receive(notify: SIPRequest, now: NIODeadline, jitter: Double) -> [Action] {
        let actions = wrap(subscription.receive(notify: notify, now: now, jitter: jitter))
        if case .terminated = subscription.status { queued = [] }
        return actions
    }

    /// The outstanding SUBSCRIBE timed out or failed in transport.
    public mutating func transactionFailed(now: NIODeadline) -> [Action] {
        sentContexts = nil
        return wrap(subscription.transactionFailed(now: now))
    }

    // MARK: -

    private mutating func send(_ action: BatchSubscribe.Action, now: NIODeadline) -> [Action] {
        guard subscription.outstanding == nil else {
            queued.append(action)
            return []
        }
        return resubscribe([action], now: now)
    }

    /// An in-dialog SUBSCRIBE with `actions`, remembering them when one carries a `context`.
    private mutating func resubscribe(_ actions: [BatchSubscribe.Action], now: NIODeadline) -> [Action] {
        let sent = wrap(subscription.resubscribe(body: Self.body(subscription.configuration.from, actions), now: now))
        let hasContext = actions.contains { $0.resources.contains { $0.context != nil } }
        sentContexts = hasContext && subscription.outstanding != nil ? actions : nil
        return sent
    }

    static func subscribeAction(_ resources: [String], _ categories: [CategoryName], context: Bool)
        -> BatchSubscribe.Action
    {
        let context = context ? BatchSubscribe.Resource.addedAsWatcher : nil
        return BatchSubscribe.Action(
            kind: .subscribe, resources: resources.map { .init(uri: $0, context: context) }, categories: categories)
    }

    static func withoutContext(_ action: BatchSubscribe.Action) -> BatchSubscribe.Action {
        var action = action
        for i in action.resources.indices { action.resources[i].context = nil }
        return action
    }

    func wrap(_ actions: [SubscriberSubscription.Action]) -> [Action] {
        actions.flatMap { action -> [Action] in
            guard case .deliver(let notification) = action else { return [.subscription(action)] }
            guard !notification.body.isEmpty else { return [] }
            do {
                return [.resources(try Self.events(notification))]
            } catch {
                return [.unreadableBody("\(error)")]
            }
        }
    }

    /// Reads a notification body: a categories document, or a multipart/related with an RLMI
    /// part (rejected resources) and categories parts (§2.2.2.4.2).
    static func events(_ notification: SubscriberSubscription.Notification) throws(BodyError) -> [ResourceEvent] {
        guard let type = notification.contentType else { throw BodyError("a body without Content-Type") }
        if type.isMultipart {
            guard let boundary = type.boundary else { throw BodyError("multipart body without boundary") }
            let response: BatchSubscribeResponse
            do {
                response = try BatchSubscribeResponse(
                    multipart: MultipartBody(parsing: notification.body, boundary: boundary))
            } catch let error as MultipartBody.ParseError {
                throw BodyError(error.description)
            } catch {
                throw BodyError("\(error)")
            }
            let rejected = response.list.resources.flatMap { resource in
                resource.instances.map { ResourceEvent.rejected(uri: resource.uri, instance: $0) }
            }
            return rejected + response.categories.map { .categories($0) }
        }
        guard type.mediaType == SIPBodyType.msrtcCategories else {
            throw BodyError("unexpected body type \(type.mediaType)")
        }
        do {
            return [.categories(try CategoriesDocument(bytes: notification.body))]
        } catch {
            throw BodyError(error.description)
        }
    }

    /// Why a notification body could not be read.
    public struct BodyError: Error, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    static func body(_ watcher: SIPAddress, _ actions: [BatchSubscribe.Action]) -> [UInt8] {
        BatchSubscribe(uri: watcher.uri.description, name: "", actions: actions).serialized()
    }
}
