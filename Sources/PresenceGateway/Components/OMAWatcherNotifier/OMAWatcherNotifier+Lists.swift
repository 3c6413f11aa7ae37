import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// A list watch's dialog (RFC 4662; the list server's entries, ``ResourceListServer``, are facets
/// of the notifier's watches): answered once every member reported, or after the piggyback
/// wait; refreshed and ended with full state; a member's change sent alone. Its members' parts
/// are rendered from the enterprise state their legs hold, read from the leg pool the
/// coordinator lends (`pool`); each step returns a ``WatchStep``.
extension OMAWatcherNotifier {
    /// The enterprise state the leg of watch `key` holds for its resource, in `pool`; nil while
    /// it has no leg or the leg no notification yet.
    func enterpriseState(of key: Int, in pool: EnterpriseLegPool) -> CategoriesDocument? {
        guard let watch = self[key] else { return nil }
        return watch.leg.flatMap { pool[$0]?.categories[watch.resource] }
    }

    /// A member's state changed (or arrived): an answered list sends it alone when its part
    /// changed; a waiting one is answered once every member reported.
    mutating func listMemberChanged(
        _ key: Int, member: String, _ pool: EnterpriseLegPool, _ settings: CoreSettings, ids: inout IdentifierSource,
        now: NIODeadline
    ) -> WatchStep {
        guard let watch = self[key], lists.isList(key) else { return (ComponentOutput(), false) }
        if watch.pending != nil { return answerListIfReported(key, pool, settings, ids: &ids, now: now) }
        guard let bodyType = watch.subscription?.terms.bodyType else { return (ComponentOutput(), false) }
        let (body, type) = listBody(key, only: member, bodyType: bodyType, pool, settings, ids: &ids)
        guard !body.isEmpty else { return (ComponentOutput(), false) }
        return listStateChanged(key, body: body, type: type, now: now)
    }

    /// A member's back-end watch `watchKey` ended (the enterprise rejected it, or its dialog
    /// ended): it stays listed, `terminated` with `reason` (RFC 4662 §4.5, §5.5).
    mutating func listMemberEnded(
        _ key: Int, member watchKey: Int, reason: String, _ pool: EnterpriseLegPool, _ settings: CoreSettings,
        ids: inout IdentifierSource, now: NIODeadline
    ) -> WatchStep {
        let ended = lists.modify(key) { list -> String? in
            guard let index = list.members.firstIndex(where: { $0.watch == watchKey }) else { return nil }
            list.members[index].watch = nil
            list.members[index].ended = reason
            return list.members[index].uri
        }
        guard let member = ended ?? nil else { return (ComponentOutput(), false) }
        return listMemberChanged(key, member: member, pool, settings, ids: &ids, now: now)
    }

    /// Answers waiting list watch `key` when each member has state or ended.
    mutating func answerListIfReported(
        _ key: Int, _ pool: EnterpriseLegPool, _ settings: CoreSettings, ids: inout IdentifierSource, now: NIODeadline
    ) -> WatchStep {
        guard let list = lists[key],
            list.members.allSatisfy({ member in member.watch.map { enterpriseState(of: $0, in: pool) != nil } ?? true })
        else { return (ComponentOutput(), false) }
        return answerList(key, pool, settings, ids: &ids, now: now)
    }

    /// Answers waiting list watch `key` with full state: members without a notification yet are
    /// listed without an instance (RFC 4662 §4.5), and their state follows when it comes. A
    /// SUBSCRIBE that cannot make a dialog is refused 400, and the watch removed.
    mutating func answerList(
        _ key: Int, _ pool: EnterpriseLegPool, _ settings: CoreSettings, ids: inout IdentifierSource, now: NIODeadline
    ) -> WatchStep {
        guard let watch = self[key], lists.isList(key), let pending = watch.pending else {
            return (ComponentOutput(), false)
        }
        let (body, type) = listBody(key, only: nil, bodyType: pending.terms.bodyType, pool, settings, ids: &ids)
        modify(key) { $0.pending = nil }
        return accept(key, pending, peer: watch.peer, body: body, type: type, full: nil, settings, ids: &ids, now: now)
    }

    /// A refresh of list subscription `key`, answered with full state (RFC 4662 §5.2: "as must
    /// the first NOTIFY sent after receipt of a SUBSCRIBE request"); terms it cannot take are
    /// refused in the dialog, and an event filter (not offered for lists) 415.
    mutating func refreshList(
        _ key: Int, _ request: SIPRequest, id: GatewayCore.ServerRequestID, _ pool: EnterpriseLegPool,
        _ settings: CoreSettings, ids: inout IdentifierSource, now: NIODeadline
    ) -> WatchStep {
        let terms: SubscriptionTerms
        switch askedTerms(key, request, id: id, settings) {
        case .refused(let step): return step
        case .terms(let asked): terms = Self.withoutRateControl(asked)
        }
        guard request.body.isEmpty else {
            let refusal = SIPResponse(replyingTo: request, statusCode: 415, headers: [(.accept, "")])
            return (ComponentOutput(actions: [.respond(id, refusal)]), false)
        }
        let (body, type) = listBody(key, only: nil, bodyType: terms.bodyType, pool, settings, ids: &ids)
        let actions = modify(key) {
            $0.subscription?.refresh(
                request, terms: terms, body: body, bodyType: type,
                responseHeaders: [(.require, GatewayCore.eventlist)], now: now)
        }
        return watchActions(Self.requiringEventlist(actions.flatMap { $0 } ?? []), key, now: now, id: id)
    }

    /// Sends answered list watch `key` its full state (its members changed: RFC 4662 §5.6.1,
    /// the watcher takes it in place of what it had).
    mutating func listChanged(
        _ key: Int, _ pool: EnterpriseLegPool, _ settings: CoreSettings, ids: inout IdentifierSource, now: NIODeadline
    ) -> WatchStep {
        guard let bodyType = self[key]?.subscription?.terms.bodyType else { return (ComponentOutput(), false) }
        let (body, type) = listBody(key, only: nil, bodyType: bodyType, pool, settings, ids: &ids)
        return listStateChanged(key, body: body, type: type, now: now)
    }

    /// Ends list subscription `key` with `reason`: its final NOTIFY carries full state too (RFC
    /// 4662 §4.5: once RLMI was sent, every NOTIFY of the subscription carries it).
    mutating func terminateList(
        _ key: Int, reason: String, retryAfter: UInt32? = nil, _ pool: EnterpriseLegPool, _ settings: CoreSettings,
        ids: inout IdentifierSource, now: NIODeadline
    ) -> WatchStep {
        guard lists.isList(key), let sub = self[key]?.subscription, !sub.isTerminated else {
            return (ComponentOutput(), false)
        }
        let (body, type) = listBody(key, only: nil, bodyType: sub.terms.bodyType, pool, settings, ids: &ids)
        let terminated = modify(key) {
            $0.subscription?.terminate(reason: reason, retryAfter: retryAfter, body: body, now: now)
        }
        let actions = Self.requiringEventlist(terminated.flatMap { $0 } ?? []).map { action in
            guard case .notify(var request) = action else { return action }
            request.headers.set(.contentType, type)
            return NotifierSubscription.Action.notify(request)
        }
        return watchActions(actions, key, now: now)
    }

    /// Sends list watch `key` the notification `body` of `type`.
    private mutating func listStateChanged(_ key: Int, body: [UInt8], type: String, now: NIODeadline) -> WatchStep {
        let actions = modify(key) {
            $0.subscription?.stateChanged(
                body: body, bodyType: type, headers: [(.require, GatewayCore.eventlist)], now: now)
        }
        return watchActions(actions.flatMap { $0 } ?? [], key, now: now)
    }

    /// The list's next notification body (RFC 4662 §5) and its type
    /// (``ResourceListServer/body(of:uri:only:parts:bodyType:answered:ids:)``), with the
    /// members' parts rendered here from the enterprise state their legs in `pool` hold.
    private mutating func listBody(
        _ key: Int, only member: String?, bodyType: String, _ pool: EnterpriseLegPool, _ settings: CoreSettings,
        ids: inout IdentifierSource
    ) -> (body: [UInt8], type: String) {
        guard let watch = self[key] else { return ([], bodyType) }
        var parts: ResourceListServer.Parts = [:]
        for memberKey in lists.memberWatches(of: key, only: member) {
            if let state = enterpriseState(of: memberKey, in: pool) {
                parts[memberKey] = settings.render(state, as: bodyType)
            }
        }
        return lists.body(
            of: key, uri: watch.resource, only: member, parts: parts, bodyType: bodyType,
            answered: watch.pending == nil, ids: &ids)
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
            request.headers.append(.require, GatewayCore.eventlist)
            return .notify(request)
        }
    }
}
