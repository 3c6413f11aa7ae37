import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack
import _GatewayInternals

/// Flow 1, enterprise watcher → OMA presentities: category SUBSCRIBEs (single or batched,
/// [MS-PRES] §3.4.5.1) answered as a ``BatchCategorySubscription``, one PIDF subscription toward
/// the OMA domain per resource (an OMA leg), its NOTIFYs turned into categories. Here is the
/// coordinator's part: a new watch or a refresh read and refused or admitted, each resource's
/// admission (quotas, charges; docs/security.md), a sphere change or a new policy deciding
/// watchers again, and the routing of each context to the bridge's steps
/// (`EnterpriseWatcherBridge+Watches`, `+Legs`, `+DocumentWatches`, `+OMALists`), whose outputs
/// it applies.
extension GatewayCore {
    mutating func newEnterpriseWatch(
        _ request: SIPRequest, id: ServerRequestID, watcher: WatcherIdentity,
        peer: DialogPeer?, now: NIODeadline
    ) -> [Action] {
        let terms: SubscriptionTerms
        switch SubscriptionTerms.evaluate(request, registry: registry) {
        case .accept(let t): terms = t
        case .reject(let status, let reason, let headers):
            return refuseTerms(request, id: id, status, reason, headers, initial: true)
        }
        if request.body.isEmpty, terms.bodyType != SIPBodyType.msrtcCategories {
            // [MS-PRES] §1.3.3: a client that did not negotiate categories asks for msrtc.pidf or PIDF.
            return newDocumentWatch(request, id: id, watcher: watcher, terms: terms, peer: peer, now: now)
        }
        let batch: BatchSubscribe
        do { batch = try BatchSubscribe(bytes: request.body) } catch {
            return [
                .respond(
                    id,
                    SIPResponse(
                        replyingTo: request, statusCode: 400, reasonPhrase: "Bad categoryList body", toTag: ids.tag()))
            ]
        }
        if let refusal = refuseNewBatch(request, batch: batch, id: id) { return refusal }
        guard takePeerQuota(peer) else { return overQuota(request, id: id) }
        let key = takeKey()
        var new = EnterpriseWatch(watcher: watcher, pending: (request, id, batch, terms), peer: peer)
        new.single = !BatchCategorySubscription.isBatch(request)
        bridge.openWatch(key, new)
        let subscribed = batch.actions.filter { $0.kind == .subscribe }.flatMap { $0.resources.map(\.uri) }
        let actions = addOMALegs(watch: key, resources: subscribed, request: request, now: now)
        guard let watch = bridge[watch: key] else { return actions }
        // Only a piggybacked first notification (or a poll's one answer) is worth waiting for; a
        // watcher without `ms-piggyback-first-notify` is answered at once and notified later,
        // unless its subscription is single: that one is answered 404 if the OMA side does not
        // find its resource (§3.4.5.3).
        let waits = terms.supportsPiggyback || terms.expires == 0 || watch.single
        if !waits || bridge.allLegsReported(watch) {
            return actions + answerEnterpriseWatch(key, now: now)
        }
        let wait = TimeAmount.milliseconds(Int64(configuration.subscriptions.piggybackWaitMilliseconds))
        return actions + [.schedule(.firstAnswer(.enterpriseWatch(key)), at: now + wait)]
    }

    /// The answer refusing a new category SUBSCRIBE for what its batch asks: a form of category
    /// subscription the gateway does not take, a single subscription to a resource outside the OMA
    /// domains (404, [MS-PRES] §3.4.5.3), or more resources than one request may name (413). nil:
    /// the batch may be taken.
    private mutating func refuseNewBatch(_ request: SIPRequest, batch: BatchSubscribe, id: ServerRequestID)
        -> [Action]?
    {
        if let (status, reason) = BatchCategorySubscription.refusal(of: request, batch: batch) {
            quotas.refusals.categoryForm += 1
            return [
                .respond(
                    id, SIPResponse(replyingTo: request, statusCode: status, reasonPhrase: reason, toTag: ids.tag()))
            ]
        }
        if !BatchCategorySubscription.isBatch(request), let resource = batch.actions.first?.resources.first?.uri,
            !((try? SIPURI(resource)).map { configuration.admits($0, on: .oma) } ?? false)
        {
            // §3.4.5.3: "For a single category SUBSCRIBE request, the server MUST send back a 404
            // response" for a resource it cannot find; the gateway finds only the OMA domains'.
            quotas.refusals.resourceOutsideOMA += 1
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 404, toTag: ids.tag()))]
        }
        let named = batch.actions.reduce(0) { $0 + ($1.kind == .subscribe ? $1.resources.count : 0) }
        if named > configuration.limits.resourcesPerBatch {
            // RFC 3261 §21.4.11: more than the gateway is willing to process in one request.
            quotas.refusals.batchTooLarge += 1
            return [
                .respond(
                    id,
                    SIPResponse(
                        replyingTo: request, statusCode: 413, reasonPhrase: "Too Many Resources", toTag: ids.tag()))
            ]
        }
        return nil
    }

    /// Starts the OMA leg of one resource a watch names, unless the resource is refused: outside
    /// the OMA domains (or in the enterprise's own, which would loop back through the OMA side),
    /// or past a quota. A refused resource is remembered for the RLMI answer and nothing is sent
    /// for it.
    mutating func addOMALeg(watch key: Int, resource: String, request: SIPRequest) -> [Action] {
        guard let watch = bridge[watch: key], watch.legs[resource] == nil, admitResource(resource, watch: key) else {
            return []
        }
        guard let from = try? request.headers.from,
            let leg = startOMALeg(
                watch: key, resource: resource, watcher: watch.watcher, from: from, charged: charge(watch.peer))
        else {
            releaseQuotas(watch.watcher.uri, peer: watch.peer)
            if policy(for: resource).subHandling(for: watch.watcher) == .confirm {
                bridge.modifyWatch(key) { _ = $0.awaiting.insert(resource) }
            }
            return []
        }
        bridge.modifyWatch(key) { $0.legs[resource] = leg.key }
        return leg.actions
    }

    /// Whether watch `key` may have a leg for `resource`, which then takes its share of the
    /// watcher's quota and of its sender's (``GatewayCore/takeQuotas(_:peer:)``: every leg a
    /// request makes is charged to whoever sent it): not when the resource was refused before,
    /// is outside the OMA domains, its presentity has as many watchers as it may, or past
    /// either quota (then it is refused).
    mutating func admitResource(_ resource: String, watch key: Int) -> Bool {
        guard let watch = bridge[watch: key], !watch.refused.contains(resource) else { return false }
        if let uri = try? SIPURI(resource), configuration.admits(uri, on: .oma) {
            guard presentityHasRoom(resource) else {
                quotas.refusals.presentityQuota += 1
                bridge.modifyWatch(key) { _ = $0.refused.insert(resource) }
                return false
            }
            if takeQuotas(watch.watcher.uri, peer: watch.peer) { return true }
        } else {
            quotas.refusals.resourceOutsideOMA += 1
        }
        bridge.modifyWatch(key) { _ = $0.refused.insert(resource) }
        return false
    }

    /// The RLMI instance of a resource the gateway refused to subscribe to, or that the
    /// presentity's policy blocks (RFC 5025 §3.2.1 `block`).
    static let refusedInstance = RLMIList.Instance(state: .terminated, reason: "rejected", statusCode: 403)

    /// Creates the OMA PIDF subscription for one resource (``EnterpriseWatcherBridge/startLeg(watch:resource:watcher:from:charged:_:ids:)``).
    mutating func startOMALeg(
        watch: Int, resource: String, watcher: WatcherIdentity, from: SIPAddress, charged: Charge
    ) -> (key: Int, actions: [Action])? {
        guard
            let (key, output) = bridge.startLeg(
                watch: watch, resource: resource, watcher: watcher, from: from, charged: charged, views, ids: &ids)
        else { return nil }
        return (key, apply(output))
    }

    /// The From of a subscription toward the OMA side for the watcher whose From is `from`: its
    /// address and display name, without its tag and parameters.
    static func legFrom(_ from: SIPAddress) -> SIPAddress {
        var address = SIPAddress(uri: from.uri)
        address.displayName = from.displayName
        return address
    }

    func policy(for presentity: String) -> PresentityPolicy {
        Self.policy(for: presentity, in: configuration, spheres: bridge.spheres, decisions: upnp)
    }

    /// `presentity`'s policy in `configuration`, its sphere conditions (RFC 4745 §7.2) decided
    /// with the sphere `spheres` holds for it; for the UPnP user (flow 5), the user's own
    /// decisions on watchers (``UPnPPresenceBridge/rules``) come before its rules.
    static func policy(
        for presentity: String, in configuration: GatewayConfiguration, spheres: [String: String],
        decisions: UPnPPresenceBridge
    ) -> PresentityPolicy {
        var policy = configuration.policy(for: presentity)
        if policy.rules.dependsOnSphere {
            policy.rules = policy.rules.decidingSphere(
                spheres[WatcherIdentity.addressOfRecord(presentity) ?? presentity])
        }
        // On the relay's path (every view rendered): the configured address of record compared,
        // nothing parsed.
        if presentity == configuration.upnp?.user, decisions.hasDecisions {
            policy.rules.rules = decisions.rules + policy.rules.rules
        }
        return policy
    }

    /// `presentity`'s sphere changed from `before` in the NOTIFY of leg `shown`: every enterprise
    /// watcher of it is resolved again under the rules that now apply, as when its pres-rules
    /// document changes.
    mutating func sphereChanged(of presentity: String, from before: String?, shown: Int, now: NIODeadline)
        -> [Action]
    {
        var previous = bridge.spheres
        previous[presentity] = before
        let configuration = configuration
        return resolveLegsAgain(
            legs(of: presentity),
            previous: { [upnp] in Self.policy(for: $0, in: configuration, spheres: previous, decisions: upnp) },
            shown: shown, now: now)
            + resolveAwaitingAuthorization(now: now) + watcherInfoChanges(now: now, everyWatch: true)
    }

    /// Answers waiting watch `key` (``EnterpriseWatcherBridge/answer(_:_:ids:now:)``; a PIDF or
    /// msrtc.pidf one in `GatewayCore+EnterpriseDocumentWatchers`).
    mutating func answerEnterpriseWatch(_ key: Int, now: NIODeadline) -> [Action] {
        apply(bridge.answer(key, views, ids: &ids, now: now))
    }

    mutating func refreshEnterpriseWatch(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline)
        -> [Action]
    {
        if bridge[watch: key]?.document != nil {
            return apply(bridge.refreshDocument(key, request, id: id, views, now: now))
        }
        guard let negotiated = bridge[watch: key]?.subscription?.subscription.terms.bodyType else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
        let terms: SubscriptionTerms
        switch SubscriptionTerms.evaluate(request, registry: registry, negotiated: negotiated) {
        case .accept(let t): terms = t
        case .reject(let status, let reason, let headers):
            return refuseTerms(request, id: id, status, reason, headers, initial: false)
        }
        let batch: BatchSubscribe
        if request.body.isEmpty {
            batch = BatchSubscribe()
        } else {
            do { batch = try BatchSubscribe(bytes: request.body) } catch {
                return [
                    .respond(
                        id, SIPResponse(replyingTo: request, statusCode: 400, reasonPhrase: "Bad categoryList body"))
                ]
            }
        }
        if let (status, reason) = BatchCategorySubscription.refusal(of: request, batch: batch) {
            quotas.refusals.categoryForm += 1
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: status, reasonPhrase: reason))]
        }
        let named = batch.actions.reduce(0) { $0 + ($1.kind == .subscribe ? $1.resources.count : 0) }
        if named > configuration.limits.resourcesPerBatch {
            quotas.refusals.batchTooLarge += 1
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 413, reasonPhrase: "Too Many Resources"))]
        }
        let (unsubscribed, added) = bridge.takeBatch(batch, watch: key, now: now)
        let actions = apply(unsubscribed) + addOMALegs(watch: key, resources: added, request: request, now: now)
        return actions
            + apply(bridge.refresh(key, request, batch: batch, terms: terms, id: id, views, ids: &ids, now: now))
    }

    /// A NOTIFY in OMA leg `key` (``EnterpriseWatcherBridge/legNotify(_:_:id:_:ids:now:)``); a
    /// change of the presentity's sphere it announced decides every watcher of it again.
    mutating func omaLegNotify(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline) -> [Action] {
        let (output, sphereChange) = bridge.legNotify(key, request, id: id, views, ids: &ids, now: now)
        let out = apply(output)
        guard let sphereChange else { return out }
        return out + sphereChanged(of: sphereChange.presentity, from: sphereChange.before, shown: key, now: now)
    }

    /// What the batch dialog of `leg`'s watcher sends when the body rendered for the watcher may
    /// have changed (``viewChanged(of:leg:watch:now:)``); nothing while the leg's pending state is
    /// shown.
    mutating func viewChanged(_ leg: OMALeg, now: NIODeadline) -> [Action] {
        guard !Self.reflectsPending(leg) else { return [] }
        return viewChanged(of: leg.resource, leg: leg, watch: leg.watch, now: now)
    }

    /// What the batch dialog of watch `key` sends when the body rendered for it of `resource`
    /// may have changed (``EnterpriseWatcherBridge/viewChanged(of:leg:watch:_:now:)``).
    mutating func viewChanged(of resource: String, leg: OMALeg?, watch key: Int, now: NIODeadline) -> [Action] {
        apply(bridge.viewChanged(of: resource, leg: leg, watch: key, views, now: now))
    }

    /// The final response to a SUBSCRIBE of OMA leg `key` (``EnterpriseWatcherBridge/legResponse(_:_:request:_:ids:now:)``).
    mutating func omaLegResponse(_ key: Int, _ response: SIPResponse, request: SIPRequest, now: NIODeadline) -> [Action]
    {
        apply(bridge.legResponse(key, response, request: request, views, ids: &ids, now: now))
    }

    /// OMA leg `key` ended (``EnterpriseWatcherBridge/legEnded(_:reason:statusCode:_:ids:now:)``).
    mutating func omaLegEnded(_ key: Int, reason: String, statusCode: Int?, now: NIODeadline) -> [Action] {
        apply(bridge.legEnded(key, reason: reason, statusCode: statusCode, views, ids: &ids, now: now))
    }

    /// The enterprise watcher of `leg` loses its resource
    /// (``EnterpriseWatcherBridge/resourceEnded(_:reason:statusCode:_:ids:now:)``).
    mutating func resourceEnded(_ leg: OMALeg, reason: String, statusCode: Int?, now: NIODeadline) -> [Action] {
        apply(bridge.resourceEnded(leg, reason: reason, statusCode: statusCode, views, ids: &ids, now: now))
    }

    /// Unsubscribes OMA legs (``EnterpriseWatcherBridge/endLegs(_:now:)``).
    mutating func endOMALegs(_ keys: some Sequence<Int>, now: NIODeadline) -> [Action] {
        apply(bridge.endLegs(keys, now: now))
    }

    /// Forgets an OMA leg with a subscription of its own (``EnterpriseWatcherBridge/closeLeg(_:)``).
    mutating func removeOMALeg(_ key: Int) { _ = apply(bridge.closeLeg(key)) }

    /// Whether the watcher is shown a leg's OMA `pending` state: only an allowed watcher (a
    /// politely blocked one sees the never-published view, which is never pending).
    static func reflectsPending(_ leg: OMALeg) -> Bool { leg.pending && leg.handling == .allow }

    /// The RLMI instance of a resource whose OMA subscription is pending ([MS-PRES] §2.2.2.4.2:
    /// `id` 0, `state`, `cid` the resource URI).
    static func pendingInstance(_ uri: String) -> RLMIList.Instance {
        RLMIList.Instance(state: .pending, cid: uri)
    }

    /// After a policy change, decides every resource that waited for its owner (`confirm`, RFC
    /// 5025 §3.2.1: no OMA leg was made for it) under the new policy. Still
    /// `confirm`: it waits on. `block`: it leaves the dialog `terminated;reason=rejected` (a
    /// single or document dialog ends so). `allow`: its OMA leg starts, shown `pending` until
    /// the leg's first state, which activates it as it would a watcher the OMA side authorizes.
    /// `polite-block`: it is activated at once with the never-published view, the bytes any
    /// politely blocked watcher gets; its leg starts too, so that a later `allow` shows the state.
    /// A resource the gateway serves itself needs no leg: it is activated at once. One whose leg
    /// cannot start (past the watcher's quota) is refused as at subscription time.
    mutating func resolveAwaitingAuthorization(now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in bridge.watchKeys.sorted() {
            guard let watch = bridge[watch: key], watch.pending == nil, !watch.awaiting.isEmpty else { continue }
            for uri in watch.awaiting.sorted() {
                let handling = policy(for: uri).subHandling(for: watch.watcher)
                guard handling != .confirm else { continue }
                bridge.modifyWatch(key) { _ = $0.awaiting.remove(uri) }
                if handling == .block {
                    out += apply(bridge.refuseAwaiting(uri, watch: key, ids: &ids, now: now))
                } else if servedLocally(uri) != nil {
                    out += apply(bridge.activateAwaiting(uri, watch: key, views, ids: &ids, now: now))
                } else if let started = startAwaitingLeg(uri, watch: key, shownPending: handling == .allow) {
                    out += started
                    if handling == .politeBlock {
                        out += apply(bridge.activateAwaiting(uri, watch: key, views, ids: &ids, now: now))
                    }
                } else {
                    bridge.modifyWatch(key) { _ = $0.refused.insert(uri) }
                    out += apply(bridge.refuseAwaiting(uri, watch: key, ids: &ids, now: now))
                }
            }
        }
        return out
    }

    /// Starts the OMA leg of a resource its owner now allows (or politely blocks), as for a new
    /// watcher; nil past the watcher's quota.
    private mutating func startAwaitingLeg(_ uri: String, watch key: Int, shownPending: Bool) -> [Action]? {
        guard let watch = bridge[watch: key] else { return nil }
        let dialog = watch.document?.dialog ?? watch.subscription?.subscription.dialog
        guard let from = dialog?.remoteURI, takeQuotas(watch.watcher.uri, peer: watch.peer) else { return nil }
        guard
            let leg = startOMALeg(
                watch: key, resource: uri, watcher: watch.watcher, from: from, charged: charge(watch.peer))
        else {
            releaseQuotas(watch.watcher.uri, peer: watch.peer)
            return nil
        }
        // Shown pending until its first state: leaving it activates the resource.
        if shownPending { bridge.modifyLeg(leg.key) { $0.pending = true } }
        bridge.modifyWatch(key) { $0.legs[uri] = leg.key }
        return leg.actions
    }

    /// An OMA termination reason as the enterprise side reads it (RFC 6665 §4.2.2 reasons pass;
    /// a refused subscription is `rejected`).
    static func enterpriseReason(_ reason: String) -> String {
        switch reason {
        case "deactivated", "probation", "rejected", "timeout", "giveup", "noresource", "invariant": reason
        default: "rejected"
        }
    }

    /// Replaces, in `state`, every category `update` names with `update`'s instances of it, unless
    /// the state's instances of that name were published later. The server stamps each instance's
    /// publishTime with its clock ([MS-PRES] §3.2.5.1.2), and a refresh's 200 OK with piggybacked
    /// state can arrive after a NOTIFY sent later (they take different paths, over UDP): its older
    /// state must not replace the newer one. A name without publish times is replaced as sent.
    static func merge(_ state: CategoriesDocument, _ update: CategoriesDocument) -> CategoriesDocument {
        let stale = olderNames(update, than: state)
        let named = Set(update.categories.lazy.map(\.name).filter { !stale.contains($0) })
        let kept = { (category: Category) in !named.contains(category.name) }
        let taken = { (category: Category) in !stale.contains(category.name) }
        // Built once at its exact size: the result is kept for the subscription's life.
        var categories: [Category] = []
        categories.reserveCapacity(state.categories.count(where: kept) + update.categories.count(where: taken))
        categories.append(contentsOf: state.categories.lazy.filter(kept))
        categories.append(contentsOf: update.categories.lazy.filter(taken))
        var result = state
        result.categories = categories
        return result
    }

    /// The category names whose newest instance in `update` was published before the newest of
    /// the same name in `state` (milliseconds of publishTime; names without one in either are
    /// never older). A notification names a few categories: they are compared by scanning.
    private static func olderNames(_ update: CategoriesDocument, than state: CategoriesDocument) -> Set<CategoryName> {
        func newest(_ name: CategoryName, in document: CategoriesDocument) -> Int64? {
            document.categories.lazy.filter { $0.name == name }
                .compactMap { $0.publishTime.flatMap(XSDTime.milliseconds(from:)) }.max()
        }
        var stale: Set<CategoryName> = []
        for name in update.categories.lazy.map(\.name) where !stale.contains(name) {
            if let updated = newest(name, in: update), let held = newest(name, in: state), held > updated {
                stale.insert(name)
            }
        }
        return stale
    }
}
