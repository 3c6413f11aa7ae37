import Multipart
public import NIOCore
public import PresenceDocuments
public import SIPMessages
public import SIPStack
public import _GatewayInternals

/// A batched category subscription on the notifier side ([MS-PRES] §2.2.2.4, §3.4.5.1): one
/// dialog covering many resources, each with the categories the watcher asked for.
///
/// ```
/// SUBSCRIBE  Require: adhoclist, categoryList   Content-Type: application/msrtc-adrl-categorylist+xml
///   <batchSub><action name="subscribe|unsubscribe"><adhocList><resource uri/>*</adhocList>
///             <categoryList><category name/>*</categoryList></action></batchSub>
/// 200 OK     Content-Type: multipart/related; type="application/rlmi+xml"; start=resourceList
///   part 1: <list xmlns="urn:ietf:params:xml:ns:rlmi"> with only the rejected resources
///   part 2..n: one <categories> document per accepted resource
/// ```
///
/// The dialog, its timers and the NOTIFY/BENOTIFY choice are a ``NotifierSubscription``'s; this
/// type adds the resource set. A polling subscription (Expires 0 and no To tag, §3.4.5.1.2)
/// is answered once and keeps no state: ``accept(_:batch:terms:localTag:contact:boundary:now:overTLS:resolve:)``
/// returns no subscription for it.
public struct BatchCategorySubscription: Sendable {
    /// What the owner knows of one requested resource.
    public enum Resolution: Sendable, Hashable {
        /// Served: the categories this watcher may see now (the owner resolves containers).
        case accepted(CategoriesDocument)
        /// Not served here: listed in the RLMI part with this instance (§3.4.5.1.3.1:
        /// `resubscribe` with `cid` and optional `poolFqdn`, or `terminated` with a reason and
        /// `statusCode`).
        case rejected(RLMIList.Instance)
        /// Accepted but not yet authorized by its source (an RFC 6665 `pending` subscription
        /// behind it): the resource joins the dialog and is listed in the RLMI part with
        /// `instance` (state `pending`, [MS-PRES] §2.2.2.4.2: "active", "pending",
        /// "terminated", "resubscribe"), without a categories part; its state follows with
        /// ``resourceStateChanged(_:instance:document:boundary:now:)``.
        case pending(RLMIList.Instance)
    }

    public typealias Action = NotifierSubscription.Action

    /// The dialog, timers and notification method.
    public private(set) var subscription: NotifierSubscription
    /// Each accepted resource's subscribed categories, in the order first asked.
    public private(set) var resources: SmallMap<String, [CategoryName]>
    /// The subscriber (the RLMI `list` URI): the From URI of the SUBSCRIBE.
    public let watcher: String

    /// Whether a SUBSCRIBE is a batched category subscription: `Require` names both `adhoclist`
    /// and `categoryList` (§3.4.5.1.1; otherwise it is a single one).
    public static func isBatch(_ request: SIPRequest) -> Bool {
        let required = Set(((try? request.headers.require) ?? []).map { $0.lowercased() })
        return required.contains("adhoclist") && required.contains("categorylist")
    }

    /// Whether a SUBSCRIBE is an enhanced presence category subscription, batched or single: a
    /// batched one, or one whose body is a category list (`application/msrtc-adrl-categorylist+xml`).
    /// "Otherwise, the request is considered to be a single category subscribe ... the processing
    /// of batched and single category subscribes is identical" (§3.4.5.1.1; the
    /// federation path of §4.6).
    public static func isCategorySubscribe(_ request: SIPRequest) -> Bool {
        isBatch(request) || (try? request.headers.contentType)??.mediaType.lowercased() == SIPBodyType.msrtcCategoryList
    }

    /// The answer [MS-PRES] §3.4.5.3 gives a category SUBSCRIBE whose form is wrong, before any
    /// of its resources is looked at; nil when its form is right.
    ///
    /// - A batched one (§3.4.5.1.1) whose From-URI and To-URI differ: 403.
    /// - A single one with more than one `action`, an `unsubscribe` action, more than one
    ///   resource, or a resource other than its To-URI: 400.
    ///
    /// URIs compare as addresses of record (scheme, user and host; parameters such as a GRUU's
    /// aside). A refresh without a body names nothing and is never refused here.
    public static func refusal(of request: SIPRequest, batch: BatchSubscribe) -> (status: Int, reason: String)? {
        let to = (try? request.headers.to)?.uri
        if isBatch(request) {
            let from = (try? request.headers.from)?.uri
            guard let from, let to, addressOfRecord(from) == addressOfRecord(to) else {
                return (403, "From and To Differ in a Batch Subscription")
            }
            return nil
        }
        if batch.actions.count > 1 { return (400, "More Than One Action in a Single Subscription") }
        guard let action = batch.actions.first else { return nil }
        if action.kind == .unsubscribe { return (400, "Unsubscribe Action in a Single Subscription") }
        if action.resources.count > 1 { return (400, "More Than One Resource in a Single Subscription") }
        if let resource = action.resources.first {
            guard let to, let uri = try? SIPURI(resource.uri), addressOfRecord(uri) == addressOfRecord(to) else {
                return (400, "Resource Is Not the To-URI")
            }
        }
        return nil
    }

    /// `scheme:user@host`, host lower-cased (RFC 3261 §19.1.4).
    private static func addressOfRecord(_ uri: SIPURI) -> String {
        let scheme = uri.scheme == .sips ? "sip" : uri.scheme.rawValue
        return "\(scheme):\(uri.user ?? "")@\(uri.host.lowercased())"
    }

    /// The `Content-Type` of a 200 OK body (§2.2.2.4.2; the seed folds it after `start=resourceList;`).
    public static func multipartContentType(boundary: String) -> String {
        "\(SIPBodyType.multipartRelated); type=\"\(SIPBodyType.rlmi)\"; start=\(BatchSubscribeResponse.rlmiContentID); boundary=\(boundary)"
    }

    /// Accepts a dialog-creating (or polling) batch SUBSCRIBE. `resolve` answers for each resource
    /// of a `subscribe` action with the categories asked (private ones removed: "The server MUST
    /// ignore 'private' categories in the categoryList body", §3.4.5.1.3). An
    /// `unsubscribe` action in a new dialog removes nothing and is simply answered. The 200 OK
    /// carries the RLMI list of rejected resources and the accepted resources' categories
    /// (piggybacked with `ms-piggyback-cseq`; §4.5), or — for a subscriber without
    /// `ms-piggyback-first-notify` — a NOTIFY does.
    ///
    /// `status` `.pending` makes the dialog itself pending (RFC 6665 §4.2.1.3: a single
    /// subscription whose one resource waits for authorization); it becomes active with
    /// ``activate(_:document:now:)``.
    ///
    /// `watcher` is the From URI's text as the caller already holds it: kept instead of a copy of
    /// its own when it is the same text.
    public static func accept(
        _ subscribe: SIPRequest, batch: BatchSubscribe, terms: SubscriptionTerms, localTag: String,
        contact: SIPAddress, boundary: String, now: NIODeadline, overTLS: Bool = false,
        status: NotifierSubscription.Status = .active, watcher held: String? = nil,
        resolve: (String, [CategoryName]) -> Resolution
    ) throws(SIPStackError) -> (BatchCategorySubscription?, [Action]) {
        let from = (try? subscribe.headers.from)?.uri.description ?? ""
        let watcher = held.flatMap { $0 == from ? $0 : nil } ?? from
        var resources: SmallMap<String, [CategoryName]> = [:]
        let response = Self.apply(batch, to: &resources, watcher: watcher, resolve: resolve)
        let (subscription, actions) = try NotifierSubscription.accept(
            subscribe, terms: terms, status: status, localTag: localTag, contact: contact,
            body: response.multipart(boundary: boundary).bytes,
            bodyType: multipartContentType(boundary: boundary), responseHeaders: eventlist,
            now: now, overTLS: overTLS)
        guard terms.expires > 0 else { return (nil, actions) }
        return (BatchCategorySubscription(subscription: subscription, resources: resources, watcher: watcher), actions)
    }

    /// A SUBSCRIBE in this dialog (§3.4.5.1.3): `subscribe` actions add resources
    /// and categories (answered with the data of the resources named), `unsubscribe` actions remove
    /// them ("If not found, a 200 OK is generated"), Expires 0 ends the dialog.
    public mutating func update(
        _ subscribe: SIPRequest, batch: BatchSubscribe, terms: SubscriptionTerms,
        boundary: String, now: NIODeadline,
        resolve: (String, [CategoryName]) -> Resolution
    ) -> [Action] {
        var changed = resources
        let response = Self.apply(batch, to: &changed, watcher: watcher, resolve: resolve)
        let actions = subscription.refresh(
            subscribe, terms: terms, body: response.multipart(boundary: boundary).bytes,
            bodyType: Self.multipartContentType(boundary: boundary), responseHeaders: Self.eventlist,
            now: now, piggyback: true)
        if case .respond(let r) = actions.first, r.statusCode == 200 { resources = changed }
        return actions
    }

    /// A resource's categories changed: a NOTIFY/BENOTIFY with its `categories` document, holding
    /// only the categories this watcher subscribed to for it (§2.2.2.4.3, §3.4.5.2). Nothing when
    /// the resource is not in this dialog or nothing it subscribed to is in the document.
    public mutating func resourceChanged(_ document: CategoriesDocument, now: NIODeadline) -> [Action] {
        guard let wanted = resources[document.uri] else { return [] }
        var filtered = document
        filtered.categories = document.categories.filter { wanted.contains($0.name) }
        guard !filtered.categories.isEmpty else { return [] }
        return resourceChanged(document.uri, serialized: filtered.serialized(), now: now)
    }

    /// The same for a `categories` document the owner already reduced to the categories
    /// subscribed for `uri` and serialized (a gateway that compares bodies to notify only on
    /// change serializes once).
    public mutating func resourceChanged(_ uri: String, serialized body: [UInt8], now: NIODeadline) -> [Action] {
        guard resources[uri] != nil, !body.isEmpty else { return [] }
        return subscription.stateChanged(body: body, headers: Self.eventlist, now: now)
    }

    /// Takes a resource out of the dialog because its source ended (an OMA subscription terminated,
    /// a pool stopped answering): a notification whose RLMI part lists it with `instance` (e.g.
    /// `terminated` with a reason, or `resubscribe`), in the multipart shape of the 200 OK.
    public mutating func removeResource(
        _ uri: String, instance: RLMIList.Instance, boundary: String,
        now: NIODeadline
    ) -> [Action] {
        guard resources.removeValue(forKey: uri) != nil else { return [] }
        let list = RLMIList(uri: watcher, resources: [RLMIList.Resource(uri: uri, instances: [instance])])
        let body = BatchSubscribeResponse(list: list).multipart(boundary: boundary).bytes
        return subscription.stateChanged(
            body: body, bodyType: Self.multipartContentType(boundary: boundary),
            headers: Self.eventlist, now: now)
    }

    /// A resource of this dialog changed its subscription state without leaving it: `pending`
    /// (its source waits for authorization) or back to `active` (authorized: `document` is its
    /// first state). One notification in the multipart shape of the 200 OK: the RLMI part lists
    /// the resource with `instance`, followed by `document` (the categories subscribed for it)
    /// when given ([MS-PRES] §2.2.2.4.2, §3.4.5.1.3). Nothing when the resource is not in the
    /// dialog.
    public mutating func resourceStateChanged(
        _ uri: String, instance: RLMIList.Instance, document: CategoriesDocument?,
        boundary: String, now: NIODeadline
    ) -> [Action] {
        guard let wanted = resources[uri] else { return [] }
        let list = RLMIList(uri: watcher, resources: [RLMIList.Resource(uri: uri, instances: [instance])])
        var parts: [CategoriesDocument] = []
        if var document {
            document.categories = document.categories.filter { wanted.contains($0.name) }
            parts.append(document)
        }
        let body = BatchSubscribeResponse(list: list, categories: parts).multipart(boundary: boundary).bytes
        return subscription.stateChanged(
            body: body, bodyType: Self.multipartContentType(boundary: boundary),
            headers: Self.eventlist, now: now)
    }

    /// What changed of one resource in ``resourcesChanged(_:boundary:now:)``.
    public struct ResourceChange: Sendable {
        public var uri: String
        /// Listed in the RLMI part with this instance (a new subscription state); nil: not listed.
        public var instance: RLMIList.Instance?
        /// Its categories part, when it has one to send: a `categories` document serialized,
        /// holding only the categories subscribed for the resource (as the owner renders it to
        /// compare with what it sent last).
        public var body: [UInt8]?

        public init(uri: String, instance: RLMIList.Instance? = nil, body: [UInt8]? = nil) {
            self.uri = uri
            self.instance = instance
            self.body = body
        }
    }

    /// Several resources changed at once (one RFC 4662 list notification behind them): one
    /// notification in the multipart shape of the 200 OK, its RLMI part listing the resources
    /// whose subscription state changed, then the categories subscribed for each resource with a
    /// document ([MS-PRES] §2.2.2.4.2, §3.4.5.2). A resource listed `terminated` leaves the
    /// dialog. Resources not in the dialog are left out; nothing when none is left.
    public mutating func resourcesChanged(_ changes: [ResourceChange], boundary: String, now: NIODeadline)
        -> [Action]
    {
        var list = RLMIList(uri: watcher)
        var parts: [[UInt8]] = []
        for change in changes where resources[change.uri] != nil {
            if let instance = change.instance {
                list.resources.append(RLMIList.Resource(uri: change.uri, instances: [instance]))
                if instance.state == .terminated { resources.removeValue(forKey: change.uri) }
            }
            if let body = change.body { parts.append(body) }
        }
        guard !list.resources.isEmpty || !parts.isEmpty else { return [] }
        var body = BatchSubscribeResponse(list: list).multipart(boundary: boundary)
        for part in parts {
            body.parts.append(
                MultipartBody.Part(
                    headers: [
                        ("Content-Transfer-Encoding", "binary"),
                        ("Content-Type", BatchSubscribeResponse.categoriesContentType),
                    ], body: part))
        }
        return subscription.stateChanged(
            body: body.bytes, bodyType: Self.multipartContentType(boundary: boundary), headers: Self.eventlist,
            now: now)
    }

    /// A pending dialog becomes active (RFC 6665 §4.2.1.3): a NOTIFY with `Subscription-State:
    /// active` and the categories subscribed for `uri`. Nothing unless the dialog is pending.
    public mutating func activate(_ uri: String, document: CategoriesDocument, now: NIODeadline) -> [Action] {
        var filtered = document
        let wanted = resources[uri] ?? []
        filtered.categories = document.categories.filter { wanted.contains($0.name) }
        return subscription.activate(body: filtered.serialized(), now: now)
    }

    /// The expiry timer fired (see ``NotifierSubscription/expire(now:)``).
    public mutating func expire(now: NIODeadline) -> [Action] { subscription.expire(now: now) }

    /// Ends the dialog with a final NOTIFY (see ``NotifierSubscription/terminate(reason:retryAfter:body:now:)``).
    public mutating func terminate(reason: String, retryAfter: UInt32? = nil, now: NIODeadline) -> [Action] {
        subscription.terminate(reason: reason, retryAfter: retryAfter, now: now)
    }

    /// A NOTIFY of this dialog failed (see ``NotifierSubscription/notifyFailed(status:)``).
    public mutating func notifyFailed(status: Int?) -> [Action] { subscription.notifyFailed(status: status) }

    // MARK: -

    /// `Require: eventlist` on the 200 OK and NOTIFYs (§4.5).
    static let eventlist: SIPHeaders = [(.require, "eventlist")]

    /// Applies the actions of a batch body to `resources` and builds the answer: the RLMI list of
    /// rejected resources (`fullState="false"`, §2.2.2.4.2) and one categories document per
    /// accepted resource named in a `subscribe` action.
    static func apply(
        _ batch: BatchSubscribe, to resources: inout SmallMap<String, [CategoryName]>, watcher: String,
        resolve: (String, [CategoryName]) -> Resolution
    ) -> BatchSubscribeResponse {
        var response = BatchSubscribeResponse(list: RLMIList(uri: watcher))
        for action in batch.actions {
            let categories = unique(action.categories.filter { !CategoryName.privateCategories.contains($0) })
            switch action.kind {
            case .subscribe:
                for resource in action.resources {
                    let known = resources[resource.uri] ?? []
                    let all = categoryLists.interned(known + categories.filter { !known.contains($0) })
                    switch resolve(resource.uri, all) {
                    case .accepted(var document):
                        document.categories = document.categories.filter { all.contains($0.name) }
                        resources[resource.uri] = all
                        response.categories.append(document)
                    case .rejected(let instance):
                        response.list.resources.append(RLMIList.Resource(uri: resource.uri, instances: [instance]))
                    case .pending(let instance):
                        resources[resource.uri] = all
                        response.list.resources.append(RLMIList.Resource(uri: resource.uri, instances: [instance]))
                    }
                }
            case .unsubscribe:
                for resource in action.resources {
                    guard let known = resources[resource.uri] else { continue }
                    let left = known.filter { !categories.contains($0) }
                    resources[resource.uri] = left.isEmpty ? nil : categoryLists.interned(left)
                }
            }
        }
        return response
    }

    /// The category lists the resources hold, one copy of each: watchers of one client kind
    /// all ask for the same few lists, and each list would otherwise take an allocation per
    /// resource for the life of the subscription.
    static let categoryLists = SharedValueTable<[CategoryName]>(limit: 256)

    private static func unique(_ names: [CategoryName]) -> [CategoryName] {
        var seen: Set<CategoryName> = []
        return names.filter { seen.insert($0).inserted }
    }
}
