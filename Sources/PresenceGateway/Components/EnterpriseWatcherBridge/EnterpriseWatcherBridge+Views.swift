import MSPresenceEvents
import PresenceDocuments
import PresenceMapping
import SIPMessages
import _GatewayInternals

/// What the coordinator lends the enterprise watcher bridge for one step that works out what a
/// watcher is shown (docs/architecture.md, "Who owns what"), as values: the settings
/// (configuration, mapper, Contacts), the UPnP user's own decisions on watchers (flow 5), the
/// state published to the presentities the gateway serves itself (flow 4) and the presentities'
/// watcher counts (`subscriptions-per-presentity`). Made for one call and let go after it, so no
/// table of the coordinator's is held while an output is applied.
struct EnterpriseViews {
    var settings: CoreSettings
    var decisions: UPnPPresenceBridge
    var served: LinkedIdentityPublisher
    var quotas: Quotas

    var configuration: GatewayConfiguration { settings.configuration }

    /// Whether `presentity` may have another enterprise watcher's leg.
    func presentityHasRoom(_ presentity: String) -> Bool {
        quotas.presentityHasRoom(presentity, limit: configuration.limits.subscriptionsPerPresentity)
    }
}

extension GatewayCore {
    /// What the bridge is lent for a step (``EnterpriseViews``).
    var views: EnterpriseViews {
        EnterpriseViews(settings: settings, decisions: upnp, served: linkedIdentities, quotas: quotas)
    }
}

/// What an enterprise watcher is shown of an OMA resource, worked out by the bridge from its
/// legs, the spheres it noted and what it is lent: the presentity's policy (pres-rules, RFC
/// 5025; containers, [MS-PRES] §3.2.5.3), the watcher's view and the resolution of a resource
/// in its batch.
extension EnterpriseWatcherBridge {
    /// `presentity`'s policy, its sphere conditions decided with the sphere noted for it
    /// (``GatewayCore/policy(for:in:spheres:decisions:)``).
    func policy(for presentity: String, _ views: EnterpriseViews) -> PresentityPolicy {
        GatewayCore.policy(for: presentity, in: views.configuration, spheres: spheres, decisions: views.decisions)
    }

    /// Whether every OMA leg of a waiting enterprise watcher has reported a first state.
    func allLegsReported(_ watch: GatewayCore.EnterpriseWatch) -> Bool {
        watch.legs.values.allSatisfy { self[leg: $0]?.categories != nil }
    }

    /// Notes the sphere `pidf` says `leg`'s presentity is in (its first person's RPID `sphere`),
    /// when its pres-rules have sphere conditions; the presentity and the sphere it was in
    /// before, when it changed.
    mutating func noteSphere(of leg: GatewayCore.OMALeg, in pidf: PIDFDocument, _ views: EnterpriseViews)
        -> (presentity: String, before: String?)?
    {
        guard views.configuration.policy(for: leg.resource).rules.dependsOnSphere else { return nil }
        let presentity = WatcherIdentity.addressOfRecord(leg.resource) ?? leg.resource
        let values = pidf.persons.lazy.compactMap(\.rpid.sphere).first?.values ?? []
        let sphere = values.lazy.compactMap { value -> String? in
            switch value {
            case .token(let token, nil): token
            case .text(let text), .other(let text, _): text.trimmingCharacters(in: .whitespacesAndNewlines)
            default: nil
            }
        }.first
        let noted = noteSphere(sphere, of: presentity)
        return noted.changed ? (presentity, noted.before) : nil
    }

    /// The OMA state of `leg` as its watcher may be shown it, as categories: the PIDF with only
    /// what the pres-rules' transformations grant (RFC 5025 §3.3; whole when no rule speaks of
    /// the watcher), mapped. When they grant nothing of it, nothing: the never-published view
    /// (an empty PIDF would map to availability 0).
    func shownCategories(_ pidf: PIDFDocument, leg: GatewayCore.OMALeg, _ views: EnterpriseViews)
        -> CategoriesDocument
    {
        var shown = pidf
        let rules = policy(for: leg.resource, views).rules
        if !rules.rules.isEmpty, let watcher = self[watch: leg.watch]?.watcher,
            let permissions = rules.permissions(for: watcher)
        {
            shown = permissions.apply(to: pidf)
            if shown.tuples.isEmpty, shown.persons.isEmpty, shown.devices.isEmpty {
                return CategoriesDocument(uri: leg.resource)
            }
        }
        var categories = views.settings.mapper.categoriesDocument(from: shown)
        categories.uri = leg.resource
        // Kept for the leg's life: without the room the mapper's appends left.
        categories.categories = categories.categories.exactCapacityCopy()
        return categories
    }

    /// What the enterprise watcher sees of one OMA resource: the OMA state mapped to categories,
    /// each category placed in the configured containers that expose it (container 0 when none
    /// is configured; ``ContainerSet/publications(of:wanted:)``), resolved per category for the
    /// watcher ([MS-PRES] §3.2.5.3); or the never-published view for a politely blocked watcher.
    func view(
        of resource: String, leg: GatewayCore.OMALeg?, watcher: WatcherIdentity, categories: [CategoryName],
        _ views: EnterpriseViews
    ) -> CategoriesDocument {
        let policy = policy(for: resource, views)
        let published = policy.containers.publications(
            of: state(of: resource, leg: leg, watcher: watcher, views)?.categories, wanted: categories)
        // `view` is nil only for block/confirm, which never get a leg; the never-published view stands in.
        return PresentityPolicy.view(
            of: published, uri: resource, containers: policy.containers, watcher: watcher, categories: categories)
    }

    /// The state a watcher may be shown of an OMA resource: what its OMA leg reported, or for a
    /// resource the gateway serves itself (flow 4) what was published to it; nil when nothing is
    /// known or the watcher is politely blocked.
    func state(of resource: String, leg: GatewayCore.OMALeg?, watcher: WatcherIdentity, _ views: EnterpriseViews)
        -> CategoriesDocument?
    {
        if let uri = GatewayCore.servedLocally(resource, in: views.configuration) {
            return policy(for: resource, views).subHandling(for: watcher) == .allow ? views.served.served(uri) : nil
        }
        guard let leg, leg.handling == .allow else { return nil }
        return leg.categories
    }

    /// The RLMI instance of a resource refused: `quotaExceeded` with 413 and the presentity as
    /// `cid` when the presentity has as many watchers as it may ([MS-PRES] §3.4.5.1.3),
    /// ``GatewayCore/refusedInstance`` otherwise.
    static func rejection(of uri: String, _ views: EnterpriseViews) -> RLMIList.Instance {
        guard !views.presentityHasRoom(uri) else { return GatewayCore.refusedInstance }
        let cid = uri.hasPrefix("sip:") ? String(uri.dropFirst(4)) : uri
        return RLMIList.Instance(state: .terminated, reason: "quotaExceeded", cid: cid, statusCode: 413)
    }

    /// What a category watch is told of one of its resources, with the digest of the body when
    /// it is the watcher's view: `rejected` when refused or blocked; `pending` while the
    /// presentity's owner has not decided (`confirm`, RFC 5025 §3.2.1) or, for an allowed
    /// watcher, while the OMA side has not authorized it (RFC 6665 §4.2.1.3); otherwise the
    /// watcher's view. A `pending` resource stays in the dialog until it is decided.
    func resolution(
        of uri: String, categories: [CategoryName], in watch: GatewayCore.EnterpriseWatch, _ views: EnterpriseViews
    ) -> (BatchCategorySubscription.Resolution, BodyDigest?) {
        if watch.refused.contains(uri) { return (.rejected(Self.rejection(of: uri, views)), nil) }
        switch policy(for: uri, views).subHandling(for: watch.watcher) {
        case .block:
            return (.rejected(GatewayCore.refusedInstance), nil)
        case .confirm:
            return (.pending(GatewayCore.pendingInstance(uri)), nil)
        case .allow, .politeBlock:
            let leg = watch.legs[uri].flatMap { self[leg: $0] }
            if let leg, GatewayCore.reflectsPending(leg) { return (.pending(GatewayCore.pendingInstance(uri)), nil) }
            let document = view(of: uri, leg: leg, watcher: watch.watcher, categories: categories, views)
            return (.accepted(document), BodyDigest(document.serialized()))
        }
    }

    /// Whether `uri` waits for authorization in `watch`: its owner's (`confirm`, no OMA leg
    /// made), or the OMA side's as an allowed watcher is shown it.
    func awaitsAuthorization(_ uri: String, in watch: GatewayCore.EnterpriseWatch, _ views: EnterpriseViews) -> Bool {
        if let leg = watch.legs[uri].flatMap({ self[leg: $0] }) { return GatewayCore.reflectsPending(leg) }
        return !watch.refused.contains(uri) && policy(for: uri, views).subHandling(for: watch.watcher) == .confirm
    }
}
