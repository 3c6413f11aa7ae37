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
/// Such a subscription watches its Request-URI. The gateway keeps one OMA leg for it (as for a
/// category SUBSCRIBE), builds the watcher's view as categories (containers, polite block,
/// `pending`: ``EnterpriseWatcherBridge/view(of:leg:watcher:categories:_:)``) and renders it with the same renderer as
/// flow 2 (``render(_:as:)``), so a politely blocked watcher gets, in every format, the bytes
/// a watcher of a never-published presentity gets. The dialog is a plain ``NotifierSubscription``
/// (RFC 6665 §4.2): pending while the OMA side is (RFC 6665 §4.2.1.3), notified only when the
/// rendered body changed, ended with the OMA reason mapped (§4.2.2).
extension GatewayCore {
    /// A new PIDF or msrtc.pidf SUBSCRIBE from an enterprise watcher. A blocked watcher is
    /// refused 403 (RFC 5025 §3.2.1 `block`); otherwise the OMA leg starts and the watcher is
    /// answered once it reported, or after the configured piggyback wait.
    mutating func newDocumentWatch(
        _ request: SIPRequest, id: ServerRequestID, watcher: WatcherIdentity,
        terms: SubscriptionTerms, peer: DialogPeer?, now: NIODeadline
    ) -> [Action] {
        let resource = WatcherIdentity.addressOfRecord(request.uri.description) ?? request.uri.description
        if policy(for: resource).subHandling(for: watcher) == .block {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 403, toTag: ids.tag()))]
        }
        guard takePeerQuota(peer) else { return overQuota(request, id: id) }
        let key = takeKey()
        var new = EnterpriseWatch(watcher: watcher, pending: (request, id, BatchSubscribe(), terms), peer: peer)
        new.single = true
        new.documentResource = resource
        bridge.openWatch(key, new)
        let actions = addOMALeg(watch: key, resource: resource, request: request)
        guard let watch = bridge[watch: key], !watch.refused.contains(resource) else {
            // Past the watcher's quota (the router already held the Request-URI to the OMA domains).
            forgetEnterpriseWatch(key)
            return overQuota(request, id: id)
        }
        if bridge.allLegsReported(watch) { return actions + answerDocumentWatch(key, now: now) }
        let wait = TimeAmount.milliseconds(Int64(configuration.subscriptions.piggybackWaitMilliseconds))
        return actions + [.schedule(.firstAnswer(.enterpriseWatch(key)), at: now + wait)]
    }

    /// The body of a document watcher's view of `resource` in `type`.
    func documentBody(_ resource: String, leg: OMALeg?, watcher: WatcherIdentity, as type: String) -> [UInt8] {
        render(
            bridge.view(of: resource, leg: leg, watcher: watcher, categories: Self.bridgedCategories, views), as: type)
    }

    /// Answers a waiting document watcher: 200 and a NOTIFY (RFC 6665 §4.2.1.2) with what is
    /// known; `pending` without a body when the OMA side or the policy (`confirm`) waits for
    /// authorization (§4.2.1.3).
    mutating func answerDocumentWatch(_ key: Int, now: NIODeadline) -> [Action] {
        guard let watch = bridge[watch: key], let pending = watch.pending, let resource = watch.documentResource
        else { return [] }
        let leg = watch.legs[resource].flatMap { bridge[leg: $0] }
        let waiting =
            policy(for: resource).subHandling(for: watch.watcher) == .confirm
            || (leg.map(Self.reflectsPending) ?? false)
        let body = waiting ? nil : documentBody(resource, leg: leg, watcher: watch.watcher, as: pending.terms.bodyType)
        var out: [Action] = [.cancel(.firstAnswer(.enterpriseWatch(key)))]
        do {
            let (subscription, actions) = try NotifierSubscription.accept(
                pending.request, terms: pending.terms, status: waiting ? .pending : .active, localTag: ids.tag(),
                contact: contact(.enterprise, for: watch.peer, fallback: pending.request.uri), body: body, now: now)
            out += apply(
                bridge.answerWatch(key) {
                    $0.pending = nil
                    $0.document = subscription
                    if let body { $0.lastSent[resource] = BodyDigest(body) }
                })
            // A fetch (Expires 0) ends at once: `.remove` releases the dialog and the OMA leg.
            out += apply(actions, context: .enterpriseWatch(key), now: now, id: pending.id)
            return out
        } catch {
            forgetEnterpriseWatch(key)
            out.append(
                .respond(
                    pending.id,
                    SIPResponse(
                        replyingTo: pending.request, statusCode: 400, reasonPhrase: "\(error.code)", toTag: ids.tag())))
            return out + endOMALegs(watch.legs.values, now: now)
        }
    }

    /// A NOTIFY on the OMA leg of a document watcher: answered once all legs reported while it
    /// waits; activated when the leg left `pending`; notified when the rendered body changed.
    /// While the leg is pending again, notifications stop (RFC 6665 has no active → pending
    /// transition for the notifier).
    mutating func documentLegChanged(_ key: Int, leg: OMALeg, changed: Bool, now: NIODeadline) -> [Action] {
        guard let watch = bridge[watch: key], let resource = watch.documentResource else { return [] }
        guard let subscription = watch.document else {
            return watch.pending != nil && bridge.allLegsReported(watch) ? answerDocumentWatch(key, now: now) : []
        }
        guard changed else { return [] }
        if Self.reflectsPending(leg) {
            bridge.modifyWatch(key) { $0.lastSent[resource] = nil }
            return []
        }
        let body = documentBody(resource, leg: leg, watcher: watch.watcher, as: subscription.terms.bodyType)
        let digest = BodyDigest(body)
        let activate = subscription.status == .pending
        guard activate || watch.lastSent[resource] != digest else { return [] }
        let updates = bridge.modifyWatch(key) { watch -> [NotifierSubscription.Action] in
            watch.lastSent[resource] = digest
            if activate { return watch.document?.activate(body: body, now: now) ?? [] }
            return watch.document?.stateChanged(body: body, now: now) ?? []
        }
        return apply(updates ?? [], context: .enterpriseWatch(key), now: now)
    }

    /// The OMA leg of a document watcher ended: a waiting watcher is refused with the OMA
    /// status (403, 404, 480 or 489; otherwise 503), an answered one gets the final NOTIFY with
    /// the reason mapped (RFC 6665 §4.2.2).
    mutating func endDocumentWatch(_ key: Int, reason: String, statusCode: Int?, now: NIODeadline) -> [Action] {
        guard let watch = bridge[watch: key] else { return [] }
        if let pending = watch.pending {
            forgetEnterpriseWatch(key)
            let code = statusCode.map { [403, 404, 480, 489].contains($0) ? $0 : 503 } ?? 503
            return [
                .cancel(.firstAnswer(.enterpriseWatch(key))),
                .respond(pending.id, SIPResponse(replyingTo: pending.request, statusCode: code, toTag: ids.tag())),
            ]
        }
        guard watch.document != nil else { return [] }
        let updates = bridge.modifyWatch(key) {
            $0.document?.terminate(reason: Self.enterpriseReason(reason), now: now) ?? []
        }
        return apply(updates ?? [], context: .enterpriseWatch(key), now: now)
    }

    /// A SUBSCRIBE in a document watcher's dialog: a refresh (200 and a NOTIFY with the current
    /// view, RFC 6665 §4.2.1.2, in the format negotiated first unless the new Accept excludes
    /// it) or an unsubscribe (Expires 0: the final NOTIFY, then the OMA leg is unsubscribed).
    mutating func refreshDocumentWatch(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline)
        -> [Action]
    {
        guard let watch = bridge[watch: key], let subscription = watch.document,
            let resource = watch.documentResource
        else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
        switch SubscriptionTerms.evaluate(request, registry: registry, negotiated: subscription.terms.bodyType) {
        case .reject(let status, let reason, let headers):
            return refuseTerms(request, id: id, status, reason, headers, initial: false)
        case .accept(let terms):
            var body: [UInt8]?
            if subscription.status != .pending {
                let leg = watch.legs[resource].flatMap { bridge[leg: $0] }
                body = documentBody(resource, leg: leg, watcher: watch.watcher, as: terms.bodyType)
            }
            let actions = bridge.modifyWatch(key) { watch in
                if let body { watch.lastSent[resource] = BodyDigest(body) }
                return watch.document?.refresh(request, terms: terms, body: body, now: now) ?? []
            }
            return apply(actions ?? [], context: .enterpriseWatch(key), now: now, id: id)
        }
    }

    /// Document watchers of a resource the gateway serves itself (flow 4): notified when their
    /// view of the composed state changed.
    mutating func servedDocumentChanged(_ resource: String, now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in bridge.watchKeys.sorted() {
            guard let watch = bridge[watch: key], watch.documentResource == resource,
                let subscription = watch.document,
                subscription.status == .active
            else { continue }
            let body = documentBody(resource, leg: nil, watcher: watch.watcher, as: subscription.terms.bodyType)
            let digest = BodyDigest(body)
            guard watch.lastSent[resource] != digest else { continue }
            let updates = bridge.modifyWatch(key) { watch in
                watch.lastSent[resource] = digest
                return watch.document?.stateChanged(body: body, now: now) ?? []
            }
            out += apply(updates ?? [], context: .enterpriseWatch(key), now: now)
        }
        return out
    }
}
