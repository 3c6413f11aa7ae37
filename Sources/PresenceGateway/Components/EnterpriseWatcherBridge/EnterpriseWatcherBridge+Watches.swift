import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack
import _GatewayInternals

/// An enterprise watcher's category dialog ([MS-PRES] §3.4.5.1) through its life, as the
/// bridge's steps: answered, refreshed with a new batch, shown a changed view, a resource gone
/// pending or active, decided by its owner, or lost. Each works out the watcher's view with what
/// it is lent (``EnterpriseViews``) and returns what the coordinator applies: the messages and
/// timers, and the dialogs opened or closed with the quotas their entries held
/// (``ComponentOutput``). Admission (the quotas a new leg takes) and the legs' start stay the
/// coordinator's (`GatewayCore+EnterpriseWatchers`).
extension EnterpriseWatcherBridge {
    /// What watch `key`'s dialog does (its ``BatchCategorySubscription``'s or its document
    /// dialog's actions), as the core's: answers to `id`, NOTIFYs toward the enterprise, its
    /// expiry timer; a removed dialog takes the watch with it and unsubscribes its legs.
    mutating func watchActions(
        _ actions: [NotifierSubscription.Action], _ key: Int, now: NIODeadline, id: GatewayCore.ServerRequestID? = nil
    ) -> ComponentOutput {
        let (taken, removed) = GatewayCore.notifierActions(
            actions, context: .enterpriseWatch(key), to: .enterprise, id: id)
        var out = ComponentOutput(actions: taken)
        guard removed else { return out }
        let (watch, closed) = closeWatch(key)
        out.add(closed)
        if let watch { out.add(endLegs(watch.legs.values, now: now)) }
        return out
    }

    /// Answers waiting watch `key` (a category watch: its 200 with the first state of each
    /// resource, [MS-PRES] §3.4.5.1.2; a PIDF or msrtc.pidf one: ``answerDocument(_:_:ids:now:)``),
    /// or 400 when its SUBSCRIBE cannot make a dialog. A poll (Expires 0)
    /// is answered and ends, its legs with it: they were one-shot fetches of state.
    mutating func answer(_ key: Int, _ views: EnterpriseViews, ids: inout IdentifierSource, now: NIODeadline)
        -> ComponentOutput
    {
        if self[watch: key]?.documentResource != nil { return answerDocument(key, views, ids: &ids, now: now) }
        guard let watch = self[watch: key], let pending = watch.pending else { return ComponentOutput() }
        // A single subscription to a resource waiting for authorization (the OMA side's, or the
        // owner's `confirm`) is itself pending (RFC 6665 §4.2.1.3).
        let requested = pending.batch.actions.filter { $0.kind == .subscribe }.flatMap(\.resources)
        let singlePending =
            watch.single && !requested.isEmpty
            && requested.allSatisfy { awaitsAuthorization($0.uri, in: watch, views) }
        var sent: SmallMap<String, BodyDigest> = [:]
        var out = ComponentOutput()
        do {
            let (subscription, actions) = try BatchCategorySubscription.accept(
                pending.request, batch: pending.batch, terms: pending.terms, localTag: ids.tag(),
                contact: views.settings.contact(.enterprise, for: watch.peer, fallback: pending.request.uri),
                boundary: ids.boundary(), now: now, status: singlePending ? .pending : .active,
                watcher: watch.watcher.uri
            ) { uri, categories in
                let (resolution, digest) = resolution(of: uri, categories: categories, in: watch, views)
                if let digest { sent[uri] = digest }
                return resolution
            }
            out.actions = [.cancel(.firstAnswer(.enterpriseWatch(key)))]
            if let subscription {
                out.add(
                    answerWatch(key) {
                        $0.pending = nil
                        $0.lastSent = sent
                        $0.subscription = subscription
                    })
                out.add(watchActions(actions, key, now: now, id: pending.id))
                return out
            }
            out.add(closeWatch(key).output)
            out.add(watchActions(actions, key, now: now, id: pending.id))
            out.add(endLegs(watch.legs.values, now: now))
        } catch {
            out.add(unanswerable(key, pending.request, id: pending.id, reason: "\(error.code)", ids: &ids, now: now))
        }
        return out
    }

    /// Waiting watch `key` cannot be answered (its SUBSCRIBE makes no dialog, RFC 6665
    /// §4.2.1.1): refused 400 with `reason`; the watch ends, its legs with it.
    mutating func unanswerable(
        _ key: Int, _ request: SIPRequest, id: GatewayCore.ServerRequestID, reason: String,
        ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        let (watch, closed) = closeWatch(key)
        var out = closed
        let refusal = SIPResponse(replyingTo: request, statusCode: 400, reasonPhrase: reason, toTag: ids.tag())
        out.actions.append(.respond(id, refusal))
        if let watch { out.add(endLegs(watch.legs.values, now: now)) }
        return out
    }

    /// Takes the actions of a refresh's batch in order: each resource it unsubscribes loses its
    /// OMA leg and what was remembered of it; the resources it subscribes to and does not
    /// unsubscribe after are returned, for their legs to be added.
    mutating func takeBatch(_ batch: BatchSubscribe, watch key: Int, now: NIODeadline)
        -> (output: ComponentOutput, added: [String])
    {
        var out = ComponentOutput()
        var added: [String] = []
        for action in batch.actions {
            for resource in action.resources {
                switch action.kind {
                case .subscribe:
                    added.append(resource.uri)
                case .unsubscribe:
                    added.removeAll { $0 == resource.uri }
                    let leg = modifyWatch(key) { watch -> Int? in
                        let leg = watch.legs[resource.uri]
                        watch.forget(resource.uri)
                        watch.refused.remove(resource.uri)
                        watch.awaiting.remove(resource.uri)
                        return leg
                    }
                    if let leg = leg ?? nil { out.add(endLegs([leg], now: now)) }
                }
            }
        }
        return (out, added)
    }

    /// A refresh of category watch `key` with `batch` and `terms` taken (RFC 6665 §4.2.1.2,
    /// [MS-PRES] §3.4.5.1.2), after its new resources' legs were added: answered to `id` with
    /// the state of each resource it now names.
    mutating func refresh(
        _ key: Int, _ request: SIPRequest, batch: BatchSubscribe, terms: SubscriptionTerms,
        id: GatewayCore.ServerRequestID,
        _ views: EnterpriseViews, ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        guard let current = self[watch: key], var subscription = current.subscription else { return ComponentOutput() }
        var sent: SmallMap<String, BodyDigest> = [:]
        let updates = subscription.update(request, batch: batch, terms: terms, boundary: ids.boundary(), now: now) {
            uri, categories in
            let (resolution, digest) = resolution(of: uri, categories: categories, in: current, views)
            if let digest { sent[uri] = digest }
            return resolution
        }
        modifyWatch(key) {
            for (uri, digest) in sent { $0.lastSent[uri] = digest }
            $0.subscription = subscription
        }
        return watchActions(updates, key, now: now, id: id)
    }

    /// What the batch dialog of watch `key` sends when the body rendered for it of `resource`
    /// (whose OMA leg is `leg`, nil for one the gateway serves itself) may have changed: nothing
    /// when the dialog does not carry it or the body is the one sent last.
    mutating func viewChanged(
        of resource: String, leg: GatewayCore.OMALeg?, watch key: Int, _ views: EnterpriseViews, now: NIODeadline
    ) -> ComponentOutput {
        guard let watch = self[watch: key], let categories = watch.subscription?.resources[resource] else {
            return ComponentOutput()
        }
        let body = view(of: resource, leg: leg, watcher: watch.watcher, categories: categories, views).serialized()
        guard watch.lastSent[resource] != BodyDigest(body) else { return ComponentOutput() }
        return watchActions(modifyWatch(key) { $0.show(body, of: resource, now: now) } ?? [], key, now: now)
    }

    /// An OMA leg went pending → active (its first authorized NOTIFY) or active → pending: the
    /// enterprise watcher learns it. A batch dialog gets an RLMI notification listing the resource
    /// `active` with its categories, or `pending` without; a single one is activated (RFC 6665
    /// §4.2.1.3: a NOTIFY with the state). An active single dialog does not go back to pending
    /// (RFC 6665 has no active → pending transition for the notifier): its notifications stop
    /// until the OMA side is active again, then carry the state as usual.
    mutating func pendingChanged(
        _ leg: GatewayCore.OMALeg, _ views: EnterpriseViews, ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        guard let watch = self[watch: leg.watch], let categories = watch.subscription?.resources[leg.resource] else {
            return ComponentOutput()
        }
        let boundary = watch.single ? "" : ids.boundary()
        let updates: [NotifierSubscription.Action]?
        if leg.pending {
            updates = modifyWatch(leg.watch) { $0.showPending(leg.resource, boundary: boundary, now: now) }
        } else {
            let view = view(of: leg.resource, leg: leg, watcher: watch.watcher, categories: categories, views)
            updates = modifyWatch(leg.watch) { $0.showActive(leg.resource, view, boundary: boundary, now: now) }
        }
        return watchActions(updates ?? [], leg.watch, now: now)
    }

    /// Takes a resource its owner now blocks out of watch `key`: listed
    /// `terminated;reason=rejected` in a batch; a single or document dialog, which has no other
    /// resource, ends so.
    mutating func refuseAwaiting(_ uri: String, watch key: Int, ids: inout IdentifierSource, now: NIODeadline)
        -> ComponentOutput
    {
        guard let watch = self[watch: key] else { return ComponentOutput() }
        let boundary = watch.document == nil && !watch.single ? ids.boundary() : ""
        let updates = modifyWatch(key) { watch in
            guard watch.document == nil else { return watch.terminate(reason: "rejected", now: now) }
            return watch.remove(uri, reason: "rejected", statusCode: 403, boundary: boundary, now: now)
        }
        return watchActions(updates ?? [], key, now: now)
    }

    /// The batch dialog of answered watch `key` loses `resource` (its OMA subscription ended with
    /// `reason`, RFC 6665 §4.2.2): an RLMI notification lists it `terminated`.
    mutating func resourceRemoved(
        _ resource: String, watch key: Int, reason: String, statusCode: Int?, ids: inout IdentifierSource,
        now: NIODeadline
    ) -> ComponentOutput {
        guard let watch = self[watch: key] else { return ComponentOutput() }
        let reason = GatewayCore.enterpriseReason(reason)
        let boundary = watch.single ? "" : ids.boundary()
        let updates = modifyWatch(key) {
            $0.remove(resource, reason: reason, statusCode: statusCode, boundary: boundary, now: now)
        }
        return watchActions(updates ?? [], key, now: now)
    }

    /// Activates a resource of watch `key` that waited for its owner, with the watcher's view of
    /// it now.
    mutating func activateAwaiting(
        _ uri: String, watch key: Int, _ views: EnterpriseViews, ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        guard let watch = self[watch: key] else { return ComponentOutput() }
        let leg = watch.legs[uri].flatMap { self[leg: $0] }
        let updates: [NotifierSubscription.Action]??
        if let document = watch.document {
            let body = documentBody(uri, leg: leg, watcher: watch.watcher, as: document.terms.bodyType, views)
            updates = modifyWatch(key) {
                $0.lastSent[uri] = BodyDigest(body)
                return $0.document?.activate(body: body, now: now)
            }
        } else if let categories = watch.subscription?.resources[uri] {
            let view = view(of: uri, leg: leg, watcher: watch.watcher, categories: categories, views)
            let boundary = watch.single ? "" : ids.boundary()
            updates = modifyWatch(key) { $0.showActive(uri, view, boundary: boundary, now: now) }
        } else {
            return ComponentOutput()
        }
        return watchActions((updates ?? nil) ?? [], key, now: now)
    }
}
