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
        let terms = Self.withoutRateControl(terms)
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
        return out + answerListIfReported(key, now: now) + [.schedule(.firstAnswer(.omaWatch(key)), at: now + wait)]
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

    /// A member's state changed (or arrived): an answered list sends it alone when its part
    /// changed; a waiting one is answered once every member reported.
    mutating func listMemberChanged(_ key: Int, member: String, now: NIODeadline) -> [Action] {
        guard let (watch, _) = resourceList(key) else { return [] }
        if watch.pending != nil { return answerListIfReported(key, now: now) }
        return notifyList(key, only: member, now: now)
    }

    /// A member's back-end watch ended (the enterprise rejected it, or its dialog ended): it
    /// stays listed, `terminated` with `reason` (RFC 4662 §4.5, §5.5).
    mutating func listMemberEnded(_ key: Int, member watchKey: Int, reason: String, now: NIODeadline) -> [Action] {
        let ended = lists.modify(key) { list -> String? in
            guard let index = list.members.firstIndex(where: { $0.watch == watchKey }) else { return nil }
            list.members[index].watch = nil
            list.members[index].ended = reason
            return list.members[index].uri
        }
        guard let member = ended ?? nil else { return [] }
        return listMemberChanged(key, member: member, now: now)
    }

    /// Answers a waiting list watch when each member has state or ended.
    private mutating func answerListIfReported(_ key: Int, now: NIODeadline) -> [Action] {
        guard let (_, list) = resourceList(key),
            list.members.allSatisfy({ member in member.watch.map { enterpriseState(of: $0) != nil } ?? true })
        else { return [] }
        return answerList(key, now: now)
    }

    /// Answers a waiting list watch with full state: members without a notification yet are
    /// listed without an instance (RFC 4662 §4.5), and their state follows when it comes.
    mutating func answerList(_ key: Int, now: NIODeadline) -> [Action] {
        guard let (watch, _) = resourceList(key), let pending = watch.pending else { return [] }
        let (body, type) = listBody(key, only: nil, bodyType: pending.terms.bodyType)
        notifier.modify(key) { $0.pending = nil }
        do {
            let (subscription, accepted) = try NotifierSubscription.accept(
                pending.request, terms: pending.terms, status: .active, localTag: ids.tag(),
                contact: contact(.oma, for: watch.peer, fallback: pending.request.uri), body: body, bodyType: type,
                responseHeaders: [(.require, Self.eventlist)], now: now)
            return apply(notifier.answer(key, subscription)) + [.cancel(.firstAnswer(.omaWatch(key)))]
                + apply(Self.requiringEventlist(accepted), context: .omaWatch(key), now: now, id: pending.id)
        } catch {
            let gone = forgetOMAWatch(key)
            return [
                .respond(
                    pending.id,
                    SIPResponse(
                        replyingTo: pending.request, statusCode: 400, reasonPhrase: "\(error.code)", toTag: ids.tag()))
            ] + (gone.map { detachOMAWatch($0, now: now) } ?? [])
        }
    }

    /// A refresh of a list subscription, answered with full state (RFC 4662 §5.2: "as must the
    /// first NOTIFY sent after receipt of a SUBSCRIBE request").
    mutating func refreshListWatch(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline)
        -> [Action]
    {
        guard let sub = notifier[key]?.subscription else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
        switch SubscriptionTerms.evaluate(request, registry: registry, negotiated: sub.terms.bodyType) {
        case .reject(let status, let reason, let headers):
            return refuseTerms(request, id: id, status, reason, headers, initial: false)
        case .accept(let asked):
            let terms = Self.withoutRateControl(asked)
            guard request.body.isEmpty else {
                return [.respond(id, SIPResponse(replyingTo: request, statusCode: 415, headers: [(.accept, "")]))]
            }
            let (body, type) = listBody(key, only: nil, bodyType: terms.bodyType)
            let actions = notifier.modify(key) {
                $0.subscription?.refresh(
                    request, terms: terms, body: body, bodyType: type, responseHeaders: [(.require, Self.eventlist)],
                    now: now)
            }
            return apply(
                Self.requiringEventlist(actions.flatMap { $0 } ?? []), context: .omaWatch(key), now: now, id: id)
        }
    }

    /// Sends `member`'s part alone, when it changed since it was last sent.
    private mutating func notifyList(_ key: Int, only member: String, now: NIODeadline) -> [Action] {
        guard let bodyType = resourceList(key)?.watch.subscription?.terms.bodyType else { return [] }
        let (body, type) = listBody(key, only: member, bodyType: bodyType)
        guard !body.isEmpty else { return [] }
        return listStateChanged(key, body: body, type: type, now: now)
    }

    /// Sends list watch `key` the notification `body` of `type`.
    private mutating func listStateChanged(_ key: Int, body: [UInt8], type: String, now: NIODeadline) -> [Action] {
        let actions = notifier.modify(key) {
            $0.subscription?.stateChanged(body: body, bodyType: type, headers: [(.require, Self.eventlist)], now: now)
        }
        return apply(actions.flatMap { $0 } ?? [], context: .omaWatch(key), now: now)
    }

    /// The list's next notification body (RFC 4662 §5) and its type
    /// (``ResourceListServer/body(of:uri:only:parts:bodyType:answered:ids:)``), with the
    /// members' parts rendered here from the enterprise state their watches know.
    private mutating func listBody(_ key: Int, only member: String?, bodyType: String) -> (body: [UInt8], type: String)
    {
        guard let watch = notifier[key] else { return ([], bodyType) }
        var parts: ResourceListServer.Parts = [:]
        for memberKey in lists.memberWatches(of: key, only: member) {
            if let state = enterpriseState(of: memberKey) { parts[memberKey] = render(state, as: bodyType) }
        }
        // Through the notifier's stored property: `lists` is computed, and `ids` is written too.
        return notifier.lists.body(
            of: key, uri: watch.resource, only: member, parts: parts, bodyType: bodyType,
            answered: watch.pending == nil, ids: &ids)
    }

    /// Ends a list subscription with `reason`: its final NOTIFY carries full state too (RFC 4662
    /// §4.5: once RLMI was sent, every NOTIFY of the subscription carries it).
    mutating func terminateList(_ key: Int, reason: String, retryAfter: UInt32? = nil, now: NIODeadline) -> [Action] {
        guard let sub = resourceList(key)?.watch.subscription, !sub.isTerminated else { return [] }
        let (body, type) = listBody(key, only: nil, bodyType: sub.terms.bodyType)
        let terminated = notifier.modify(key) {
            $0.subscription?.terminate(reason: reason, retryAfter: retryAfter, body: body, now: now)
        }
        let actions = Self.requiringEventlist(terminated.flatMap { $0 } ?? []).map { action in
            guard case .notify(var request) = action else { return action }
            request.headers.set(.contentType, type)
            return NotifierSubscription.Action.notify(request)
        }
        return apply(actions, context: .omaWatch(key), now: now)
    }

    /// `terms` without RFC 6446 rate control: not applied to a list's notifications, and so not
    /// given back in their Subscription-State, which tells the watcher so (RFC 6446 §5.2).
    static func withoutRateControl(_ terms: SubscriptionTerms) -> SubscriptionTerms {
        var plain = terms
        plain.maxRate = nil
        plain.minRate = nil
        plain.adaptiveMinRate = nil
        return plain
    }

    /// RFC 4662 §4.1: every NOTIFY of a list subscription carries `Require: eventlist`.
    static func requiringEventlist(_ actions: [NotifierSubscription.Action]) -> [NotifierSubscription.Action] {
        actions.map { action in
            guard case .notify(var request) = action else { return action }
            request.headers.append(.require, eventlist)
            return .notify(request)
        }
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
            guard let bodyType = watch.subscription?.terms.bodyType else { continue }
            let (body, type) = listBody(key, only: nil, bodyType: bodyType)
            out += listStateChanged(key, body: body, type: type, now: now)
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
