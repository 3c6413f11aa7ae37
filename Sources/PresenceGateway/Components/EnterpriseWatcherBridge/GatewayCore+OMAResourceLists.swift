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
///
/// Here is the coordinator's part: which resources become members and their admission (the
/// watcher's quota and its sender's charge). The list's document, subscription and
/// notifications are the bridge's steps (`EnterpriseWatcherBridge+OMALists`).
extension GatewayCore {
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

    /// The XCAP server answered the write of document `uri`
    /// (``EnterpriseWatcherBridge/listDocumentAnswered(_:status:_:ids:now:)``).
    mutating func listDocumentAnswered(_ uri: String, status: Int?, now: NIODeadline) -> [Action] {
        apply(bridge.listDocumentAnswered(uri, status: status, views, ids: &ids, now: now))
    }

    // MARK: - The subscription

    /// The final response to a SUBSCRIBE of list `key`
    /// (``EnterpriseWatcherBridge/listResponse(_:_:request:_:ids:now:)``).
    mutating func omaListResponse(_ key: Int, _ response: SIPResponse, request: SIPRequest, now: NIODeadline)
        -> [Action]
    {
        apply(bridge.listResponse(key, response, request: request, views, ids: &ids, now: now))
    }

    /// List `key` is made again in a new dialog (``EnterpriseWatcherBridge/restartList(_:ids:)``).
    mutating func restartOMAList(_ key: Int) -> [Action] { apply(bridge.restartList(key, ids: &ids)) }

    /// Gives list `key` up (``EnterpriseWatcherBridge/dissolveList(_:_:ids:now:)``).
    mutating func dissolveList(_ key: Int, now: NIODeadline) -> [Action] {
        apply(bridge.dissolveList(key, views, ids: &ids, now: now))
    }

    /// Ends list `key` (``EnterpriseWatcherBridge/endList(_:now:)``).
    mutating func endOMAList(_ key: Int, now: NIODeadline) -> [Action] { apply(bridge.endList(key, now: now)) }

    /// Forgets list `key` and its dialog.
    mutating func removeOMAList(_ key: Int) { _ = apply(bridge.closeList(key)) }

    // MARK: - Notifications

    /// A NOTIFY of list `key` (``EnterpriseWatcherBridge/listNotify(_:_:id:_:ids:now:)``); the
    /// members' sphere changes it announced decide every watcher of them again.
    mutating func omaListNotify(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline) -> [Action] {
        let (output, sphereChanges) = bridge.listNotify(key, request, id: id, views, ids: &ids, now: now)
        var out = apply(output)
        for (presentity, before, shown) in sphereChanges {
            out += sphereChanged(of: presentity, from: before, shown: shown, now: now)
        }
        return out
    }

    /// Whether two URIs name the same address of record (as written, when not one).
    static func sameAddress(_ a: String, _ b: String) -> Bool {
        (WatcherIdentity.addressOfRecord(a) ?? a) == (WatcherIdentity.addressOfRecord(b) ?? b)
    }

}
