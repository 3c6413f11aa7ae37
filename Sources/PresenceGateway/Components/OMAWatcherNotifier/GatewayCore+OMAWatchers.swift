import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack
import XMLBridge
import _GatewayInternals

/// Flows 2 and 3: OMA watchers of enterprise presentities, and the enterprise's
/// batch rejections the gateway follows.
///
/// The gateway groups the enterprise resources of one OMA watcher into batched category
/// dialogs ([MS-PRES] §3.4.5.1; From = To = the watcher): the first toward the resource, later
/// ones toward a pool GRUU. A batch response's RLMI part steers each resource (§3.4.5.1.3.1):
/// `resubscribe` with `poolFqdn` → the resource moves into the watcher's batch dialog with that
/// pool (created on first use; the pool is remembered for the resource, so later watchers go
/// straight there); `resubscribe` without → a single category SUBSCRIBE to the resource (§4.6);
/// `terminated` with `quotaExceeded` or 413 → the watcher's subscription is refused or ended with
/// `rejected` and a retry-after. When the enterprise refuses batched SUBSCRIBEs from federated
/// watchers (a 4xx to the first one), single SUBSCRIBEs are used from then on. When a pool stops
/// answering, its resources are forgotten in the pool cache and their watchers are told.
extension GatewayCore {
    struct OMAWatch: Journaled {
        typealias Pending = (request: SIPRequest, id: ServerRequestID, terms: SubscriptionTerms)
        var watcher: WatcherIdentity
        /// The enterprise presentity.
        var resource: String
        /// Until answered: the SUBSCRIBE and its server request (held out of line, and freed once
        /// answered).
        var pending: Pending? {
            get { pendingBox?.value }
            set { pendingBox = newValue.map(OutOfLine.init) }
        }
        @Waiting private var pendingBox: OutOfLine<Pending>?
        @DialogState var subscription: NotifierSubscription? = nil
        /// The enterprise leg carrying `resource` for this watcher; nil while none does.
        var leg: Int?
        /// What it was last sent (to notify only on change).
        @Transient var lastSent: BodyDigest? = nil
        /// Not a watcher's subscription but a linked identity's: its state is published to the
        /// OMA side (flow 4) instead of notified.
        var linked: Int?
        /// Who made the dialog: its in-dialog requests must come from there.
        var peer: DialogPeer?
        /// Partial notifications (RFC 5263), when the watcher accepts them: held out of line.
        var partial: OMAWatcherNotifier.PartialNotifications? {
            get { partialBox?.value }
            set { partialBox = newValue.map(OutOfLine.init) }
        }
        private var partialBox: OutOfLine<OMAWatcherNotifier.PartialNotifications>?

        /// An event filter (RFC 4660), when the watcher sent one: held out of line.
        var filter: OMAWatcherNotifier.WatcherFilter? {
            get { filterBox?.value }
            set { filterBox = newValue.map(OutOfLine.init) }
        }
        private var filterBox: OutOfLine<OMAWatcherNotifier.WatcherFilter>?

        /// The dialog index's key of its dialog, once answered.
        var dialogKey: SIPDialogKey? {
            subscription?.dialog.id.dialogKey
        }

        /// `rendered` (the whole document) cut to what the watcher's filter selects (RFC 4661
        /// §3.5), and whether the change to it fires one of the filter's triggers (§3.6; true
        /// without triggers), the document kept for the next change. `rendered` itself, for a
        /// watcher without a filter.
        mutating func filtered(_ rendered: [UInt8]) -> (body: [UInt8], triggered: Bool) {
            guard var filter, let tree = try? XMLParser.parse(rendered) else { return (rendered, true) }
            let body = XMLWriter(indent: nil).bytes(filter.filter.apply(to: tree))
            guard !filter.filter.triggers.isEmpty else { return (body, true) }
            let triggered = filter.filter.triggered(from: filter.last, to: tree)
            filter.last = tree
            self.filter = filter
            return (body, triggered)
        }

        /// The body to send for the PIDF document `full`, and its type when not the negotiated
        /// one (``GatewayCore/partialBody(_:_:forceFull:)``); `full` itself, untouched, for a
        /// watcher without partial notifications.
        mutating func body(for full: [UInt8], forceFull: Bool) -> (body: [UInt8], type: String?) {
            guard partialBox != nil else { return (full, nil) }
            return OMAWatcherNotifier.partialBody(full, &partial, forceFull: forceFull)
        }

        init(
            watcher: WatcherIdentity, resource: String, pending: Pending? = nil, linked: Int? = nil,
            peer: DialogPeer? = nil
        ) {
            self.watcher = watcher
            self.resource = resource
            self.linked = linked
            self.pending = pending
            self.peer = peer
        }
    }

    struct EnterpriseLeg: Codable, Journaled {
        /// The watcher's URI (From and, for batch dialogs, To).
        var watcher: String
        /// The pool GRUU a batch dialog targets; nil for the first batch dialog and single ones.
        var pool: String?
        var single: Bool
        @DialogState var subscriber: BatchCategorySubscriber
        /// Resource → the OMA watch it serves.
        var watches: SmallMap<String, Int>
        /// Resource → enterprise state merged from every notification (each carries the complete
        /// set of instances of the categories it names, [MS-PRES] §3.2.5.3).
        @Transient var categories: SmallMap<String, CategoriesDocument> = [:]
        /// A 2xx was received for it.
        var established = false
        var closing = false
        /// The enterprise peer its SUBSCRIBE was sent to (``GatewayCore/reached(_:for:)``).
        var peer: DialogPeer?
        /// The watcher's network and whether its peer was verified, for the edge marking of its
        /// requests (``EnterpriseLegPool/edgeTrust(network:verified:)``).
        var network: SourceNetwork = .federated
        var verified = false
    }

    /// The categories an OMA watcher's bridge subscribes to (`legacyInterop` is
    /// private and not subscribable).
    static let bridgedCategories: [CategoryName] = [.state, .note, .contactCard, .calendarData, .services]

    mutating func newOMAWatch(
        _ request: SIPRequest, id: ServerRequestID, watcher: WatcherIdentity, peer: DialogPeer?,
        now: NIODeadline
    ) -> [Action] {
        let terms: SubscriptionTerms
        switch SubscriptionTerms.evaluate(request, registry: registry) {
        case .accept(let t): terms = OMAWatcherNotifier.rateControlApplied(t)
        case .reject(let status, let reason, let headers):
            return refuseTerms(request, id: id, status, reason, headers, initial: true)
        }
        guard (try? request.headers.to) != nil, contacts[.enterprise] != nil else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 400, toTag: ids.tag()))]
        }
        // The presentity is the Request-URI (RFC 3856 §5: the SUBSCRIBE is routed by it, and the
        // router held it to the enterprise domains), never the To header, which the watcher
        // writes freely: only the address of record is kept, so no parameter of it
        // (`transport`, `maddr`) steers the gateway.
        guard configuration.admits(request.uri, on: .enterprise),
            let resource = WatcherIdentity.addressOfRecord(request.uri.description)
        else {
            return [
                .respond(
                    id,
                    SIPResponse(replyingTo: request, statusCode: 403, reasonPhrase: "Relaying Denied", toTag: ids.tag())
                )
            ]
        }
        if let answer = watchAsList(
            request, id: id, watcher: watcher, peer: peer, resource: resource, terms: terms, now: now)
        {
            return answer
        }
        let filter: OMAWatcherNotifier.WatcherFilter?
        do {
            filter = try OMAWatcherNotifier.watcherFilter(
                body: request.body, type: (try? request.headers.contentType)?.mediaType, resource: resource,
                terms: terms)
        } catch {
            return [
                .respond(
                    id,
                    SIPResponse(
                        replyingTo: request, statusCode: error.status, reasonPhrase: error.reason, toTag: ids.tag(),
                        headers: error.status == 415 ? [(.accept, OMAWatcherNotifier.simpleFilterType)] : []))
            ]
        }
        guard takeQuotas(watcher.uri, peer: peer) else { return overQuota(request, id: id) }
        let key = takeKey()
        var watch = OMAWatch(watcher: watcher, resource: resource, pending: (request, id, terms), peer: peer)
        if OMAWatcherNotifier.acceptsPartialPIDF(request, terms: terms) {
            watch.partial = OMAWatcherNotifier.PartialNotifications()
        }
        watch.filter = filter
        notifier.open(key, watch)
        return attach(key, now: now)
    }

    /// A SUBSCRIBE to `resource` as a resource list (RFC 4662): a list watch when `resource` is
    /// a list served, a request to come back (503) when it may be one whose rls-services document
    /// is still being fetched; nil when it is a single resource.
    private mutating func watchAsList(
        _ request: SIPRequest, id: ServerRequestID, watcher: WatcherIdentity, peer: DialogPeer?, resource: String,
        terms: SubscriptionTerms, now: NIODeadline
    ) -> [Action]? {
        if let members = configuration.resourceLists[resource] {
            return newListWatch(
                request, id: id, watcher: watcher, peer: peer, list: resource, members: members, terms: terms, now: now)
        }
        if configuration.awaitingResourceLists, (try? request.headers.supported)?.contains(Self.eventlist) == true {
            // The URI may be a list whose rls-services document is still being fetched.
            return [
                .respond(
                    id,
                    SIPResponse(
                        replyingTo: request, statusCode: 503, reasonPhrase: "Resource Lists Not Yet Known",
                        toTag: ids.tag(), headers: [(.retryAfter, "5")]))
            ]
        }
        return nil
    }

    /// Puts a watch's resource into an enterprise leg: the watcher's dialog with the resource's
    /// known pool, a new batch dialog, or a single subscription. The resource carries a `context`
    /// (the watcher joins its subscriber list, [MS-PRES] §3.6) when `subscriber-list` is on, the
    /// watcher is a person (not a linked identity's own watch) and `context` is not false.
    mutating func attach(_ key: Int, single forceSingle: Bool = false, context: Bool = true, now: NIODeadline)
        -> [Action]
    {
        // The watcher's own URI or nothing: a request into the enterprise never speaks for
        // another identity than the watcher's.
        guard let watch = notifier[key], let contact = contacts[.enterprise],
            let resourceURI = try? SIPURI(watch.resource), let watcherURI = try? SIPURI(watch.watcher.uri)
        else { return [] }
        // A filtered watcher's categories are its own: a single subscription carries them. A leg
        // serves one watch per resource: a second watch of the same watcher and resource
        // (another device, a stand-in) gets a leg of its own rather than take the first's.
        let consumer = EnterpriseLegPool.Consumer(
            key: key, watcher: watch.watcher.uri, watcherURI: watcherURI, resource: watch.resource,
            resourceURI: resourceURI, categories: watch.filter?.categories ?? Self.bridgedCategories,
            single: forceSingle || watch.filter != nil,
            context: context && configuration.enterprise.subscriberList && watch.linked == nil,
            network: watch.watcher.network,
            verified: watch.peer.map { $0.peer != nil || !$0.certificateNames.isEmpty } ?? false)
        let attached = legPool.attach(
            consumer, contact: contact, expires: configuration.subscriptions.defaultExpires, ids: &ids, now: now)
        notifier.modify(key) { $0.leg = attached.leg }
        return apply(attached.output) + enterpriseLegActions(attached.leg, attached.actions, now: now)
    }

    /// The enterprise state the leg of OMA watch `key` holds for its resource; nil while it has
    /// no leg or the leg no notification yet.
    func enterpriseState(of key: Int) -> CategoriesDocument? {
        guard let watch = notifier[key] else { return nil }
        return watch.leg.flatMap { legPool[$0]?.categories[watch.resource] }
    }

    /// The body an OMA watcher gets for the enterprise state, in its negotiated format.
    func render(_ categories: CategoriesDocument, as type: String) -> [UInt8] { settings.render(categories, as: type) }

    mutating func enterpriseLegResponse(_ key: Int, _ response: SIPResponse, now: NIODeadline) -> [Action] {
        let jitter = ids.jitter()
        let received = legPool.modify(key) { leg in
            let actions = leg.subscriber.receive(response, now: now, jitter: jitter)
            if (200..<300).contains(response.statusCode) { leg.established = true }
            return (actions, closing: leg.closing, ended: leg.subscriber.isTerminated)
        }
        guard let (actions, closing, ended) = received else { return [] }
        if closing {
            // RFC 6665 §4.1.2.3: the 2xx to the unsubscribe is followed by a final NOTIFY, which
            // must still find the dialog (and is answered 200); it releases the leg, or the
            // cleanup timer does (64·T1). A failure response ends the dialog at once.
            if response.statusCode >= 300 || ended { removeEnterpriseLeg(key) }
            return []
        }
        var out = enterpriseLegActions(key, actions, now: now, status: response.statusCode)
        if response.statusCode >= 300, let leg = legPool[key], let end = leg.subscriber.subscription.expiresAt {
            // A refresh failed (RFC 6665 §4.1.2.2): the subscription holds until it expires.
            out.append(.schedule(.expiry(.enterpriseLeg(key)), at: end))
        }
        return out
    }

    mutating func enterpriseLegNotify(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline)
        -> [Action]
    {
        let jitter = ids.jitter()
        let received = legPool.modify(key) { leg in
            (
                leg.subscriber.receive(notify: request, now: now, jitter: jitter), closing: leg.closing,
                ended: leg.subscriber.isTerminated
            )
        }
        guard let (actions, closing, ended) = received else {
            // A BENOTIFY takes no response ([MS-PRES] §3.4.5.1.4).
            return request.method == .benotify ? [] : [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
        if closing {
            var out: [Action] = []
            for case .subscription(.respond(let response)) in actions { out.append(.respond(id, response)) }
            if ended { removeEnterpriseLeg(key) }
            return out
        }
        return enterpriseLegActions(key, actions, now: now, notifyID: id)
    }

    /// Runs an enterprise leg's actions: sends, answers, timers; categories go to their watchers,
    /// rejections are followed up, an ended leg ends or moves its watchers.
    mutating func enterpriseLegActions(
        _ key: Int, _ actions: [BatchCategorySubscriber.Action], now: NIODeadline,
        status: Int? = nil, notifyID: ServerRequestID? = nil
    ) -> [Action] {
        var out: [Action] = []
        var ended: String?
        var delivered: Set<String> = []
        let unreadable = actions.contains { if case .unreadableBody = $0 { true } else { false } }
        for action in actions {
            switch action {
            case .subscription(.respond(var response)):
                if unreadable, (200..<300).contains(response.statusCode) {
                    // A body that does not parse is refused (RFC 3261 §21.4.1); nothing of it is relayed.
                    response.statusCode = 400
                    response.reasonPhrase = "Unreadable Body"
                }
                if let notifyID { out.append(.respond(notifyID, response)) }
            case .subscription(.ended(let reason)):
                ended = reason
            case .subscription(let other):
                out += legActions([other], context: .enterpriseLeg(key))
            case .resources(let events):
                for event in events {
                    switch event {
                    case .categories(let document):
                        guard let resource = resource(of: document, in: key) else { continue }
                        delivered.insert(resource)
                        out += categoriesArrived(document, resource: resource, leg: key, now: now)
                    case .rejected(let uri, let instance):
                        delivered.insert(uri)
                        out += rejected(uri, instance: instance, leg: key, now: now)
                    }
                }
            case .unreadableBody:
                break
            }
        }
        // RFC 6665 §4.1.2.2: a refresh found the subscription gone (481): made again in a new dialog.
        if ended == "481" { return out + restartEnterpriseLeg(key, now: now) }
        if let ended { return out + enterpriseLegEnded(key, reason: ended, status: status, now: now) }
        // A single subscription's 2xx without data: its watcher is answered with the empty view
        // (later notifications fill it in). A batch dialog's 2xx without data for a resource: the
        // watcher waits for a notification, at most the piggyback wait (then the same).
        if let status, (200..<300).contains(status), let leg = legPool[key] {
            for (resource, watch) in leg.watches.sorted(by: { $0.key < $1.key })
            where !delivered.contains(resource) && notifier[watch]?.pending != nil {
                if leg.single {
                    out += categoriesArrived(CategoriesDocument(uri: resource), resource: resource, leg: key, now: now)
                } else {
                    let wait = TimeAmount.milliseconds(Int64(configuration.subscriptions.piggybackWaitMilliseconds))
                    out.append(.schedule(.firstAnswer(.omaWatch(watch)), at: now + wait))
                }
            }
        }
        return out
    }

    /// The wait for a batch dialog's first data about an OMA watcher's resource ran out: the
    /// watcher is answered with what is known (nothing yet: the empty view, RFC 3856 §6.6.2, as
    /// for a single subscription's 2xx without data); later notifications update it.
    mutating func answerOMAWatchWithoutData(_ key: Int, now: NIODeadline) -> [Action] {
        guard let watch = notifier[key] else { return [] }
        if lists.isList(key) { return answerList(key, now: now) }
        guard watch.pending != nil, let legKey = watch.leg,
            let leg = legPool[legKey],
            leg.watches[watch.resource] == key
        else { return [] }
        let known = leg.categories[watch.resource] ?? CategoriesDocument(uri: watch.resource)
        return categoriesArrived(known, resource: watch.resource, leg: legKey, now: now)
    }

    /// The leg resource a categories document is about (its `uri`; a single leg's one resource
    /// when the URI is written differently). The leg's own string is returned, not the
    /// document's: the state kept for the resource then shares its storage with the watch's
    /// (one heap string per pair instead of two).
    private func resource(of document: CategoriesDocument, in key: Int) -> String? {
        guard let leg = legPool[key] else { return nil }
        if let match = leg.watches.firstKey(where: { $0 == document.uri }) { return match }
        if let normalized = WatcherIdentity.addressOfRecord(document.uri),
            let match = leg.watches.firstKey(where: { WatcherIdentity.addressOfRecord($0) == normalized })
        {
            return match
        }
        return leg.single ? leg.watches.firstKey { _ in true } : nil
    }

    /// New enterprise state for a resource: merged, then the watcher is answered (first time) or
    /// notified (when its rendered body changed).
    private mutating func categoriesArrived(
        _ document: CategoriesDocument, resource: String, leg key: Int, now: NIODeadline
    ) -> [Action] {
        guard let watchKey = legPool[key]?.watches[resource], let watch = notifier[watchKey],
            let state = legPool.modify(
                key,
                { leg in
                    var state = Self.merge(leg.categories[resource] ?? CategoriesDocument(uri: resource), document)
                    state.uri = resource
                    leg.categories[resource] = state
                    return state
                })
        else { return [] }
        if let link = watch.linked { return publishLinked(link, state, now: now) }
        if let registration = upnp.registration(ofWatch: watchKey) { return upnpContactCategories(registration, state) }
        if let owner = lists.owner(of: watchKey) { return listMemberChanged(owner, member: resource, now: now) }
        // A stand-in's subscription is made for the subscriber list, not for the state.
        if notifier.standsIn(watchKey) != nil { return [] }
        if let pending = watch.pending {
            return answer(watchKey, watch, pending, with: state, leg: key, now: now)
        }
        guard let terms = watch.subscription?.terms, !notifier.isHoldingChange(watchKey) else { return [] }
        // No trigger of the watcher's filter fired: the change is not notified.
        let (full, triggered) = notifier.filtered(watchKey, render(state, as: terms.bodyType))
        guard triggered, BodyDigest(full) != watch.lastSent else { return [] }
        if let held = notifier.holdsChange(watchKey, terms: terms, now: now) { return held }
        return notify(watchKey, full, now: now)
    }

    /// Sends OMA watch `key` the document `full` (filtered already) as its next notification
    /// (``OMAWatcherNotifier/notify(_:_:now:)``).
    mutating func notify(_ key: Int, _ full: [UInt8], now: NIODeadline) -> [Action] {
        apply(notifier.notify(key, full, now: now), context: .omaWatch(key), now: now)
    }

    /// Answers a waiting OMA watch with its first state (RFC 6665 §4.2.1), or refuses it 400 when
    /// its SUBSCRIBE cannot make a dialog; its resource then leaves the leg.
    private mutating func answer(
        _ watchKey: Int, _ waiting: OMAWatch, _ pending: OMAWatch.Pending, with state: CategoriesDocument, leg key: Int,
        now: NIODeadline
    ) -> [Action] {
        guard let (full, body, type) = notifier.firstBody(watchKey, render(state, as: pending.terms.bodyType)) else {
            return []
        }
        do {
            let (subscription, accepted) = try NotifierSubscription.accept(
                pending.request, terms: pending.terms, status: .active, localTag: ids.tag(),
                contact: contact(.oma, for: waiting.peer, fallback: pending.request.uri), body: body, bodyType: type,
                now: now)
            let opened = apply(notifier.answered(watchKey, subscription, full: full))
            return opened + apply(accepted, context: .omaWatch(watchKey), now: now, id: pending.id)
        } catch {
            forgetOMAWatch(watchKey)
            return [
                .respond(
                    pending.id,
                    SIPResponse(
                        replyingTo: pending.request, statusCode: 400, reasonPhrase: "\(error.code)", toTag: ids.tag()))
            ] + detachResource(waiting.resource, from: key, now: now)
        }
    }

    /// Ends an OMA watch: a waiting one is answered `status`, an active one gets a final NOTIFY
    /// with the reason mapped (RFC 6665 §4.2.2).
    mutating func endWatch(_ key: Int, reason: String, status: Int, retryAfter: UInt32?, now: NIODeadline) -> [Action] {
        guard let watch = notifier[key] else { return [] }
        if let link = watch.linked {
            forgetOMAWatch(key)
            return linkedSourceEnded(link, now: now)
        }
        if let registration = upnp.registration(ofWatch: key) {
            return upnpContactWatchEnded(registration, watch: key, reason: reason, now: now)
        }
        if let owner = lists.owner(of: key) {
            forgetOMAWatch(key)
            return listMemberEnded(owner, member: key, reason: Self.enterpriseReason(reason), now: now)
        }
        if notifier.standsIn(key) != nil {
            // Made again only when the OMA presence server lists the watcher anew.
            forgetOMAWatch(key)
            return []
        }
        if let pending = watch.pending {
            forgetOMAWatch(key)
            let headers: SIPHeaders = retryAfter.map { [(.retryAfter, String($0))] } ?? []
            return [
                .respond(
                    pending.id,
                    SIPResponse(replyingTo: pending.request, statusCode: status, toTag: ids.tag(), headers: headers))
            ]
        }
        if lists.isList(key) {
            return terminateList(key, reason: Self.enterpriseReason(reason), retryAfter: retryAfter, now: now)
        }
        let updates = notifier.terminate(key, reason: Self.enterpriseReason(reason), retryAfter: retryAfter, now: now)
        return apply(updates, context: .omaWatch(key), now: now)
    }

    /// A SUBSCRIBE in an OMA watcher's dialog: a list's refresh (`GatewayCore+ResourceLists`),
    /// or the notifier's (``OMAWatcherNotifier/refresh(_:_:id:state:_:now:)``), lent the
    /// enterprise state the watch's leg holds.
    mutating func refreshOMAWatch(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline) -> [Action]
    {
        if lists.isList(key), notifier[key]?.subscription != nil {
            return refreshListWatch(key, request, id: id, now: now)
        }
        let state = enterpriseState(of: key)
        return applyOMAWatch(notifier.refresh(key, request, id: id, state: state, settings, now: now), key, now: now)
    }

    /// The OMA watch is gone: its resource leaves its leg (an `unsubscribe` action in a batch
    /// dialog still serving others, else the leg is unsubscribed).
    mutating func detachOMAWatch(_ gone: RemovedOMAWatch, now: NIODeadline) -> [Action] {
        if let list = gone.list { return detachMembers(list.members, now: now) }
        guard let key = gone.watch.leg else { return [] }
        return detachResource(gone.watch.resource, from: key, now: now)
    }

    private mutating func detachResource(_ resource: String, from key: Int, now: NIODeadline) -> [Action] {
        switch legPool.detach([resource], from: key, now: now) {
        case nil: []
        case .removed(let actions): enterpriseLegActions(key, actions, now: now)
        case .ended(let output): apply(output)
        }
    }

    /// Unsubscribes an enterprise leg; it is forgotten on its final NOTIFY, or 64·T1 later.
    mutating func endEnterpriseLeg(_ key: Int, now: NIODeadline) -> [Action] { apply(legPool.end(key, now: now)) }

    /// Forgets an enterprise leg and its dialog.
    mutating func removeEnterpriseLeg(_ key: Int) { _ = apply(legPool.close(key)) }
}

extension GatewayCore {
    /// Whether the OMA watcher a NOTIFY of `context` goes to takes content indirection: its
    /// SUBSCRIBE listed `message/external-body` in Accept (RFC 4483 §5.1).
    public func acceptsIndirectContent(_ context: Context) -> Bool {
        guard case .omaWatch(let key) = context else { return false }
        return notifier[key]?.subscription?.terms.acceptsExternalBody == true
    }
}
