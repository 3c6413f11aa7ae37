import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// An OMA watcher's own subscription to an enterprise presentity (flow 2), from its SUBSCRIBE to
/// its end: the watch made from the request (its filter and partial notifications), answered
/// with the first state its leg brings (RFC 6665 §4.2.1), notified of each later change that
/// reaches it through its filter and rate control, ended with the reason mapped. The
/// coordinator admits the request, attaches the watch to a leg toward the enterprise and hands
/// each state the leg brings to the consumer it is for (`GatewayCore+OMAWatchers`); these are
/// the steps of a watcher's own watch, each returning a ``WatchStep``.
extension OMAWatcherNotifier {
    /// The watch of `watcher` for `resource` that `request` asks for, waiting to be answered: its
    /// event filter (RFC 4660), refused as its reading says, and partial notifications (RFC
    /// 5263) when it accepts them.
    static func watch(
        for request: SIPRequest, id: GatewayCore.ServerRequestID, watcher: WatcherIdentity, peer: DialogPeer?,
        resource: String, terms: SubscriptionTerms
    ) throws(FilterRefusal) -> GatewayCore.OMAWatch {
        let filter = try watcherFilter(
            body: request.body, type: (try? request.headers.contentType)?.mediaType, resource: resource, terms: terms)
        var watch = GatewayCore.OMAWatch(
            watcher: watcher, resource: resource, pending: (request, id, terms), peer: peer)
        if acceptsPartialPIDF(request, terms: terms) { watch.partial = PartialNotifications() }
        watch.filter = filter
        return watch
    }

    /// Watch `key` as a consumer of its enterprise resource (``EnterpriseLegPool/attach(_:contact:expires:ids:now:)``):
    /// on a subscription of its own when `single` or when its watcher's filter names the
    /// categories; joining the resource's subscriber list ([MS-PRES] §3.6) when `context` and the
    /// watcher is a person (not a linked identity's own watch). nil when its URIs do not read.
    func consumer(_ key: Int, single: Bool, context: Bool) -> EnterpriseLegPool.Consumer? {
        // The watcher's own URI or nothing: a request into the enterprise never speaks for
        // another identity than the watcher's.
        guard let watch = self[key], let resourceURI = try? SIPURI(watch.resource),
            let watcherURI = try? SIPURI(watch.watcher.uri)
        else { return nil }
        // A leg serves one watch per resource: a second watch of the same watcher and resource
        // (another device, a stand-in) gets a leg of its own rather than take the first's.
        return EnterpriseLegPool.Consumer(
            key: key, watcher: watch.watcher.uri, watcherURI: watcherURI, resource: watch.resource,
            resourceURI: resourceURI, categories: watch.filter?.categories ?? GatewayCore.bridgedCategories,
            single: single || watch.filter != nil, context: context && watch.linked == nil,
            network: watch.watcher.network,
            verified: watch.peer.map { $0.peer != nil || !$0.certificateNames.isEmpty } ?? false)
    }

    /// New enterprise state `state` for watch `key`, a watcher's own: a waiting watch is
    /// answered with it; an answered one is notified when what its filter selects changed and a
    /// trigger fired (RFC 4661 §3.6), unless its `max-rate` holds the change (RFC 6446).
    mutating func stateArrived(
        _ key: Int, _ state: CategoriesDocument, _ settings: CoreSettings, ids: inout IdentifierSource,
        now: NIODeadline
    ) -> WatchStep {
        guard let watch = self[key] else { return (ComponentOutput(), false) }
        if let pending = watch.pending {
            return answer(key, watch, pending, with: state, settings, ids: &ids, now: now)
        }
        guard let terms = watch.subscription?.terms, !isHoldingChange(key) else { return (ComponentOutput(), false) }
        let (full, triggered) = filtered(key, settings.render(state, as: terms.bodyType))
        guard triggered, BodyDigest(full) != watch.lastSent else { return (ComponentOutput(), false) }
        if let held = holdsChange(key, terms: terms, now: now) { return (ComponentOutput(actions: held), false) }
        return watchActions(notify(key, full, now: now), key, now: now)
    }

    /// Answers waiting watch `key` with its first state (RFC 6665 §4.2.1).
    private mutating func answer(
        _ key: Int, _ waiting: GatewayCore.OMAWatch, _ pending: GatewayCore.OMAWatch.Pending,
        with state: CategoriesDocument, _ settings: CoreSettings, ids: inout IdentifierSource, now: NIODeadline
    ) -> WatchStep {
        guard let (full, body, type) = firstBody(key, settings.render(state, as: pending.terms.bodyType)) else {
            return (ComponentOutput(), false)
        }
        return accept(
            key, pending, peer: waiting.peer, body: body, type: type, full: full, settings, ids: &ids, now: now)
    }

    /// Accepts the SUBSCRIBE of waiting watch `key` with the NOTIFY `body` of `type` (RFC 6665
    /// §4.2.1), noting `full` as what the watcher was sent; a list's answer (`full` nil) and
    /// NOTIFYs require `eventlist` (RFC 4662 §4.1), and its wait for its members ends. A
    /// SUBSCRIBE that cannot make a dialog is refused 400, and the watch removed.
    mutating func accept(
        _ key: Int, _ pending: GatewayCore.OMAWatch.Pending, peer: DialogPeer?, body: [UInt8], type: String?,
        full: [UInt8]?, _ settings: CoreSettings, ids: inout IdentifierSource, now: NIODeadline
    ) -> WatchStep {
        let list = full == nil
        do {
            let (subscription, accepted) = try NotifierSubscription.accept(
                pending.request, terms: pending.terms, status: .active, localTag: ids.tag(),
                contact: settings.contact(.oma, for: peer, fallback: pending.request.uri), body: body,
                bodyType: type, responseHeaders: list ? [(.require, GatewayCore.eventlist)] : [], now: now)
            var out = answer(key, subscription) { if let full { $0.lastSent = BodyDigest(full) } }
            if list { out.actions.append(.cancel(.firstAnswer(.omaWatch(key)))) }
            let taken = watchActions(list ? Self.requiringEventlist(accepted) : accepted, key, now: now, id: pending.id)
            out.add(taken.output)
            return (out, taken.removed)
        } catch {
            let refusal = SIPResponse(
                replyingTo: pending.request, statusCode: 400, reasonPhrase: "\(error.code)", toTag: ids.tag())
            return (ComponentOutput(actions: [.respond(pending.id, refusal)]), true)
        }
    }

    /// Ends watch `key`, a watcher's own, for `reason` from the enterprise side: a waiting one is
    /// answered `status` (with `retryAfter`), an answered one gets a final NOTIFY with the reason
    /// mapped (RFC 6665 §4.2.2).
    mutating func end(
        _ key: Int, reason: String, status: Int, retryAfter: UInt32?, ids: inout IdentifierSource, now: NIODeadline
    ) -> WatchStep {
        guard let watch = self[key] else { return (ComponentOutput(), false) }
        if let pending = watch.pending {
            let headers: SIPHeaders = retryAfter.map { [(.retryAfter, String($0))] } ?? []
            let refusal = SIPResponse(
                replyingTo: pending.request, statusCode: status, toTag: ids.tag(), headers: headers)
            return (ComponentOutput(actions: [.respond(pending.id, refusal)]), true)
        }
        let terminated = terminate(
            key, reason: GatewayCore.enterpriseReason(reason), retryAfter: retryAfter, now: now)
        return watchActions(terminated, key, now: now)
    }
}
