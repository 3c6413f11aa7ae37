import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack
import XMLBridge
import _GatewayInternals

/// Flows 2 and 3, the coordinator's part: OMA watchers of enterprise presentities, served by
/// the notifier (``OMAWatcherNotifier``) from the legs of the leg pool (``EnterpriseLegPool``).
///
/// Here a new watch's SUBSCRIBE is read and refused or admitted (its quotas taken), a list's
/// sent to the list steps (`GatewayCore+ResourceLists`); an admitted watch is attached to a leg
/// as one of its consumers ([MS-PRES] §3.4.5.1: the gateway groups the enterprise resources of
/// one OMA watcher into batched category dialogs, From = To = the watcher). What a leg's dialog
/// reports (``EnterpriseLegPool/Report``) is handed to each resource's consumer in order: a
/// watcher's own watch answered or notified by the notifier
/// (``OMAWatcherNotifier/stateArrived(_:_:_:ids:now:)``), a list member's state sent in its
/// list, a linked identity's published (flow 4), a UPnP registration's evented (flow 5); the
/// enterprise's rejections are followed in `GatewayCore+PoolRedirects` (flow 3). A watch that
/// ends leaves its leg, which is unsubscribed when it served no one else.
extension GatewayCore {
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
        let watch: OMAWatch
        do {
            watch = try OMAWatcherNotifier.watch(
                for: request, id: id, watcher: watcher, peer: peer, resource: resource, terms: terms)
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
        guard let contact = contacts[.enterprise],
            let consumer = notifier.consumer(
                key, single: forceSingle, context: context && configuration.enterprise.subscriberList)
        else { return [] }
        let attached = legPool.attach(
            consumer, contact: contact, expires: configuration.subscriptions.defaultExpires, ids: &ids, now: now)
        notifier.modify(key) { $0.leg = attached.leg }
        return apply(attached.output) + enterpriseLegActions(attached.leg, attached.actions, now: now)
    }

    /// The enterprise state the leg of OMA watch `key` holds for its resource; nil while it has
    /// no leg or the leg no notification yet.
    func enterpriseState(of key: Int) -> CategoriesDocument? { notifier.enterpriseState(of: key, in: legPool) }

    /// The final response to a SUBSCRIBE of enterprise leg `key`
    /// (``EnterpriseLegPool/response(_:_:jitter:now:)``), its report handed to the consumers.
    mutating func enterpriseLegResponse(_ key: Int, _ response: SIPResponse, now: NIODeadline) -> [Action] {
        guard let report = legPool.response(key, response, jitter: ids.jitter(), now: now) else { return [] }
        var out = consume(report, leg: key, now: now)
        if response.statusCode >= 300, let leg = legPool[key], let end = leg.subscriber.subscription.expiresAt {
            // A refresh failed (RFC 6665 §4.1.2.2): the subscription holds until it expires.
            out.append(.schedule(.expiry(.enterpriseLeg(key)), at: end))
        }
        return out
    }

    /// A NOTIFY or BENOTIFY in enterprise leg `key` (``EnterpriseLegPool/notify(_:_:id:jitter:now:)``),
    /// its report handed to the consumers.
    mutating func enterpriseLegNotify(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline)
        -> [Action]
    {
        guard let report = legPool.notify(key, request, id: id, jitter: ids.jitter(), now: now) else {
            // A BENOTIFY takes no response ([MS-PRES] §3.4.5.1.4).
            return request.method == .benotify ? [] : [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
        return consume(report, leg: key, now: now)
    }

    /// What a leg's subscriber did on a step of the gateway's own (an attach, a detach, a refresh).
    mutating func enterpriseLegActions(_ key: Int, _ actions: [BatchCategorySubscriber.Action], now: NIODeadline)
        -> [Action]
    {
        consume(legPool.take(key, actions), leg: key, now: now)
    }

    /// What enterprise leg `key` reported, handed to its consumers in order: each state to the
    /// watch it is for, each rejection followed up (`GatewayCore+PoolRedirects`); an ended leg
    /// ends or moves its watchers. A single subscription's 2xx without data: its watcher is
    /// answered with the empty view (later notifications fill it in). A batch dialog's 2xx
    /// without data for a resource: the watcher waits for a notification, at most the piggyback
    /// wait (then the same).
    private mutating func consume(_ report: EnterpriseLegPool.Report, leg key: Int, now: NIODeadline) -> [Action] {
        var out = apply(report.output)
        for event in report.events {
            switch event {
            case .categories(let document):
                guard let (consumer, state) = legPool.merge(document, into: key) else { continue }
                out += stateArrived(state, consumer: consumer, now: now)
            case .rejected(let uri, let instance):
                out += rejected(uri, instance: instance, leg: key, now: now)
            }
        }
        // RFC 6665 §4.1.2.2: a refresh found the subscription gone (481): made again in a new dialog.
        if report.ended == "481" { return out + restartEnterpriseLeg(key, now: now) }
        if let ended = report.ended {
            return out + enterpriseLegEnded(key, reason: ended, status: report.status, now: now)
        }
        for (resource, consumer) in report.undelivered
        where legPool[key]?.watches[resource] == consumer && notifier[consumer]?.pending != nil {
            if legPool[key]?.single == true {
                out += firstState(of: resource, leg: key, now: now)
            } else {
                let wait = TimeAmount.milliseconds(Int64(configuration.subscriptions.piggybackWaitMilliseconds))
                out.append(.schedule(.firstAnswer(.omaWatch(consumer)), at: now + wait))
            }
        }
        return out
    }

    /// The wait for a batch dialog's first data about an OMA watcher's resource ran out: the
    /// watcher is answered with what is known (nothing yet: the empty view, RFC 3856 §6.6.2, as
    /// for a single subscription's 2xx without data); later notifications update it.
    mutating func answerOMAWatchWithoutData(_ key: Int, now: NIODeadline) -> [Action] {
        guard let watch = notifier[key] else { return [] }
        if lists.isList(key) {
            return applyOMAWatch(notifier.answerList(key, legPool, settings, ids: &ids, now: now), key, now: now)
        }
        guard watch.pending != nil, let legKey = watch.leg, legPool[legKey]?.watches[watch.resource] == key else {
            return []
        }
        return firstState(of: watch.resource, leg: legKey, now: now)
    }

    /// What leg `key` knows of `resource` (nothing yet: the empty view), handed to its consumer.
    private mutating func firstState(of resource: String, leg key: Int, now: NIODeadline) -> [Action] {
        guard let (consumer, state) = legPool.merge(CategoriesDocument(uri: resource), into: key) else { return [] }
        return stateArrived(state, consumer: consumer, now: now)
    }

    /// Whom an OMA watch serves, which decides where what its leg brings goes (the pool's
    /// consumers, in the shape of `pua_api_t`'s per-consumer handlers).
    private enum Consumer {
        /// A linked identity's source (flow 4): its state is published to the OMA side.
        case linked(Int)
        /// A UPnP registration's watch (flow 5): its state is evented to the control point.
        case registration(Int)
        /// A member of the list watch it names: its state is sent in the list.
        case member(of: Int)
        /// A stand-in for a watcher at the OMA presence server: made for the subscriber list
        /// ([MS-PRES] §3.6), not for the state.
        case standIn
        /// A watcher's own watch (or a list's): the notifier's.
        case watcher
    }

    private func consumer(_ key: Int, _ watch: OMAWatch) -> Consumer {
        if let link = watch.linked { return .linked(link) }
        if let registration = upnp.registration(ofWatch: key) { return .registration(registration) }
        if let owner = lists.owner(of: key) { return .member(of: owner) }
        return notifier.standsIn(key) != nil ? .standIn : .watcher
    }

    /// New enterprise state for OMA watch `key`, handed to whom it serves.
    private mutating func stateArrived(_ state: CategoriesDocument, consumer key: Int, now: NIODeadline) -> [Action] {
        guard let watch = notifier[key] else { return [] }
        switch consumer(key, watch) {
        case .linked(let link): return publishLinked(link, state, now: now)
        case .registration(let registration): return upnpContactCategories(registration, state)
        case .member(let owner):
            let changed = notifier.listMemberChanged(owner, member: state.uri, legPool, settings, ids: &ids, now: now)
            return applyOMAWatch(changed, owner, now: now)
        case .standIn: return []
        case .watcher:
            return applyOMAWatch(notifier.stateArrived(key, state, settings, ids: &ids, now: now), key, now: now)
        }
    }

    /// Ends OMA watch `key` for `reason` from the enterprise side, as whom it serves takes it: a
    /// waiting watcher is answered `status`, an active one gets a final NOTIFY with the reason
    /// mapped (RFC 6665 §4.2.2); a list member stays listed, terminated; a stand-in is made again
    /// only when the OMA presence server lists the watcher anew.
    mutating func endWatch(_ key: Int, reason: String, status: Int, retryAfter: UInt32?, now: NIODeadline) -> [Action] {
        guard let watch = notifier[key] else { return [] }
        switch consumer(key, watch) {
        case .linked(let link):
            forgetOMAWatch(key)
            return linkedSourceEnded(link, now: now)
        case .registration(let registration):
            return upnpContactWatchEnded(registration, watch: key, reason: reason, now: now)
        case .member(let owner):
            forgetOMAWatch(key)
            let ended = notifier.listMemberEnded(
                owner, member: key, reason: Self.enterpriseReason(reason), legPool, settings, ids: &ids, now: now)
            return applyOMAWatch(ended, owner, now: now)
        case .standIn:
            forgetOMAWatch(key)
            return []
        case .watcher:
            if lists.isList(key), watch.pending == nil {
                return terminateList(key, reason: Self.enterpriseReason(reason), retryAfter: retryAfter, now: now)
            }
            let ended = notifier.end(key, reason: reason, status: status, retryAfter: retryAfter, ids: &ids, now: now)
            return applyOMAWatch(ended, key, now: now)
        }
    }

    /// A SUBSCRIBE in an OMA watcher's dialog: a list's refresh (`GatewayCore+ResourceLists`),
    /// or the notifier's (``OMAWatcherNotifier/refresh(_:_:id:state:_:now:)``), lent the
    /// enterprise state the watch's leg holds.
    mutating func refreshOMAWatch(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline) -> [Action]
    {
        if lists.isList(key), notifier[key]?.subscription != nil {
            let refreshed = notifier.refreshList(key, request, id: id, legPool, settings, ids: &ids, now: now)
            return applyOMAWatch(refreshed, key, now: now)
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
