import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// The bridge's list subscriptions toward an OMA RLS (RFC 4662) once their members were admitted
/// (`GatewayCore+OMAResourceLists`): the rls-services document written (RFC 4826), the list
/// subscribed to, its answers and RLMI notifications taken into the members' legs and shown to
/// their watcher, or the list given up for subscriptions of the members' own. Each step returns
/// a ``ComponentOutput`` for the coordinator to apply.
extension EnterpriseWatcherBridge {
    /// A change of a member's sphere taken from a list notification: its presentity, the sphere
    /// before, and the leg whose notification showed it.
    typealias MemberSphereChange = (presentity: String, before: String?, shown: Int)

    /// The XCAP server answered the write of document `uri` (`status` nil: no answer). A 2xx
    /// lets the lists waiting for it be subscribed to or refreshed; a failure gives each of
    /// them up for subscriptions of its members' own (the domain is not asked for lists for
    /// ``GatewayCore/rlsRetryDelay``). A document changed meanwhile is written again first.
    mutating func listDocumentAnswered(
        _ uri: String, status: Int?, _ views: EnterpriseViews, ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        let written = status.map { (200..<300).contains($0) } ?? false
        let (write, waiting) = documentAnswered(uri, written: written)
        var out = ComponentOutput(actions: write)
        for key in waiting {
            guard let list = self[list: key], !list.closing else { continue }
            guard !written else {
                out.add(subscribeList(key, views, ids: &ids, now: now))
                continue
            }
            refuseLists(in: list.domain, until: now + GatewayCore.rlsRetryDelay)
            out.add(dissolveList(key, views, ids: &ids, now: now))
        }
        return out
    }

    /// Subscribes to list `key`, or refreshes it when its members changed
    /// (``subscribeList(_:contact:expires:ids:now:)``).
    private mutating func subscribeList(
        _ key: Int, _ views: EnterpriseViews, ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        subscribeList(
            key, contact: views.settings.contacts[.oma], expires: views.configuration.subscriptions.defaultExpires,
            ids: &ids, now: now)
    }

    /// The final response to a SUBSCRIBE of list `key`. A refused initial SUBSCRIBE (or one
    /// whose transaction failed) gives the list up (``dissolveList(_:_:ids:now:)``); a refresh
    /// that found the subscription gone (481) makes it again in a new dialog (RFC 6665
    /// §4.1.2.2).
    mutating func listResponse(
        _ key: Int, _ response: SIPResponse, request: SIPRequest, _ views: EnterpriseViews,
        ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        guard self[list: key]?.subscription != nil else { return ComponentOutput() }
        let jitter = ids.jitter()
        guard
            let (list, actions) = modifyList(
                key, { list in (list, list.subscription?.receive(response, now: now, jitter: jitter) ?? []) })
        else { return ComponentOutput() }
        let ended = actions.contains { if case .ended = $0 { true } else { false } }
        if list.closing {
            return ended || response.statusCode >= 300 ? closeList(key) : ComponentOutput()
        }
        var out = ComponentOutput(actions: Self.actions(actions, .omaList(key)))
        if ended, response.statusCode == 481, (try? request.headers.to)?.tag != nil {
            out.add(restartList(key, ids: &ids))
            return out
        }
        // RFC 4662 §4.1: an RLS answers a subscription to a list with `Require: eventlist`. A 2xx
        // without it was given by a server that took the URI for a single resource.
        if (200..<300).contains(response.statusCode), (try? request.headers.to)?.tag == nil,
            !((try? response.headers.require) ?? []).contains(where: { $0.lowercased() == GatewayCore.eventlist })
        {
            refuseLists(in: list.domain, until: now + GatewayCore.rlsRetryDelay)
            out.add(dissolveList(key, views, ids: &ids, now: now))
        } else if ended {
            refuseLists(in: list.domain, until: now + GatewayCore.rlsRetryDelay)
            out.add(forgetListDialog(key))
            out.add(dissolveList(key, views, ids: &ids, now: now))
        } else if response.statusCode >= 300, let end = list.subscription?.expiresAt {
            out.actions.append(.schedule(.expiry(.omaList(key)), at: end))
        } else if (200..<300).contains(response.statusCode), list.changed {
            out.add(subscribeList(key, views, ids: &ids, now: now))
        }
        return out
    }

    /// Gives list `key` up: each member gets a subscription of its own, keeping the state shown
    /// so far and its share of the watcher's quota; the list is unsubscribed (if it was
    /// subscribed) and left out of its document.
    mutating func dissolveList(_ key: Int, _ views: EnterpriseViews, ids: inout IdentifierSource, now: NIODeadline)
        -> ComponentOutput
    {
        guard let list = self[list: key] else { return ComponentOutput() }
        var out = ComponentOutput()
        for (resource, memberKey) in list.members.sorted(by: { $0.value < $1.value }) {
            guard let member = removeLeg(memberKey) else { continue }
            guard let watcher = self[watch: member.watch]?.watcher,
                let (legKey, started) = startLeg(
                    watch: member.watch, resource: resource, watcher: watcher, from: list.from,
                    charged: member.charged, views, ids: &ids)
            else {
                out.released.append(member.held)
                modifyWatch(member.watch) { $0.legs[resource] = nil }
                continue
            }
            out.add(started)
            // Its presentity was counted for the new leg.
            out.released.append(HeldQuota(presentity: resource))
            modifyLeg(legKey) {
                $0.categories = member.categories
                $0.pending = member.pending
            }
            modifyWatch(member.watch) { $0.legs[resource] = legKey }
        }
        modifyList(key) { $0.members = [:] }
        out.add(endList(key, now: now))
        return out
    }

    /// A NOTIFY of list `key` (RFC 4662 §5). Its body is read whole before the dialog takes it:
    /// one that is not a readable RLMI list for this list, with readable PIDF parts, or whose
    /// version is not above the last one taken (§5.6: discarded), is refused with 400 and a
    /// Warning, and nothing changes. A partial notification that skips versions is taken, and
    /// the list refreshed for full state (§5.6.2); so is one with no full state taken before it.
    /// A resource not in the list is left out (named in a Warning of the 200). What changed
    /// reaches the watcher in one notification of its batch dialog; the members' sphere changes
    /// are returned for the coordinator to decide their watchers again.
    mutating func listNotify(
        _ key: Int, _ request: SIPRequest, id: GatewayCore.ServerRequestID, _ views: EnterpriseViews,
        ids: inout IdentifierSource, now: NIODeadline
    ) -> (output: ComponentOutput, sphereChanges: [MemberSphereChange]) {
        guard let list = self[list: key], list.subscription != nil else {
            return (ComponentOutput(actions: [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]), [])
        }
        func refuse(_ text: String) -> (output: ComponentOutput, sphereChanges: [MemberSphereChange]) {
            let refusal = SIPResponse(
                replyingTo: request, statusCode: 400, headers: [(.warning, Self.warning(text, views))])
            return (ComponentOutput(actions: [.respond(id, refusal)]), [])
        }
        var notification: ListNotification?
        var needsFullState = false
        if !request.body.isEmpty {
            let read: ListNotification
            do { read = try ListNotification(request) } catch { return refuse(error.text) }
            if let problem = Self.notificationProblem(read, for: list) { return refuse(problem) }
            notification = read
            needsFullState = !read.list.fullState && list.version.map { read.list.version != $0 &+ 1 } ?? true
        }
        let jitter = ids.jitter()
        let actions =
            modifyList(key) { $0.subscription?.receive(notify: request, now: now, jitter: jitter) ?? [] } ?? []
        var out = ComponentOutput()
        var ended: String?
        var taken = false
        var pending = false
        for action in actions {
            switch action {
            case .respond(var response):
                taken = response.statusCode == 200
                if taken, let notification {
                    response = Self.warningOfNonMembers(response, in: notification, of: list, views)
                }
                out.actions.append(.respond(id, response))
            case .ended(let reason): ended = reason
            case .deliver(let delivered): pending = delivered.state.state == .pending
            default: out.actions += Self.actions([action], .omaList(key))
            }
        }
        if taken, let notification { modifyList(key) { $0.version = notification.list.version } }
        if list.closing {
            if ended != nil { out.add(closeList(key)) }
            return (out, [])
        }
        if let ended {
            out.add(listEnded(key, in: list.domain, reason: ended, views, ids: &ids, now: now))
            return (out, [])
        }
        if needsFullState { out.actions += refreshList(key, now: now) }
        guard taken else { return (out, []) }
        if let notification {
            let (members, sphereChanges) = membersNotified(key, notification, views, ids: &ids, now: now)
            out.add(members)
            return (out, sphereChanges)
        }
        if pending { out.add(listPending(key, views, ids: &ids, now: now)) }
        return (out, [])
    }

    /// The RLS ended list `key` in `domain` with `reason`: after `deactivated` or `timeout` it is
    /// made again at once (RFC 6665 §4.1.3); otherwise the domain is not asked for lists for a
    /// while and the list is given up for legs of the members' own.
    private mutating func listEnded(
        _ key: Int, in domain: String, reason: String, _ views: EnterpriseViews, ids: inout IdentifierSource,
        now: NIODeadline
    ) -> ComponentOutput {
        if reason == "deactivated" || reason == "timeout" { return restartList(key, ids: &ids) }
        refuseLists(in: domain, until: now + GatewayCore.rlsRetryDelay)
        var out = forgetListDialog(key)
        out.add(dissolveList(key, views, ids: &ids, now: now))
        return out
    }

    /// Why an RLMI notification cannot be taken for `list` (RFC 4662 §5.6): it is another list's,
    /// or its version is not above the last one taken (discarded). nil: it can.
    private static func notificationProblem(_ read: ListNotification, for list: GatewayCore.OMAList) -> String? {
        guard GatewayCore.sameAddress(read.list.uri, list.uri) else {
            return "RLMI list \(read.list.uri) is not \(list.uri)"
        }
        if let last = list.version, read.list.version <= last {
            return "RLMI version \(read.list.version) is not above \(last)"
        }
        return nil
    }

    /// The 200 to a list NOTIFY, with a Warning naming the resources of `notification` that are
    /// not members of `list` (left out), if there are any.
    private static func warningOfNonMembers(
        _ response: SIPResponse, in notification: ListNotification, of list: GatewayCore.OMAList,
        _ views: EnterpriseViews
    ) -> SIPResponse {
        var response = response
        let unknown = notification.list.resources.map(\.uri).filter { list.member($0) == nil }
        if !unknown.isEmpty {
            response.headers.append(.warning, warning("not in the list: \(unknown.joined(separator: " "))", views))
        }
        return response
    }

    /// A Warning header value (RFC 3261 §20.43: 399, miscellaneous) from this gateway.
    private static func warning(_ text: String, _ views: EnterpriseViews) -> String {
        let agent = views.settings.contacts[.oma]?.uri.host ?? "presence-gateway"
        return "399 \(agent) \"\(text.replacingOccurrences(of: "\"", with: "'"))\""
    }

    /// The list subscription itself waits for authorization (RFC 6665 §4.1.3, RFC 4662 §4.4):
    /// its members with no state yet are shown pending, as a leg of their own would be.
    private mutating func listPending(
        _ key: Int, _ views: EnterpriseViews, ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        guard let list = self[list: key] else { return ComponentOutput() }
        var changes: [MemberChange] = []
        for memberKey in list.members.values {
            guard self[leg: memberKey]?.categories == nil,
                let (leg, wasPending) = modifyLeg(
                    memberKey,
                    { leg in
                        let wasPending = leg.pending
                        leg.pending = true
                        leg.categories = CategoriesDocument(uri: leg.resource)
                        return (leg, wasPending)
                    })
            else { continue }
            changes.append(MemberChange(key: memberKey, leg: leg, wasPending: wasPending))
        }
        return watchNotified(list.watch, changes, views, ids: &ids, now: now)
    }

    /// Takes the members' state from a notification of list `key`, then tells their watcher.
    private mutating func membersNotified(
        _ key: Int, _ notification: ListNotification, _ views: EnterpriseViews, ids: inout IdentifierSource,
        now: NIODeadline
    ) -> (output: ComponentOutput, sphereChanges: [MemberSphereChange]) {
        guard let list = self[list: key] else { return (ComponentOutput(), []) }
        var changes: [MemberChange] = []
        var sphereChanges: [MemberSphereChange] = []
        for resource in notification.list.resources {
            guard let memberKey = list.member(resource.uri),
                let change = memberNotified(memberKey, resource, notification, views, sphereChanges: &sphereChanges)
            else { continue }
            changes.append(change)
        }
        var out = watchNotified(list.watch, changes, views, ids: &ids, now: now)
        for change in changes where change.ended != nil { out.add(leaveList(change.key, now: now)) }
        return (out, sphereChanges)
    }

    /// Takes one member's instance from a list notification into its leg (RFC 4662 §5.3): active
    /// with its state, pending, or terminated (then it leaves its watch); nil when it has no
    /// leg or its instance says none of these. A change of its presentity's sphere is added
    /// to `sphereChanges`, and this state is shown under the rules of that sphere.
    private mutating func memberNotified(
        _ memberKey: Int, _ resource: RLMIList.Resource, _ notification: ListNotification, _ views: EnterpriseViews,
        sphereChanges: inout [MemberSphereChange]
    ) -> MemberChange? {
        guard let leg = self[leg: memberKey] else { return nil }
        var viewChanged = false
        let update: (inout GatewayCore.OMALeg) -> Void
        if let active = resource.instances.first(where: { $0.state == .active }) {
            var handling: SubHandling?
            var shown: CategoriesDocument?
            if let pidf = active.cid.flatMap({ notification.documents[ListNotification.contentID($0)] }) {
                if let sphere = noteSphere(of: leg, in: pidf, views) {
                    sphereChanges.append((sphere.presentity, sphere.before, memberKey))
                    if let watcher = self[watch: leg.watch]?.watcher {
                        let allowed = policy(for: leg.resource, views).subHandling(for: watcher) == .allow
                        handling = allowed ? .allow : .politeBlock
                    }
                }
                shown = shownCategories(pidf, leg: leg, views)
                viewChanged = true
            } else if leg.categories == nil {
                // RFC 4662 §5.5: an instance without a part has no state to report yet.
                shown = CategoriesDocument(uri: leg.resource)
                viewChanged = true
            }
            update = { leg in
                leg.pending = false
                if let handling { leg.handling = handling }
                if let shown { leg.categories = shown }
            }
        } else if resource.instances.contains(where: { $0.state == .pending }) {
            update = { leg in
                leg.pending = true
                if leg.categories == nil { leg.categories = CategoriesDocument(uri: leg.resource) }
            }
        } else if let terminated = resource.instances.first(where: { $0.state == .terminated }) {
            return MemberChange(
                key: memberKey, leg: leg, wasPending: leg.pending, ended: terminated.reason ?? "rejected")
        } else {
            return nil
        }
        guard
            let changed = modifyLeg(
                memberKey,
                {
                    update(&$0)
                    return $0
                })
        else { return nil }
        return MemberChange(key: memberKey, leg: changed, wasPending: leg.pending, viewChanged: viewChanged)
    }

    /// What a list notification changed of one member.
    struct MemberChange {
        var key: Int
        var leg: GatewayCore.OMALeg
        var wasPending: Bool
        var viewChanged = false
        /// Its instance was terminated, with this reason: it leaves the watch.
        var ended: String?
    }

    /// The watcher of a list learns what its notification changed: before the watcher was
    /// answered, it is once every leg has spoken; after, one change goes out as a leg's would,
    /// and several in one notification (``BatchCategorySubscription/resourcesChanged(_:boundary:now:)``).
    private mutating func watchNotified(
        _ watchKey: Int, _ changes: [MemberChange], _ views: EnterpriseViews, ids: inout IdentifierSource,
        now: NIODeadline
    ) -> ComponentOutput {
        guard let watch = self[watch: watchKey] else { return ComponentOutput() }
        guard let subscription = watch.subscription else {
            modifyWatch(watchKey) { watch in
                for change in changes where change.ended != nil { watch.legs[change.leg.resource] = nil }
            }
            guard let watch = self[watch: watchKey], allLegsReported(watch) else { return ComponentOutput() }
            return answer(watchKey, views, ids: &ids, now: now)
        }
        var updates: [BatchCategorySubscription.ResourceChange] = []
        for change in changes {
            let uri = change.leg.resource
            guard let categories = subscription.resources[uri] else { continue }
            if let reason = change.ended {
                let instance = RLMIList.Instance(state: .terminated, reason: GatewayCore.enterpriseReason(reason))
                updates.append(.init(uri: uri, instance: instance))
            } else if change.leg.handling == .allow, change.wasPending != change.leg.pending {
                if change.leg.pending {
                    updates.append(.init(uri: uri, instance: GatewayCore.pendingInstance(uri)))
                } else {
                    let body = view(of: uri, leg: change.leg, watcher: watch.watcher, categories: categories, views)
                        .serialized()
                    updates.append(.init(uri: uri, instance: RLMIList.Instance(state: .active, cid: uri), body: body))
                }
            } else if change.viewChanged, !GatewayCore.reflectsPending(change.leg) {
                let body = view(of: uri, leg: change.leg, watcher: watch.watcher, categories: categories, views)
                    .serialized()
                guard watch.lastSent[uri] != BodyDigest(body) else { continue }
                updates.append(.init(uri: uri, body: body))
            }
        }
        let alone = updates.count == 1 && updates[0].instance == nil
        let boundary = updates.isEmpty || alone ? "" : ids.boundary()
        let actions = modifyWatch(watchKey) { $0.show(updates, boundary: boundary, now: now) }
        return watchActions(actions ?? [], watchKey, now: now)
    }
}
