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
