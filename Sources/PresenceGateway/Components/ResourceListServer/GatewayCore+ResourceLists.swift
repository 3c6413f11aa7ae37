import Multipart
public import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack
import _GatewayInternals

/// Resource lists served to OMA watchers (RFC 4662; docs/flows.md, "Resource lists"): the
/// gateway is the resource list server of the lists it is configured with. A SUBSCRIBE to a list
/// URI becomes one OMA watch for the list, whose dialog is answered and refreshed like any other
/// (flow 2), and one back-end watch per member, with no dialog of its own, which joins the
/// watcher's batched category dialogs toward the enterprise as a single watch would. Each
/// notification of the list is `multipart/related` (RFC 4662 §5): the RLMI part, then one part
/// per active member in the negotiated format. The first one and each refresh's carry full
/// state; a member's change is sent alone, in a partial notification one version higher.
extension GatewayCore {
    struct ResourceList: Codable, Journaled {
        struct Member: Codable, Equatable, Sendable {
            var uri: String
            /// Its back-end watch; nil once that ended, and `ended` says why.
            var watch: Int?
            var ended: String?
            /// The RLMI instance id of its back-end watch (RFC 4662 §5.5: unique within the
            /// resource), kept when that ends, so the subscriber can tell which instance did.
            var instance: String
            /// What its part last said.
            @Transient var sent: BodyDigest? = nil
        }

        var members: [Member]
        /// The RLMI version of the last notification (RFC 4662 §5.2: 0 first, then one higher
        /// in each).
        @BlockedVersion var version: UInt32 = 0
    }

    /// The option tag of RFC 4662 §4.1.
    static let eventlist = "eventlist"

    /// A SUBSCRIBE to the list `list` (RFC 4662 §4.1, §4.4): refused 421 without `Supported:
    /// eventlist`, 406 when its Accept leaves out `multipart/related` or `application/rlmi+xml`
    /// (§4.3); else each member is watched and the watcher answered once they all reported, or
    /// after the piggyback wait.
    mutating func newListWatch(
        _ request: SIPRequest, id: ServerRequestID, watcher: WatcherIdentity, peer: DialogPeer?, list: String,
        members: [String], terms: SubscriptionTerms, now: NIODeadline
    ) -> [Action] {
        func refuse(_ status: Int, _ reason: String, _ headers: SIPHeaders = []) -> [Action] {
            [
                .respond(
                    id,
                    SIPResponse(
                        replyingTo: request, statusCode: status, reasonPhrase: reason, toTag: ids.tag(),
                        headers: headers))
            ]
        }
        guard (try? request.headers.supported)?.contains(Self.eventlist) == true else {
            return refuse(421, "Extension Required", [(.require, Self.eventlist)])
        }
        guard Self.acceptsRLMI(request) else {
            return refuse(
                406, "Not Acceptable",
                [(.accept, "\(SIPBodyType.multipartRelated), \(SIPBodyType.rlmi), \(terms.bodyType)")])
        }
        // An event filter (RFC 4660) would apply to each member: not offered for lists.
        guard request.body.isEmpty else { return refuse(415, "Unsupported Media Type", [(.accept, "")]) }
        // The list is one dialog of its sender's; each member counts against the watcher's quota
        // and its sender's as its own subscription would (docs/security.md, "A fan-out is charged
        // to its sender"), so a list as long as `resources-per-batch` fits a watcher's quota.
        guard takePeerQuota(peer) else { return overQuota(request, id: id) }
        var taken = 0
        while taken < members.count, takeQuotas(watcher.uri, peer: peer) { taken += 1 }
        guard taken == members.count else {
            for _ in 0..<taken { releaseQuotas(watcher.uri, peer: peer) }
            releasePeerQuota(peer)
            return overQuota(request, id: id)
        }
        let key = takeKey()
        let terms = OMAWatcherNotifier.withoutRateControl(terms)
        let watch = OMAWatch(watcher: watcher, resource: list, pending: (request, id, terms), peer: peer)
        var resourceList = ResourceList(members: [])
        var out: [Action] = []
        for member in members {
            let memberKey = takeKey()
            notifier.open(memberKey, OMAWatch(watcher: watcher, resource: member, peer: peer))
            resourceList.members.append(
                ResourceList.Member(uri: member, watch: memberKey, instance: String(memberKey)))
        }
        notifier.open(key, watch)
        lists.open(key, resourceList)
        for case let memberKey? in resourceList.members.map(\.watch) { out += attach(memberKey, now: now) }
        let wait = TimeAmount.milliseconds(Int64(configuration.subscriptions.piggybackWaitMilliseconds))
        let reported = notifier.answerListIfReported(key, legPool, settings, ids: &ids, now: now)
        return out + applyOMAWatch(reported, key, now: now) + [.schedule(.firstAnswer(.omaWatch(key)), at: now + wait)]
    }

    /// RFC 4662 §4.3: a list subscriber lists `multipart/related` and `application/rlmi+xml` in
    /// Accept.
    static func acceptsRLMI(_ request: SIPRequest) -> Bool {
        guard let ranges = try? request.headers.accept else { return false }
        func allows(_ type: String, _ subtype: String) -> Bool {
            ranges.contains { $0.matches(type: type, subtype: subtype) && $0.q > 0 }
        }
        return allows("multipart", "related") && allows("application", "rlmi+xml")
    }

    /// The list watch `key`, when it is one.
    func resourceList(_ key: Int) -> (watch: OMAWatch, list: ResourceList)? {
        guard let watch = notifier[key], let list = lists[key] else { return nil }
        return (watch, list)
    }

    /// Ends list subscription `key` with `reason`
    /// (``OMAWatcherNotifier/terminateList(_:reason:retryAfter:_:_:ids:now:)``).
    mutating func terminateList(_ key: Int, reason: String, retryAfter: UInt32? = nil, now: NIODeadline) -> [Action] {
        let ended = notifier.terminateList(
            key, reason: reason, retryAfter: retryAfter, legPool, settings, ids: &ids, now: now)
        return applyOMAWatch(ended, key, now: now)
    }

    /// Replaces the served lists (those of an rls-services document fetched from XCAP changed,
    /// or its first answer came): every live list is brought in line, as after a reload.
    public mutating func replaceResourceLists(_ lists: [String: [String]], awaiting: Bool, now: NIODeadline)
        -> [Action]
    {
        configuration.awaitingResourceLists = awaiting
        guard lists != configuration.resourceLists else { return [] }
        configuration.resourceLists = lists
        return resourceListsChanged(now: now)
    }

    /// A reload changed `resource-lists:`. A live list that is gone ends (`noresource`); one
    /// whose members changed drops the members no longer in it, watches the new ones, and sends
    /// full state, which the watcher takes in place of what it had (RFC 4662 §5.6.1).
    mutating func resourceListsChanged(now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in notifier.keys.sorted() {
            guard let (watch, list) = resourceList(key) else { continue }
            guard let members = configuration.resourceLists[watch.resource] else {
                out += watch.pending == nil ? terminateList(key, reason: "noresource", now: now) : []
                continue
            }
            guard list.members.map(\.uri) != members else { continue }
            let kept = Set(members)
            out += detachMembers(list.members.filter { !kept.contains($0.uri) }, now: now)
            let present = Set(list.members.map(\.uri))
            var new: [ResourceList.Member] = []
            var added: [Int] = []
            for uri in members where !present.contains(uri) {
                guard takeQuota(watch.watcher.uri) else {
                    quotas.refusals.watcherQuota += 1
                    new.append(.init(uri: uri, ended: "rejected", instance: "refused"))
                    continue
                }
                let memberKey = takeKey()
                notifier.open(memberKey, OMAWatch(watcher: watch.watcher, resource: uri))
                new.append(.init(uri: uri, watch: memberKey, instance: String(memberKey)))
                added.append(memberKey)
            }
            // The configured order.
            let order = Dictionary(uniqueKeysWithValues: members.enumerated().map { ($1, $0) })
            lists.modify(key) { list in
                list.members.removeAll { !kept.contains($0.uri) }
                list.members += new
                list.members.sort { order[$0.uri, default: 0] < order[$1.uri, default: 0] }
            }
            for memberKey in added { out += attach(memberKey, now: now) }
            out += applyOMAWatch(notifier.listChanged(key, legPool, settings, ids: &ids, now: now), key, now: now)
        }
        return out
    }

    /// The member watches of a list watch that ends, forgotten with it: their resources leave
    /// their enterprise legs.
    mutating func detachMembers(_ members: [ResourceList.Member], now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for member in members {
            if let key = member.watch, let gone = forgetOMAWatch(key) { out += detachOMAWatch(gone, now: now) }
        }
        return out
    }
}
