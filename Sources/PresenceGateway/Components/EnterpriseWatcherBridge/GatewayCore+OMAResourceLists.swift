import MSPresenceEvents
import Multipart
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack
import _GatewayInternals

/// Flow 1 through an OMA resource list server (RFC 4662; docs/flows.md, "Lists toward the OMA
/// side"). Where `oma: rls` names a domain, the resources a batched category subscription names
/// there are one list subscription instead of one PIDF subscription each. The gateway keeps the
/// list where that domain's RLS reads lists: as a `service` of the watcher's RFC 4826
/// `rls-services` document on the domain's XCAP server (RFC 4825). Once the document is written it
/// subscribes to the list's URI with `Supported: eventlist`, and turns each RLMI notification
/// into one notification of the watcher's batch dialog.
///
/// Each member is an ``OMALeg`` without a subscription of its own, so the watcher's view of it is
/// rendered, resolved and stored as for any leg. When the XCAP server or the RLS refuses (a
/// write that fails, a SUBSCRIBE refused, the list subscription ended other than `deactivated`
/// or `timeout`), every member gets a subscription of its own, as without `rls`, and the domain
/// is not asked for lists for ``rlsRetryDelay``.
extension GatewayCore {
    /// A list subscription toward an OMA RLS for the resources of one enterprise watch in one domain.
    struct OMAList: Codable, Journaled {
        var watch: Int
        /// The watcher's address of record: the XUI whose rls-services document holds the list.
        var watcher: String
        /// The From of the list's SUBSCRIBE: the watcher's, display name kept, without a tag.
        var from: SIPAddress
        var domain: String
        /// The list's URI, the `service` of the document (RFC 4826 §4.1).
        var uri: String
        /// The URI of the rls-services document holding it.
        var document: String
        /// Each member's resource and its leg, in the order they joined.
        var members: SmallMap<String, Int> = [:]
        /// Made once the document holding the list was written.
        @DialogState var subscription: SubscriberSubscription? = nil
        /// The RLMI version of the last notification taken (RFC 4662 §5.2); nil until one with
        /// full state was (and after a restart): a partial one is then not applied.
        @Transient var version: UInt32? = nil
        /// Members changed since the RLS was last asked for the list: it is refreshed once the
        /// document holding them is written (Kamailio's RLS reads the list again on a refresh).
        var changed = false
        /// Unsubscribed; waiting for the final NOTIFY.
        var closing = false
        /// The OMA peer the SUBSCRIBE was sent to.
        var peer: DialogPeer?
    }

    /// One rls-services document the gateway writes: an XUI at an XCAP root (RFC 4825 §6).
    struct ListDocument: Sendable {
        /// The lists it holds (``EnterpriseWatcherBridge/lists``).
        var lists: Set<Int> = []
        /// A write is under way: the next waits for its answer, so that they reach the server in order.
        var writing = false
        /// Changed while a write was under way: written again once that one is answered.
        var stale = false
        /// Lists to subscribe to, or to refresh, once the document as it stands now is written.
        var waiting: Set<Int> = []
    }

    /// How long a domain whose RLS or XCAP server refused is not asked for lists.
    static let rlsRetryDelay = TimeAmount.seconds(300)
    /// The user part of the list URIs the gateway makes (with a tag of its own after it).
    static let listUserPrefix = "gw-list-"
    /// What a list subscription accepts (RFC 4662 §5: the RLMI document and the members' PIDF).
    static let listAccept = [SIPBodyType.multipartRelated, SIPBodyType.rlmi, SIPBodyType.pidf]

    // MARK: - Members

    /// The domain of `resource` when its RLS takes lists now: named in `oma: rls`, and not
    /// refused within ``rlsRetryDelay``.
    func rlsDomain(of resource: String, now: NIODeadline) -> String? {
        guard !configuration.oma.rls.isEmpty, let host = (try? SIPURI(resource))?.host.lowercased(),
            configuration.oma.rls[host] != nil
        else { return nil }
        if bridge.refusesLists(in: host, now: now) { return nil }
        return host
    }

    /// Starts what a batched watch needs for the resources newly named: in a domain whose RLS
    /// takes lists, members of the watch's list there (made when two or more resources of the
    /// domain are named at once); each other resource with a leg of its own
    /// (``addOMALeg(to:key:resource:request:)``). A poll (Expires 0) fetches with legs of their own.
    mutating func addOMALegs(
        watch key: Int, resources: [String], request: SIPRequest, now: NIODeadline
    ) -> [Action] {
        guard let watch = bridge[watch: key] else { return [] }
        var out: [Action] = []
        var byDomain: [(domain: String, resources: [String])] = []
        let lists = !watch.single && watch.documentResource == nil && (try? request.headers.expires) != 0
        for resource in resources {
            guard lists, let domain = rlsDomain(of: resource, now: now) else {
                out += addOMALeg(watch: key, resource: resource, request: request)
                continue
            }
            if let index = byDomain.firstIndex(where: { $0.domain == domain }) {
                byDomain[index].resources.append(resource)
            } else {
                byDomain.append((domain, [resource]))
            }
        }
        for (domain, named) in byDomain {
            if named.count >= 2 || bridge[watch: key].flatMap({ list(of: $0, in: domain) }) != nil {
                out += addListMembers(watch: key, domain: domain, resources: named, request: request)
            } else {
                for resource in named { out += addOMALeg(watch: key, resource: resource, request: request) }
            }
        }
        return out
    }

    /// The list `watch` has in `domain`, if any (not one being ended).
    func list(of watch: EnterpriseWatch, in domain: String) -> Int? {
        for legKey in watch.legs.values {
            if let listKey = bridge[leg: legKey]?.list, let list = bridge[list: listKey], list.domain == domain,
                !list.closing
            {
                return listKey
            }
        }
        return nil
    }

    /// Adds `resources` to the watch's list in `domain` (made if it has none), each admitted as a
    /// leg of its own would be; the document is written again and the list subscribed or refreshed.
    private mutating func addListMembers(
        watch key: Int, domain: String, resources: [String], request: SIPRequest
    ) -> [Action] {
        guard let watch = bridge[watch: key] else { return [] }
        var listKey = list(of: watch, in: domain)
        var added = false
        for resource in resources {
            guard bridge[watch: key]?.legs[resource] == nil, admitResource(resource, watch: key) else { continue }
            let handling = policy(for: resource).subHandling(for: watch.watcher)
            guard handling == .allow || handling == .politeBlock, servedLocally(resource) == nil else {
                releaseQuotas(watch.watcher.uri, peer: watch.peer)
                if handling == .confirm { bridge.modifyWatch(key) { _ = $0.awaiting.insert(resource) } }
                continue
            }
            if listKey == nil {
                guard let from = try? request.headers.from else {
                    releaseQuotas(watch.watcher.uri, peer: watch.peer)
                    continue
                }
                listKey = newList(watch: key, watcher: watch.watcher.uri, from: from, domain: domain)
                if listKey == nil {
                    releaseQuotas(watch.watcher.uri, peer: watch.peer)
                    continue
                }
            }
            guard let listKey else { continue }
            let memberKey = takeKey()
            _ = apply(
                bridge.openLeg(
                    memberKey,
                    OMALeg(
                        watch: key, watcher: watch.watcher.uri, resource: resource, subscription: nil, list: listKey,
                        categories: nil, handling: handling, charged: charge(watch.peer))))
            bridge.modifyList(listKey) { $0.members[resource] = memberKey }
            bridge.modifyWatch(key) { $0.legs[resource] = memberKey }
            added = true
        }
        guard added, let listKey else { return [] }
        return bridge.writeListDocument(of: listKey)
    }

    /// A new list of watch `key` in `domain`, in its watcher's document; nil when the domain has no XCAP root.
    private mutating func newList(watch key: Int, watcher: String, from: SIPAddress, domain: String) -> Int? {
        let owner = WatcherIdentity.addressOfRecord(watcher) ?? watcher
        guard let document = listDocumentURI(watcher: owner, domain: domain) else { return nil }
        let listKey = takeKey()
        bridge.openList(
            listKey,
            OMAList(
                watch: key, watcher: owner, from: Self.legFrom(from), domain: domain,
                uri: "sip:\(Self.listUserPrefix)\(ids.tag())@\(domain)", document: document))
        return listKey
    }

    // MARK: - The document

    /// The URI of the rls-services document of `watcher` (its XUI) on the XCAP server of
    /// `domain`'s RLS (RFC 4826 §4.4.7: `index`); nil when the domain has none configured.
    func listDocumentURI(watcher: String, domain: String) -> String? {
        configuration.oma.rls[domain].map { GatewayConfiguration.XCAP.rlsServicesURI(root: $0, xui: watcher) }
    }

    /// The XCAP server answered the write of document `uri` (`status` nil: no answer). A 2xx
    /// lets the lists waiting for it be subscribed to or refreshed; a failure gives each of
    /// them up for subscriptions of its members' own (the domain is not asked for lists for
    /// ``rlsRetryDelay``). A document changed meanwhile is written again first.
    mutating func listDocumentAnswered(_ uri: String, status: Int?, now: NIODeadline) -> [Action] {
        let written = status.map { (200..<300).contains($0) } ?? false
        let (write, waiting) = bridge.documentAnswered(uri, written: written)
        var out = write
        for key in waiting {
            guard let list = bridge[list: key], !list.closing else { continue }
            guard !written else {
                out += subscribeList(key, now: now)
                continue
            }
            bridge.refuseLists(in: list.domain, until: now + Self.rlsRetryDelay)
            out += dissolveList(key, now: now)
        }
        return out
    }

    // MARK: - The subscription

    /// Subscribes to list `key`, or refreshes it when its members changed
    /// (``EnterpriseWatcherBridge/subscribeList(_:contact:expires:ids:now:)``).
    private mutating func subscribeList(_ key: Int, now: NIODeadline) -> [Action] {
        apply(
            bridge.subscribeList(
                key, contact: contacts[.oma], expires: configuration.subscriptions.defaultExpires, ids: &ids, now: now))
    }

    /// The final response to a SUBSCRIBE of list `key`. A refused initial SUBSCRIBE (or one
    /// whose transaction failed) gives the list up (``dissolveList(_:now:)``); a refresh that
    /// found the subscription gone (481) makes it again in a new dialog (RFC 6665 §4.1.2.2).
    mutating func omaListResponse(_ key: Int, _ response: SIPResponse, request: SIPRequest, now: NIODeadline)
        -> [Action]
    {
        guard bridge[list: key]?.subscription != nil else { return [] }
        let jitter = ids.jitter()
        guard
            let received = bridge.modifyList(
                key, { list in (list, list.subscription?.receive(response, now: now, jitter: jitter) ?? []) })
        else { return [] }
        let (list, actions) = received
        let ended = actions.contains { if case .ended = $0 { true } else { false } }
        if list.closing {
            if ended || response.statusCode >= 300 { removeOMAList(key) }
            return []
        }
        var out = legActions(actions, context: .omaList(key))
        if ended, response.statusCode == 481, (try? request.headers.to)?.tag != nil {
            return out + restartOMAList(key)
        }
        // RFC 4662 §4.1: an RLS answers a subscription to a list with `Require: eventlist`. A 2xx
        // without it was given by a server that took the URI for a single resource.
        if (200..<300).contains(response.statusCode), (try? request.headers.to)?.tag == nil,
            !((try? response.headers.require) ?? []).contains(where: { $0.lowercased() == Self.eventlist })
        {
            bridge.refuseLists(in: list.domain, until: now + Self.rlsRetryDelay)
            return out + dissolveList(key, now: now)
        }
        if ended {
            bridge.refuseLists(in: list.domain, until: now + Self.rlsRetryDelay)
            _ = apply(bridge.forgetListDialog(key))
            return out + dissolveList(key, now: now)
        }
        if response.statusCode >= 300, let end = list.subscription?.expiresAt {
            out.append(.schedule(.expiry(.omaList(key)), at: end))
        } else if (200..<300).contains(response.statusCode), list.changed {
            out += subscribeList(key, now: now)
        }
        return out
    }

    /// List `key` is made again in a new dialog (``EnterpriseWatcherBridge/restartList(_:ids:)``).
    mutating func restartOMAList(_ key: Int) -> [Action] { apply(bridge.restartList(key, ids: &ids)) }

    /// Gives list `key` up: each member gets a subscription of its own, keeping the state shown
    /// so far; the list is unsubscribed (if it was subscribed) and left out of its document.
    mutating func dissolveList(_ key: Int, now: NIODeadline) -> [Action] {
        guard let list = bridge[list: key] else { return [] }
        var out: [Action] = []
        for (resource, memberKey) in list.members.sorted(by: { $0.value < $1.value }) {
            guard let member = bridge.removeLeg(memberKey) else { continue }
            // The member's share of the watcher's quota passes to its own leg.
            guard let watcher = bridge[watch: member.watch]?.watcher else {
                release(member.held)
                continue
            }
            let leg = startOMALeg(
                watch: member.watch, resource: resource, watcher: watcher, from: list.from, charged: member.charged)
            if let leg {
                quotas.releasePresentityLeg(resource)  // counted again for the new leg
                bridge.modifyLeg(leg.key) {
                    $0.categories = member.categories
                    $0.pending = member.pending
                }
                out += leg.actions
            } else {
                release(member.held)
            }
            bridge.modifyWatch(member.watch) { $0.legs[resource] = leg?.key }
        }
        bridge.modifyList(key) { $0.members = [:] }
        return out + endOMAList(key, now: now)
    }

    /// Ends list `key` (``EnterpriseWatcherBridge/endList(_:now:)``).
    mutating func endOMAList(_ key: Int, now: NIODeadline) -> [Action] { apply(bridge.endList(key, now: now)) }

    /// Forgets list `key` and its dialog.
    mutating func removeOMAList(_ key: Int) { _ = apply(bridge.closeList(key)) }

    // MARK: - Notifications

    /// A NOTIFY of list `key` (RFC 4662 §5). Its body is read whole before the dialog takes it:
    /// one that is not a readable RLMI list for this list, with readable PIDF parts, or whose
    /// version is not above the last one taken (§5.6: discarded), is refused with 400 and a
    /// Warning, and nothing changes. A partial notification that skips versions is taken, and
    /// the list refreshed for full state (§5.6.2); so is one with no full state taken before it.
    /// A resource not in the list is left out (named in a Warning of the 200). What changed
    /// reaches the watcher in one notification of its batch dialog.
    mutating func omaListNotify(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline) -> [Action] {
        guard let list = bridge[list: key], list.subscription != nil else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
        func refuse(_ text: String) -> [Action] {
            [.respond(id, SIPResponse(replyingTo: request, statusCode: 400, headers: [(.warning, warning(text))]))]
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
            bridge.modifyList(key) { $0.subscription?.receive(notify: request, now: now, jitter: jitter) ?? [] } ?? []
        var out: [Action] = []
        var ended: String?
        var taken = false
        var pending = false
        for action in actions {
            switch action {
            case .respond(var response):
                taken = response.statusCode == 200
                if taken, let notification { response = warningOfNonMembers(response, in: notification, of: list) }
                out.append(.respond(id, response))
            case .ended(let reason): ended = reason
            case .deliver(let delivered): pending = delivered.state.state == .pending
            default: out += legActions([action], context: .omaList(key))
            }
        }
        if taken, let notification { bridge.modifyList(key) { $0.version = notification.list.version } }
        if list.closing {
            if ended != nil { removeOMAList(key) }
            return out
        }
        if let ended {
            // RFC 6665 §4.1.3: after these two the subscription may be made again at once.
            if ended == "deactivated" || ended == "timeout" { return out + restartOMAList(key) }
            bridge.refuseLists(in: list.domain, until: now + Self.rlsRetryDelay)
            _ = apply(bridge.forgetListDialog(key))
            return out + dissolveList(key, now: now)
        }
        if needsFullState { out += bridge.refreshList(key, now: now) }
        guard taken else { return out }
        if let notification { return out + membersNotified(key, notification, now: now) }
        return pending ? out + listPending(key, now: now) : out
    }

    /// Why an RLMI notification cannot be taken for `list` (RFC 4662 §5.6): it is another list's,
    /// or its version is not above the last one taken (discarded). nil: it can.
    private static func notificationProblem(_ read: ListNotification, for list: OMAList) -> String? {
        guard sameAddress(read.list.uri, list.uri) else {
            return "RLMI list \(read.list.uri) is not \(list.uri)"
        }
        if let last = list.version, read.list.version <= last {
            return "RLMI version \(read.list.version) is not above \(last)"
        }
        return nil
    }

    /// The 200 to a list NOTIFY, with a Warning naming the resources of `notification` that are
    /// not members of `list` (left out), if there are any.
    private func warningOfNonMembers(_ response: SIPResponse, in notification: ListNotification, of list: OMAList)
        -> SIPResponse
    {
        var response = response
        let unknown = notification.list.resources.map(\.uri).filter { list.member($0) == nil }
        if !unknown.isEmpty {
            response.headers.append(.warning, warning("not in the list: \(unknown.joined(separator: " "))"))
        }
        return response
    }

    /// The list subscription itself waits for authorization (RFC 6665 §4.1.3, RFC 4662 §4.4):
    /// its members with no state yet are shown pending, as a leg of their own would be.
    private mutating func listPending(_ key: Int, now: NIODeadline) -> [Action] {
        guard let list = bridge[list: key] else { return [] }
        var changes: [MemberChange] = []
        for memberKey in list.members.values {
            guard bridge[leg: memberKey]?.categories == nil,
                let (leg, wasPending) = bridge.modifyLeg(
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
        return watchNotified(list.watch, changes, now: now)
    }

    /// A Warning header value (RFC 3261 §20.43: 399, miscellaneous) from this gateway.
    private func warning(_ text: String) -> String {
        let agent = contacts[.oma]?.uri.host ?? "presence-gateway"
        return "399 \(agent) \"\(text.replacingOccurrences(of: "\"", with: "'"))\""
    }

    /// Whether two URIs name the same address of record (as written, when not one).
    static func sameAddress(_ a: String, _ b: String) -> Bool {
        (WatcherIdentity.addressOfRecord(a) ?? a) == (WatcherIdentity.addressOfRecord(b) ?? b)
    }

    /// Takes the members' state from a notification of list `key`, then tells their watcher.
    private mutating func membersNotified(_ key: Int, _ notification: ListNotification, now: NIODeadline)
        -> [Action]
    {
        guard let list = bridge[list: key] else { return [] }
        var changes: [MemberChange] = []
        var sphereChanges: [(presentity: String, before: String?, shown: Int)] = []
        for resource in notification.list.resources {
            guard let memberKey = list.member(resource.uri),
                let change = memberNotified(memberKey, resource, notification, sphereChanges: &sphereChanges)
            else { continue }
            changes.append(change)
        }
        var out = watchNotified(list.watch, changes, now: now)
        for change in changes where change.ended != nil { out += apply(bridge.leaveList(change.key, now: now)) }
        for (presentity, before, shown) in sphereChanges {
            out += sphereChanged(of: presentity, from: before, shown: shown, now: now)
        }
        return out
    }

    /// Takes one member's instance from a list notification into its leg (RFC 4662 §5.3): active
    /// with its state, pending, or terminated (then it leaves its watch); nil when it has no
    /// leg or its instance says none of these. A change of its presentity's sphere is added
    /// to `sphereChanges`, and this state is shown under the rules of that sphere.
    private mutating func memberNotified(
        _ memberKey: Int, _ resource: RLMIList.Resource, _ notification: ListNotification,
        sphereChanges: inout [(presentity: String, before: String?, shown: Int)]
    ) -> MemberChange? {
        guard let leg = bridge[leg: memberKey] else { return nil }
        var viewChanged = false
        let update: (inout OMALeg) -> Void
        if let active = resource.instances.first(where: { $0.state == .active }) {
            var handling: SubHandling?
            var shown: CategoriesDocument?
            if let pidf = active.cid.flatMap({ notification.documents[ListNotification.contentID($0)] }) {
                if let sphere = bridge.noteSphere(of: leg, in: pidf, views) {
                    sphereChanges.append((sphere.presentity, sphere.before, memberKey))
                    if let watcher = bridge[watch: leg.watch]?.watcher {
                        handling = policy(for: leg.resource).subHandling(for: watcher) == .allow ? .allow : .politeBlock
                    }
                }
                shown = bridge.shownCategories(pidf, leg: leg, views)
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
            let changed = bridge.modifyLeg(
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
        var leg: OMALeg
        var wasPending: Bool
        var viewChanged = false
        /// Its instance was terminated, with this reason: it leaves the watch.
        var ended: String?
    }

    /// The watcher of a list learns what its notification changed: before the watcher was
    /// answered, it is once every leg has spoken; after, one change goes out as a leg's would,
    /// and several in one notification (``BatchCategorySubscription/resourcesChanged(_:boundary:now:)``).
    private mutating func watchNotified(_ watchKey: Int, _ changes: [MemberChange], now: NIODeadline) -> [Action] {
        guard let watch = bridge[watch: watchKey] else { return [] }
        guard let subscription = watch.subscription else {
            bridge.modifyWatch(watchKey) { watch in
                for change in changes where change.ended != nil { watch.legs[change.leg.resource] = nil }
            }
            guard let watch = bridge[watch: watchKey], bridge.allLegsReported(watch) else { return [] }
            return answerEnterpriseWatch(watchKey, now: now)
        }
        var updates: [BatchCategorySubscription.ResourceChange] = []
        for change in changes {
            let uri = change.leg.resource
            guard let categories = subscription.resources[uri] else { continue }
            if let reason = change.ended {
                let instance = RLMIList.Instance(state: .terminated, reason: Self.enterpriseReason(reason))
                updates.append(.init(uri: uri, instance: instance))
            } else if change.leg.handling == .allow, change.wasPending != change.leg.pending {
                if change.leg.pending {
                    updates.append(.init(uri: uri, instance: Self.pendingInstance(uri)))
                } else {
                    let body = bridge.view(
                        of: uri, leg: change.leg, watcher: watch.watcher, categories: categories, views
                    )
                    .serialized()
                    updates.append(.init(uri: uri, instance: RLMIList.Instance(state: .active, cid: uri), body: body))
                }
            } else if change.viewChanged, !Self.reflectsPending(change.leg) {
                let body = bridge.view(of: uri, leg: change.leg, watcher: watch.watcher, categories: categories, views)
                    .serialized()
                guard watch.lastSent[uri] != BodyDigest(body) else { continue }
                updates.append(.init(uri: uri, body: body))
            }
        }
        let alone = updates.count == 1 && updates[0].instance == nil
        let boundary = updates.isEmpty || alone ? "" : ids.boundary()
        let actions = bridge.modifyWatch(watchKey) { $0.show(updates, boundary: boundary, now: now) }
        return apply(actions ?? [], context: .enterpriseWatch(watchKey), now: now)
    }
}

extension GatewayCore.OMAList {
    /// The leg of the member `uri` names (as written, or by its address of record).
    func member(_ uri: String) -> Int? {
        if let key = members[uri] { return key }
        guard let address = WatcherIdentity.addressOfRecord(uri) else { return nil }
        return members.first { WatcherIdentity.addressOfRecord($0.key) == address }?.value
    }
}

/// The body of a list notification (RFC 4662 §5): `multipart/related` (RFC 2387) whose root part
/// (`start`, else the first) is the RLMI document, and a part for each resource instance with
/// state, named by its `cid`. Every PIDF part is read here, so that a part that does not parse
/// refuses the whole notification.
struct ListNotification {
    var list: RLMIList
    /// The PIDF documents of the parts, by Content-ID (without angle brackets).
    var documents: [String: PIDFDocument]

    struct Problem: Error {
        var text: String
    }

    init(_ request: SIPRequest) throws(Problem) {
        guard let type = (try? request.headers.contentType) ?? nil else {
            throw Problem(text: "no readable Content-Type")
        }
        guard type.mediaType == SIPBodyType.multipartRelated else {
            throw Problem(text: "\(type.mediaType) is not multipart/related (RFC 4662 §5)")
        }
        guard let boundary = type.boundary else { throw Problem(text: "multipart/related without a boundary") }
        let body: MultipartBody
        do { body = try MultipartBody(parsing: request.body, boundary: boundary) } catch {
            throw Problem(text: "\(error)")
        }
        let start = type.parameters.value("start").map(Self.contentID)
        let root =
            start.flatMap { id in body.parts.firstIndex { $0.header("Content-ID").map(Self.contentID) == id } }
            ?? (start == nil ? body.parts.indices.first : nil)
        guard let root else { throw Problem(text: "no root part \(start ?? "")") }
        guard body.parts[root].mediaType == SIPBodyType.rlmi else {
            throw Problem(text: "the root part is not application/rlmi+xml")
        }
        do { list = try RLMIList(bytes: body.parts[root].body) } catch {
            throw Problem(text: "RLMI: \(error)")
        }
        documents = [:]
        for (index, part) in body.parts.enumerated() where index != root {
            guard let id = part.header("Content-ID").map(Self.contentID), part.mediaType == SIPBodyType.pidf
            else { continue }
            do { documents[id] = try PIDFDocument(bytes: part.body) } catch {
                throw Problem(text: "part \(id): \(error)")
            }
        }
    }

    /// A Content-ID or `cid` without quotes, angle brackets (RFC 2392) or `cid:` scheme.
    static func contentID(_ text: String) -> String {
        var id = trimmed(Substring(text))
        if id.count >= 2, id.first == "\"", id.last == "\"" { id = id.dropFirst().dropLast() }
        if id.first == "<", id.last == ">" { id = id.dropFirst().dropLast() }
        if id.prefix(4).lowercased() == "cid:" { id = id.dropFirst(4) }
        return String(id)
    }

    /// `text` without leading and trailing spaces and tabs (a header value's LWS).
    private static func trimmed(_ text: Substring) -> Substring {
        var text = text
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}
