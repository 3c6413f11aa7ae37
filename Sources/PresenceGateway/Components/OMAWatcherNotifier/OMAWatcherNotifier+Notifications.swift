import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// What an OMA watcher's dialog does with a document the coordinator rendered for it (the
/// enterprise state in the watcher's negotiated format, `GatewayCore+OMAWatchers`): cut to what
/// its filter selects (RFC 4661), sent whole or as a partial notification (RFC 5263), and
/// remembered, so that the watcher is notified only when what it is sent changed. Each returns
/// what the watch's ``NotifierSubscription`` does, which the coordinator applies in the watch's
/// context; each changes the watch in place.
extension OMAWatcherNotifier {
    /// `rendered` cut to what the filter of watch `key` selects, and whether the change fired
    /// one of its triggers (``GatewayCore/OMAWatch/filtered(_:)``, which keeps the document seen
    /// for them); `rendered` itself for a watch without a filter.
    mutating func filtered(_ key: Int, _ rendered: [UInt8]) -> (body: [UInt8], triggered: Bool) {
        guard self[key]?.filter != nil else { return (rendered, true) }
        return modify(key) { $0.filtered(rendered) } ?? (rendered, true)
    }

    /// Sends watch `key` the document `full` (filtered already) as its next notification,
    /// partial when the watcher takes partial notifications, and notes what it was sent.
    mutating func notify(_ key: Int, _ full: [UInt8], now: NIODeadline) -> [NotifierSubscription.Action] {
        modify(key) { watch in
            watch.lastSent = BodyDigest(full)
            let (body, type) = watch.body(for: full, forceFull: false)
            return watch.subscription?.stateChanged(body: body, bodyType: type, now: now) ?? []
        } ?? []
    }

    /// The body of the first answer of waiting watch `key` from `rendered`: the whole document
    /// (filtered) and what is sent of it, full state (RFC 5263 §4.3); nil when it is gone.
    mutating func firstBody(_ key: Int, _ rendered: [UInt8]) -> (full: [UInt8], body: [UInt8], type: String?)? {
        modify(key) { watch in
            let full = watch.filtered(rendered).body
            let (body, type) = watch.body(for: full, forceFull: true)
            return (full, body, type)
        }
    }

    /// A SUBSCRIBE in the dialog of watch `key` (RFC 6665 §4.2.1.2): terms it cannot take are
    /// refused in the dialog (§4.2.1.1); a new filter (RFC 4660 §4.2) that needs categories the
    /// subscription does not carry is refused 488 (the watcher subscribes again for them), one
    /// that does not read is refused as its reading says; otherwise it is answered with full
    /// state: `state`, the enterprise state its leg holds (lent by the coordinator; nothing
    /// known yet when nil), rendered with `settings`. A refresh may start or stop partial
    /// notifications (RFC 5263).
    mutating func refresh(
        _ key: Int, _ request: SIPRequest, id: GatewayCore.ServerRequestID, state: CategoriesDocument?,
        _ settings: CoreSettings, now: NIODeadline
    ) -> WatchStep {
        let asked: SubscriptionTerms
        switch askedTerms(key, request, id: id, settings) {
        case .refused(let step): return step
        case .terms(let terms): asked = terms
        }
        guard let watch = self[key] else { return (ComponentOutput(), false) }
        let terms = Self.rateControlApplied(asked)
        var filter = watch.filter
        if !request.body.isEmpty {
            do throws(FilterRefusal) {
                filter = try Self.watcherFilter(
                    body: request.body, type: (try? request.headers.contentType)?.mediaType,
                    resource: watch.resource, terms: terms)
                let carried = watch.filter?.categories ?? GatewayCore.bridgedCategories
                guard Set(filter?.categories ?? GatewayCore.bridgedCategories).isSubset(of: carried) else {
                    throw FilterRefusal(status: 488, reason: "Filter Needs A New Subscription")
                }
            } catch {
                let refusal = SIPResponse(replyingTo: request, statusCode: error.status, reasonPhrase: error.reason)
                return (ComponentOutput(actions: [.respond(id, refusal)]), false)
            }
        }
        let rendered = settings.render(state ?? CategoriesDocument(uri: watch.resource), as: terms.bodyType)
        let actions = refresh(
            key, request, terms: terms, filter: filter, rendered: rendered,
            partial: Self.acceptsPartialPIDF(request, terms: terms), now: now)
        return watchActions(actions, key, now: now, id: id)
    }

    /// What a SUBSCRIBE in the dialog of watch `key` asks for (RFC 6665 §4.2.1.2): its terms, or
    /// the step refusing it in the dialog (481 without a dialog; terms it cannot take, §4.2.1.1).
    enum AskedTerms {
        case terms(SubscriptionTerms)
        case refused(WatchStep)
    }

    func askedTerms(_ key: Int, _ request: SIPRequest, id: GatewayCore.ServerRequestID, _ settings: CoreSettings)
        -> AskedTerms
    {
        guard let sub = self[key]?.subscription else {
            let gone = SIPResponse(replyingTo: request, statusCode: 481)
            return .refused((ComponentOutput(actions: [.respond(id, gone)]), false))
        }
        switch SubscriptionTerms.evaluate(request, registry: settings.registry, negotiated: sub.terms.bodyType) {
        case .reject(let status, let reason, let headers):
            let refusal = SIPResponse(replyingTo: request, statusCode: status, reasonPhrase: reason, headers: headers)
            return .refused((ComponentOutput(actions: [.respond(id, refusal)]), false))
        case .accept(let terms): return .terms(terms)
        }
    }

    /// A refresh of watch `key` (RFC 6665 §4.2.1.2), with the filter it now has (RFC 4660 §4.2)
    /// and whether it takes partial notifications: answered with full state, `rendered` cut by
    /// the filter.
    mutating func refresh(
        _ key: Int, _ request: SIPRequest, terms: SubscriptionTerms, filter: WatcherFilter?, rendered: [UInt8],
        partial: Bool, now: NIODeadline
    ) -> [NotifierSubscription.Action] {
        modify(key) { watch in
            watch.filter = filter
            let full = watch.filtered(rendered).body
            if !partial {
                watch.partial = nil
            } else if watch.partial == nil {
                watch.partial = PartialNotifications()
            }
            let (body, type) = watch.body(for: full, forceFull: true)
            watch.lastSent = BodyDigest(full)
            return watch.subscription?.refresh(request, terms: terms, body: body, bodyType: type, now: now) ?? []
        } ?? []
    }

    /// Ends the dialog of watch `key` with `reason` (RFC 6665 §4.2.2): its final NOTIFY.
    mutating func terminate(_ key: Int, reason: String, retryAfter: UInt32? = nil, now: NIODeadline)
        -> [NotifierSubscription.Action]
    {
        modify(key) { $0.subscription?.terminate(reason: reason, retryAfter: retryAfter, now: now) ?? [] } ?? []
    }

    /// What a step of a watch's dialog returns: what the coordinator applies, and `removed`
    /// when the dialog is gone; the coordinator then removes the watch, which also leaves its
    /// leg toward the enterprise (``GatewayCore/applyOMAWatch(_:_:now:)``).
    typealias WatchStep = (output: ComponentOutput, removed: Bool)

    /// What watch `key`'s dialog does (its ``NotifierSubscription``'s actions), as the core's:
    /// answers to `id`, NOTIFYs toward the OMA side (each starting its rate control over, RFC
    /// 6446), its expiry timer.
    mutating func watchActions(
        _ actions: [NotifierSubscription.Action], _ key: Int, now: NIODeadline, id: GatewayCore.ServerRequestID? = nil
    ) -> WatchStep {
        var (out, removed) = GatewayCore.notifierActions(actions, context: .omaWatch(key), to: .oma, id: id) {
            notified(key, now: now)
        }
        if removed, hasRateControl(key) { out.append(.cancel(.rateControl(.omaWatch(key)))) }
        return (ComponentOutput(actions: out), removed)
    }
}
