import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// Flow 1 for enterprise clients that subscribe without a category list: the PIDF SUBSCRIBE of
/// [MS-PRES] §4.10 (`Accept: application/pidf+xml`) and the msrtc.pidf one of §4.11
/// (`Accept: text/xml+msrtc.pidf`). [MS-PRES] §1.3.3 orders the formats: categories, then
/// msrtc.pidf, then PIDF; ``SubscriptionTerms/evaluate(_:registry:negotiated:)`` picks the first
/// the Accept header allows and keeps it for refreshes.
///
/// Such a subscription watches its Request-URI through one OMA leg (admitted and started by the
/// coordinator, `GatewayCore+EnterpriseDocumentWatchers`). The bridge builds the watcher's view
/// as categories (containers, polite block, `pending`:
/// ``view(of:leg:watcher:categories:_:)``) and renders it with the same renderer as flow 2
/// (``CoreSettings/render(_:as:)``), so a politely blocked watcher gets, in every format, the
/// bytes a watcher of a never-published presentity gets. The dialog is a plain
/// ``NotifierSubscription`` (RFC 6665 §4.2): pending while the OMA side is (RFC 6665 §4.2.1.3),
/// notified only when the rendered body changed, ended with the OMA reason mapped (§4.2.2).
extension EnterpriseWatcherBridge {
    /// The body of a document watcher's view of `resource` in `type`.
    func documentBody(
        _ resource: String, leg: GatewayCore.OMALeg?, watcher: WatcherIdentity, as type: String,
        _ views: EnterpriseViews
    ) -> [UInt8] {
        let view = view(of: resource, leg: leg, watcher: watcher, categories: GatewayCore.bridgedCategories, views)
        return views.settings.render(view, as: type)
    }

    /// Answers a waiting document watcher: 200 and a NOTIFY (RFC 6665 §4.2.1.2) with what is
    /// known; `pending` without a body when the OMA side or the policy (`confirm`) waits for
    /// authorization (§4.2.1.3).
    mutating func answerDocument(_ key: Int, _ views: EnterpriseViews, ids: inout IdentifierSource, now: NIODeadline)
        -> ComponentOutput
    {
        guard let watch = self[watch: key], let pending = watch.pending, let resource = watch.documentResource
        else { return ComponentOutput() }
        let leg = watch.legs[resource].flatMap { self[leg: $0] }
        let waiting =
            policy(for: resource, views).subHandling(for: watch.watcher) == .confirm
            || (leg.map(GatewayCore.reflectsPending) ?? false)
        let body =
            waiting
            ? nil : documentBody(resource, leg: leg, watcher: watch.watcher, as: pending.terms.bodyType, views)
        var out = ComponentOutput(actions: [.cancel(.firstAnswer(.enterpriseWatch(key)))])
        do {
            let (subscription, actions) = try NotifierSubscription.accept(
                pending.request, terms: pending.terms, status: waiting ? .pending : .active, localTag: ids.tag(),
                contact: views.settings.contact(.enterprise, for: watch.peer, fallback: pending.request.uri),
                body: body, now: now)
            out.add(
                answerWatch(key) {
                    $0.pending = nil
                    $0.document = subscription
                    if let body { $0.lastSent[resource] = BodyDigest(body) }
                })
            // A fetch (Expires 0) ends at once: `.remove` releases the dialog and the OMA leg.
            out.add(watchActions(actions, key, now: now, id: pending.id))
        } catch {
            out.add(unanswerable(key, pending.request, id: pending.id, reason: "\(error.code)", ids: &ids, now: now))
        }
        return out
    }

    /// A NOTIFY on the OMA leg of a document watcher: answered once all legs reported while it
    /// waits; activated when the leg left `pending`; notified when the rendered body changed.
    /// While the leg is pending again, notifications stop (RFC 6665 has no active → pending
    /// transition for the notifier).
    mutating func documentLegChanged(
        _ key: Int, leg: GatewayCore.OMALeg, changed: Bool, _ views: EnterpriseViews, ids: inout IdentifierSource,
        now: NIODeadline
    ) -> ComponentOutput {
        guard let watch = self[watch: key], let resource = watch.documentResource else { return ComponentOutput() }
        guard let subscription = watch.document else {
            guard watch.pending != nil, allLegsReported(watch) else { return ComponentOutput() }
            return answerDocument(key, views, ids: &ids, now: now)
        }
        guard changed else { return ComponentOutput() }
        if GatewayCore.reflectsPending(leg) {
            modifyWatch(key) { $0.lastSent[resource] = nil }
            return ComponentOutput()
        }
        let body = documentBody(resource, leg: leg, watcher: watch.watcher, as: subscription.terms.bodyType, views)
        let digest = BodyDigest(body)
        let activate = subscription.status == .pending
        guard activate || watch.lastSent[resource] != digest else { return ComponentOutput() }
        let updates = modifyWatch(key) { watch -> [NotifierSubscription.Action] in
            watch.lastSent[resource] = digest
            if activate { return watch.document?.activate(body: body, now: now) ?? [] }
            return watch.document?.stateChanged(body: body, now: now) ?? []
        }
        return watchActions(updates ?? [], key, now: now)
    }

    /// The OMA leg of a document watcher ended: a waiting watcher is refused with the OMA
    /// status (403, 404, 480 or 489; otherwise 503), an answered one gets the final NOTIFY with
    /// the reason mapped (RFC 6665 §4.2.2).
    mutating func endDocument(
        _ key: Int, reason: String, statusCode: Int?, ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        guard let watch = self[watch: key] else { return ComponentOutput() }
        if let pending = watch.pending {
            var out = closeWatch(key).output
            let code = statusCode.map { [403, 404, 480, 489].contains($0) ? $0 : 503 } ?? 503
            out.actions += [
                .cancel(.firstAnswer(.enterpriseWatch(key))),
                .respond(pending.id, SIPResponse(replyingTo: pending.request, statusCode: code, toTag: ids.tag())),
            ]
            return out
        }
        guard watch.document != nil else { return ComponentOutput() }
        let updates = modifyWatch(key) {
            $0.document?.terminate(reason: GatewayCore.enterpriseReason(reason), now: now) ?? []
        }
        return watchActions(updates ?? [], key, now: now)
    }

    /// A SUBSCRIBE in a document watcher's dialog: a refresh (200 and a NOTIFY with the current
    /// view, RFC 6665 §4.2.1.2, in the format negotiated first unless the new Accept excludes
    /// it) or an unsubscribe (Expires 0: the final NOTIFY, then the OMA leg is unsubscribed).
    /// Terms it cannot take are refused in the dialog (RFC 6665 §4.2.1.1).
    mutating func refreshDocument(
        _ key: Int, _ request: SIPRequest, id: GatewayCore.ServerRequestID, _ views: EnterpriseViews, now: NIODeadline
    ) -> ComponentOutput {
        guard let watch = self[watch: key], let subscription = watch.document, let resource = watch.documentResource
        else {
            return ComponentOutput(actions: [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))])
        }
        let registry = views.settings.registry
        switch SubscriptionTerms.evaluate(request, registry: registry, negotiated: subscription.terms.bodyType) {
        case .reject(let status, let reason, let headers):
            let refusal = SIPResponse(
                replyingTo: request, statusCode: status, reasonPhrase: reason, headers: headers)
            return ComponentOutput(actions: [.respond(id, refusal)])
        case .accept(let terms):
            var body: [UInt8]?
            if subscription.status != .pending {
                let leg = watch.legs[resource].flatMap { self[leg: $0] }
                body = documentBody(resource, leg: leg, watcher: watch.watcher, as: terms.bodyType, views)
            }
            let actions = modifyWatch(key) { watch in
                if let body { watch.lastSent[resource] = BodyDigest(body) }
                return watch.document?.refresh(request, terms: terms, body: body, now: now) ?? []
            }
            return watchActions(actions ?? [], key, now: now, id: id)
        }
    }

    /// Document watchers of a resource the gateway serves itself (flow 4): notified when their
    /// view of the composed state changed.
    mutating func servedDocumentChanged(_ resource: String, _ views: EnterpriseViews, now: NIODeadline)
        -> ComponentOutput
    {
        var out = ComponentOutput()
        for key in watchKeys.sorted() {
            guard let watch = self[watch: key], watch.documentResource == resource,
                let subscription = watch.document, subscription.status == .active
            else { continue }
            let body = documentBody(resource, leg: nil, watcher: watch.watcher, as: subscription.terms.bodyType, views)
            let digest = BodyDigest(body)
            guard watch.lastSent[resource] != digest else { continue }
            let updates = modifyWatch(key) { watch in
                watch.lastSent[resource] = digest
                return watch.document?.stateChanged(body: body, now: now) ?? []
            }
            out.add(watchActions(updates ?? [], key, now: now))
        }
        return out
    }
}
