import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// What an OMA leg's PIDF subscription (RFC 3856) brings its enterprise watcher: each NOTIFY
/// read and shown, the answers to its SUBSCRIBEs, its end. The relay of flow 1 runs here, once
/// the coordinator found the leg's dialog: read the PIDF (a partial one applied, RFC 5263), cut
/// it to what the pres-rules grant the watcher and map it, then notify the watcher's dialog
/// when its view changed. Each step returns a ``ComponentOutput`` for the coordinator to apply.
extension EnterpriseWatcherBridge {
    /// Creates the OMA PIDF subscription (RFC 3856) for one resource of watch `watch`, unless
    /// policy blocks or confirms it (RFC 5025 §3.2.1) or the gateway serves the resource itself
    /// (flow 4); `from` is the watcher's From (its display name is kept). Its subscription
    /// counts against what `charged` names (admitted by the coordinator). nil: none made.
    mutating func startLeg(
        watch: Int, resource: String, watcher: WatcherIdentity, from: SIPAddress, charged: GatewayCore.Charge,
        _ views: EnterpriseViews, ids: inout IdentifierSource
    ) -> (key: Int, output: ComponentOutput)? {
        guard let uri = try? SIPURI(resource), let contact = views.settings.contacts[.oma] else { return nil }
        let handling = policy(for: resource, views).subHandling(for: watcher)
        guard handling == .allow || handling == .politeBlock,
            GatewayCore.servedLocally(resource, in: views.configuration) == nil
        else { return nil }
        let oma = views.configuration.oma
        let configuration = SubscriberSubscription.Configuration(
            target: uri, from: GatewayCore.legFrom(from), to: SIPAddress(uri: uri), contact: contact,
            accept: oma.partialNotifications
                ? [SIPBodyType.pidf, OMAWatcherNotifier.pidfDiffType] : [SIPBodyType.pidf],
            expires: views.configuration.subscriptions.defaultExpires, minInterval: oma.minInterval,
            maxInterval: oma.maxInterval)
        let key = ids.key()
        let (subscription, actions) = SubscriberSubscription.start(
            configuration, callID: ids.callID(), localTag: ids.tag())
        var out = openLeg(
            key,
            GatewayCore.OMALeg(
                watch: watch, watcher: watcher.uri, resource: resource, subscription: subscription, categories: nil,
                handling: handling, charged: charged))
        out.actions += Self.actions(actions, .omaLeg(key))
        return (key, out)
    }

    /// A change of an OMA presentity's sphere (RFC 4480 §3.12) that a NOTIFY announced, for the
    /// coordinator to decide every watcher of it again.
    typealias SphereChange = (presentity: String, before: String?)

    /// A NOTIFY in OMA leg `key`. A PIDF body that does not parse is refused (RFC 3261 §21.4.1)
    /// before the dialog takes the NOTIFY, so the watcher's view stays what it was. A change of
    /// the presentity's sphere (its pres-rules have sphere conditions) is returned too.
    mutating func legNotify(
        _ key: Int, _ request: SIPRequest, id: GatewayCore.ServerRequestID, _ views: EnterpriseViews,
        ids: inout IdentifierSource, now: NIODeadline
    ) -> (output: ComponentOutput, sphereChange: SphereChange?) {
        guard self[leg: key]?.subscription != nil, let body = modifyLeg(key, { Self.legBody(request, &$0) }),
            let noted = self[leg: key]
        else {
            return (ComponentOutput(actions: [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]), nil)
        }
        var shown: CategoriesDocument?
        var handling: SubHandling?
        var needsFullState = false
        var sphereChange: SphereChange?
        switch body {
        case .unreadable:
            let refusal = SIPResponse(replyingTo: request, statusCode: 400, reasonPhrase: "Unreadable PIDF Body")
            return (ComponentOutput(actions: [.respond(id, refusal)]), nil)
        case .document(let document):
            sphereChange = noteSphere(of: noted, in: document, views)
            if sphereChange != nil, let watcher = self[watch: noted.watch]?.watcher {
                // This NOTIFY is shown under the rules of the sphere it announces: a watcher they
                // no longer allow sees nothing of it (one they block is ended right after).
                handling =
                    policy(for: noted.resource, views).subHandling(for: watcher) == .allow ? .allow : .politeBlock
            }
            shown = shownCategories(document, leg: noted, views)
        case .needsFullState: needsFullState = true
        case .none, .ignored: break
        }
        let jitter = ids.jitter()
        guard
            let (taken, changed, ended, wasPending, leg) = modifyLeg(
                key,
                { leg in
                    if let handling { leg.handling = handling }
                    let actions = leg.subscription?.receive(notify: request, now: now, jitter: jitter) ?? []
                    let wasPending = leg.pending
                    let (taken, changed, ended) = Self.takeLegNotification(
                        actions, leg: &leg, key: key, id: id, shown: shown)
                    return (taken, changed, ended, wasPending, leg)
                })
        else { return (ComponentOutput(), sphereChange) }
        var out = ComponentOutput(actions: taken)
        if needsFullState, ended == nil, !leg.closing {
            // RFC 5263 §4.3: a refresh brings full state back.
            out.actions += refreshLeg(key, now: now)
        }
        if leg.closing {
            if ended != nil { out.add(closeLeg(key)) }
        } else if let ended {
            out.add(legEnded(key, reason: ended, statusCode: nil, views, ids: &ids, now: now))
        } else {
            out.add(showLeg(leg, changed: changed, wasPending: wasPending, views, ids: &ids, now: now))
        }
        return (out, sphereChange)
    }

    /// Takes what an OMA leg's dialog made of a NOTIFY: its response, the state it delivers (the
    /// categories `shown` of its PIDF, or none while pending), its end, and what else it sends.
    /// `changed`: the categories shown changed.
    private static func takeLegNotification(
        _ actions: [SubscriberSubscription.Action], leg: inout GatewayCore.OMALeg, key: Int,
        id: GatewayCore.ServerRequestID, shown: CategoriesDocument?
    ) -> (out: [Action], changed: Bool, ended: String?) {
        var out: [Action] = []
        var changed = false
        var ended: String?
        for action in actions {
            switch action {
            case .respond(let response): out.append(.respond(id, response))
            case .deliver(let notification):
                leg.pending = notification.state.state == .pending
                if leg.pending {
                    // RFC 6665 §4.1.3 / RFC 3856 §6.6.2: pending carries no (authorized) state.
                    if leg.categories == nil { leg.categories = CategoriesDocument(uri: leg.resource) }
                } else if let shown {
                    leg.categories = shown
                    changed = true
                } else if leg.categories == nil {
                    // RFC 3856 §6.6.2: a NOTIFY without (readable) body — pending, or nothing known yet.
                    leg.categories = CategoriesDocument(uri: leg.resource)
                    changed = true
                }
            case .ended(let reason): ended = reason
            default:
                out += Self.actions([action], .omaLeg(key))
            }
        }
        return (out, changed, ended)
    }

    /// What the watcher of `leg` is sent after the leg took a NOTIFY: its document dialog's
    /// notification, the answer to its SUBSCRIBE once every leg has spoken, or a notification of
    /// its batch dialog when the leg's pending state or the view rendered for it changed.
    mutating func showLeg(
        _ leg: GatewayCore.OMALeg, changed: Bool, wasPending: Bool, _ views: EnterpriseViews,
        ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        guard let watch = self[watch: leg.watch] else { return ComponentOutput() }
        if watch.documentResource != nil {
            let changed = changed || wasPending != leg.pending
            return documentLegChanged(leg.watch, leg: leg, changed: changed, views, ids: &ids, now: now)
        }
        guard watch.subscription != nil else {
            // Still waiting to answer the watcher: answer once every leg has spoken.
            guard allLegsReported(watch) else { return ComponentOutput() }
            return answer(leg.watch, views, ids: &ids, now: now)
        }
        if leg.handling == .allow, wasPending != leg.pending { return pendingChanged(leg, views, ids: &ids, now: now) }
        guard changed, !GatewayCore.reflectsPending(leg) else { return ComponentOutput() }
        return viewChanged(of: leg.resource, leg: leg, watch: leg.watch, views, now: now)
    }

    /// The final response to a SUBSCRIBE of leg `key`. A refresh that found the subscription
    /// gone (481) makes it again in a new dialog (RFC 6665 §4.1.2.2: the OMA side restarted, or
    /// dropped it while the gateway was down), and the watcher's dialog goes on; a refused one
    /// ends the leg; a failed refresh holds until the subscription expires.
    mutating func legResponse(
        _ key: Int, _ response: SIPResponse, request: SIPRequest, _ views: EnterpriseViews,
        ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        let jitter = ids.jitter()
        guard self[leg: key]?.subscription != nil,
            let (actions, leg) = modifyLeg(
                key, { leg in (leg.subscription?.receive(response, now: now, jitter: jitter) ?? [], leg) })
        else { return ComponentOutput() }
        let ended = actions.contains { if case .ended = $0 { true } else { false } }
        if leg.closing {
            return ended || response.statusCode >= 300 ? closeLeg(key) : ComponentOutput()
        }
        var out = ComponentOutput(actions: Self.actions(actions, .omaLeg(key)))
        if ended, response.statusCode == 481, (try? request.headers.to)?.tag != nil {
            out.add(restartLeg(key, ids: &ids))
        } else if ended {
            out.add(legEnded(key, reason: "rejected", statusCode: response.statusCode, views, ids: &ids, now: now))
        } else if response.statusCode >= 300, let end = leg.subscription?.expiresAt {
            out.actions.append(.schedule(.expiry(.omaLeg(key)), at: end))
        }
        return out
    }

    /// An OMA subscription ended (terminated NOTIFY, refused SUBSCRIBE, or expiry without a
    /// successful refresh): the leg is forgotten and its resource leaves the watcher
    /// (``resourceEnded(_:reason:statusCode:_:ids:now:)``).
    mutating func legEnded(
        _ key: Int, reason: String, statusCode: Int?, _ views: EnterpriseViews, ids: inout IdentifierSource,
        now: NIODeadline
    ) -> ComponentOutput {
        guard let leg = self[leg: key] else { return ComponentOutput() }
        var out = closeLeg(key)
        out.add(resourceEnded(leg, reason: reason, statusCode: statusCode, views, ids: &ids, now: now))
        return out
    }

    /// The enterprise watcher of `leg` loses its resource: an answered batch dialog lists it
    /// `terminated` in an RLMI notification, a document dialog ends, and a watcher not answered
    /// yet is answered without it (or 404, [MS-PRES] §3.4.5.3, for a single category SUBSCRIBE
    /// whose resource the OMA side does not find).
    mutating func resourceEnded(
        _ leg: GatewayCore.OMALeg, reason: String, statusCode: Int?, _ views: EnterpriseViews,
        ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        guard let watch = self[watch: leg.watch] else { return ComponentOutput() }
        let resource = leg.resource
        if watch.documentResource != nil {
            modifyWatch(leg.watch) { $0.forget(resource) }
            return endDocument(leg.watch, reason: reason, statusCode: statusCode, ids: &ids, now: now)
        }
        if watch.subscription != nil {
            return resourceRemoved(
                resource, watch: leg.watch, reason: reason, statusCode: statusCode, ids: &ids, now: now)
        }
        if watch.single, statusCode == 404 || statusCode == 604, let pending = watch.pending {
            // §3.4.5.3: a single category SUBSCRIBE to a resource that is not found is answered
            // 404; the OMA side's answer says it is not.
            var out = closeWatch(leg.watch).output
            out.actions += [
                .cancel(.firstAnswer(.enterpriseWatch(leg.watch))),
                .respond(pending.id, SIPResponse(replyingTo: pending.request, statusCode: 404, toTag: ids.tag())),
            ]
            return out
        }
        modifyWatch(leg.watch) { $0.forget(resource) }
        guard let watch = self[watch: leg.watch], allLegsReported(watch) else { return ComponentOutput() }
        return answer(leg.watch, views, ids: &ids, now: now)
    }
}
