import NIOCore
import SIPMessages
import SIPStack

/// The bridge's own subscriptions toward the OMA side, each leg's PIDF subscription and each
/// list subscription toward an RLS (RFC 6665, RFC 4662): made, refreshed, made again, ended and
/// forgotten here, each step returning the dialogs it opened or closed and what ended entries
/// held of the quotas, which the coordinator applies (``GatewayCore/apply(_:)``). What crosses
/// into the watchers' dialogs (showing a resource, ending it for its watcher) stays with the
/// flow's handlings.
extension EnterpriseWatcherBridge {
    typealias Action = GatewayCore.Action

    /// A subscription's actions toward the OMA side, for `context` (answers to NOTIFYs are the
    /// caller's).
    static func actions(_ actions: [SubscriberSubscription.Action], _ context: GatewayCore.Context) -> [Action] {
        GatewayCore.subscriberActions(actions, context: context, to: .oma)
    }

    private static func ended(_ actions: [SubscriberSubscription.Action]) -> Bool {
        actions.contains { if case .ended = $0 { true } else { false } }
    }

    // MARK: - Legs

    /// Refreshes leg `key` in its dialog (RFC 6665 §4.1.2.2); nothing for one being ended.
    mutating func refreshLeg(_ key: Int, now: NIODeadline) -> [Action] {
        guard self[leg: key]?.closing == false else { return [] }
        return Self.actions(modifyLeg(key) { $0.subscription?.refresh(now: now) ?? [] } ?? [], .omaLeg(key))
    }

    /// Leg `key`'s subscription made again with a new dialog (RFC 6665 §4.1.2.2: "an unrelated
    /// initial SUBSCRIBE request with a freshly generated Call-ID and a new, unique From tag"),
    /// after a refresh found it gone (481) or when a restart came before its dialog existed. The
    /// watcher's dialog and the last state seen stay.
    mutating func restartLeg(_ key: Int, ids: inout IdentifierSource) -> ComponentOutput {
        guard let old = self[leg: key]?.subscription else { return ComponentOutput() }
        let (subscription, out) = Self.restarted(old, .omaLeg(key), ids: &ids)
        modifyLeg(key) {
            $0.subscription = subscription
            $0.closing = false
        }
        return out
    }

    /// `old` made again in a new dialog for `context`: the new subscription, and its old dialog
    /// closed, the new one opened, the old timers cancelled and the new SUBSCRIBE.
    private static func restarted(
        _ old: SubscriberSubscription, _ context: GatewayCore.Context, ids: inout IdentifierSource
    ) -> (SubscriberSubscription, ComponentOutput) {
        let (subscription, actions) = SubscriberSubscription.start(
            old.configuration, callID: ids.callID(), localTag: ids.tag())
        var out = ComponentOutput(actions: [.cancel(.refresh(context)), .cancel(.expiry(context))])
        out.actions += Self.actions(actions, context)
        out.dialog(.closed, context, old.dialogKey)
        out.dialog(.opened, context, subscription.dialogKey)
        return (subscription, out)
    }

    /// Unsubscribes legs (Expires 0); each is forgotten on its final NOTIFY, or 64·T1 later. A
    /// list's member leaves its list (``leaveList(_:now:)``).
    mutating func endLegs(_ keys: some Sequence<Int>, now: NIODeadline) -> ComponentOutput {
        var out = ComponentOutput()
        for key in keys {
            guard let leg = self[leg: key], !leg.closing else { continue }
            guard leg.subscription != nil else {
                out.add(leaveList(key, now: now))
                continue
            }
            let actions =
                modifyLeg(key) { leg -> [SubscriberSubscription.Action] in
                    leg.closing = true
                    return leg.subscription?.unsubscribe() ?? []
                } ?? []
            if Self.ended(actions) {
                out.add(closeLeg(key))
                continue
            }
            out.actions += GatewayCore.unsubscribing(Self.actions(actions, .omaLeg(key)), .omaLeg(key), now: now)
        }
        return out
    }

    /// Leg `key`, which was being ended when the store kept it, unsubscribed again (RFC 6665
    /// §4.1.2.3); forgotten when that ends it at once, else 64·T1 later at the latest.
    mutating func unsubscribeLegAgain(_ key: Int, now: NIODeadline) -> ComponentOutput {
        let actions = modifyLeg(key) { $0.subscription?.unsubscribeAgain() ?? [] } ?? []
        return Self.ended(actions) ? closeLeg(key) : Self.unsubscribedAgain(actions, .omaLeg(key), now: now)
    }

    /// An unsubscribe sent again for `context`: its SUBSCRIBE, and the entry forgotten 64·T1
    /// later at the latest.
    private static func unsubscribedAgain(
        _ actions: [SubscriberSubscription.Action], _ context: GatewayCore.Context, now: NIODeadline
    ) -> ComponentOutput {
        ComponentOutput(
            actions: Self.actions(actions, context) + [.schedule(.cleanup(context), at: now + GatewayCore.cleanupDelay)]
        )
    }

    /// Forgets leg `key`, with a subscription of its own, and its dialog; what it held of the
    /// quotas is given back (a list's member leaves with ``leaveList(_:now:)``).
    mutating func closeLeg(_ key: Int) -> ComponentOutput {
        var out = ComponentOutput()
        guard let leg = removeLeg(key) else { return out }
        out.released = [leg.held]
        out.dialog(.closed, .omaLeg(key), leg.subscription?.dialogKey)
        return out
    }

    // MARK: - Lists

    /// A member leaves its list (its resource unsubscribed, refused or ended): the document is
    /// written without it and the list refreshed; a list left without members is ended.
    mutating func leaveList(_ memberKey: Int, now: NIODeadline) -> ComponentOutput {
        var out = ComponentOutput()
        guard let leg = removeLeg(memberKey) else { return out }
        out.released = [leg.held]
        guard let listKey = leg.list,
            let left = modifyList(
                listKey,
                { list in
                    list.members.removeValue(forKey: leg.resource)
                    return (empty: list.members.isEmpty, closing: list.closing)
                })
        else { return out }
        if left.empty {
            out.add(endList(listKey, now: now))
        } else if !left.closing {
            out.actions += writeListDocument(of: listKey)
        }
        return out
    }

    /// Refreshes list `key` in its dialog (nothing before the dialog exists).
    mutating func refreshList(_ key: Int, now: NIODeadline) -> [Action] {
        guard self[list: key]?.closing == false else { return [] }
        return Self.actions(modifyList(key) { $0.subscription?.refresh(now: now) ?? [] } ?? [], .omaList(key))
    }

    /// Subscribes to list `key` (RFC 4662 §4.1: `Supported: eventlist`, and an Accept naming
    /// `multipart/related` and `application/rlmi+xml`) from `contact`, or refreshes it when its
    /// members changed.
    mutating func subscribeList(
        _ key: Int, contact: SIPAddress?, expires: UInt32, ids: inout IdentifierSource, now: NIODeadline
    ) -> ComponentOutput {
        var out = ComponentOutput()
        guard let list = self[list: key], !list.members.isEmpty else { return out }
        if list.subscription != nil {
            guard list.changed else { return out }
            let actions =
                modifyList(key) { list -> [SubscriberSubscription.Action] in
                    let actions = list.subscription?.refresh(now: now) ?? []
                    // Before the dialog is answered a refresh sends nothing: the 2xx refreshes then.
                    if !actions.isEmpty { list.changed = false }
                    return actions
                } ?? []
            out.actions = Self.actions(actions, .omaList(key))
            return out
        }
        guard let target = try? SIPURI(list.uri), let contact else { return out }
        let configuration = SubscriberSubscription.Configuration(
            target: target, from: list.from, to: SIPAddress(uri: target), contact: contact,
            accept: GatewayCore.listAccept, expires: expires, supported: [GatewayCore.eventlist])
        let (subscription, actions) = SubscriberSubscription.start(
            configuration, callID: ids.callID(), localTag: ids.tag())
        modifyList(key) {
            $0.subscription = subscription
            $0.changed = false
        }
        out.dialog(.opened, .omaList(key), subscription.dialogKey)
        out.actions = Self.actions(actions, .omaList(key))
        return out
    }

    /// List `key` is made again in a new dialog, its document unchanged (a refresh found it
    /// gone, or the gateway restarted before its dialog existed). Its members keep their state.
    mutating func restartList(_ key: Int, ids: inout IdentifierSource) -> ComponentOutput {
        guard let old = self[list: key]?.subscription else { return ComponentOutput() }
        let (subscription, out) = Self.restarted(old, .omaList(key), ids: &ids)
        modifyList(key) {
            $0.subscription = subscription
            $0.version = nil
            $0.changed = false
            $0.closing = false
        }
        return out
    }

    /// Ends list `key`: unsubscribed (Expires 0; forgotten on its final NOTIFY, or 64·T1 later),
    /// and its document written without it. Its members, if any are left, go with it.
    mutating func endList(_ key: Int, now: NIODeadline) -> ComponentOutput {
        var out = ComponentOutput()
        guard let list = self[list: key], !list.closing else { return out }
        for memberKey in list.members.values {
            if let member = removeLeg(memberKey) { out.released.append(member.held) }
        }
        let unsubscribed = modifyList(key) { list in
            list.members = [:]
            list.closing = true
            return list.subscription?.unsubscribe()
        }
        // Without a dialog, or one that ended at once, the list is forgotten now.
        guard let actions = unsubscribed ?? nil, !Self.ended(actions) else {
            out.actions += writeListDocument(without: key)
            out.add(closeList(key))
            return out
        }
        out.actions += GatewayCore.unsubscribing(Self.actions(actions, .omaList(key)), .omaList(key), now: now)
        out.actions += writeListDocument(without: key)
        return out
    }

    /// List `key`, which was being ended when the store kept it, unsubscribed again; forgotten
    /// when it has no dialog to end or that ends it at once, else 64·T1 later at the latest.
    mutating func unsubscribeListAgain(_ key: Int, now: NIODeadline) -> ComponentOutput {
        guard self[list: key]?.subscription?.status == .unsubscribing else { return closeList(key) }
        let actions = modifyList(key) { $0.subscription?.unsubscribeAgain() ?? [] } ?? []
        return Self.ended(actions) ? closeList(key) : Self.unsubscribedAgain(actions, .omaList(key), now: now)
    }

    /// Forgets the subscription of list `key`, which ended: the list is then ended without an
    /// unsubscribe.
    mutating func forgetListDialog(_ key: Int) -> ComponentOutput {
        var out = ComponentOutput()
        guard let subscription = self[list: key]?.subscription else { return out }
        modifyList(key) { $0.subscription = nil }
        out.dialog(.closed, .omaList(key), subscription.dialogKey)
        return out
    }

    /// Forgets list `key` and its dialog.
    mutating func closeList(_ key: Int) -> ComponentOutput {
        var out = ComponentOutput()
        guard let list = removeList(key) else { return out }
        out.dialog(.closed, .omaList(key), list.subscription?.dialogKey)
        return out
    }
}
