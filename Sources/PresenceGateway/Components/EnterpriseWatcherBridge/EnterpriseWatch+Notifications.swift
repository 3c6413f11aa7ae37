import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPStack

/// What an enterprise watcher's batch dialog ([MS-PRES] §3.4.5.1) does when one of its resources
/// changes, given what the coordinator worked out for it from other tables (the watcher's view,
/// rendered under the presentity's policy and containers; an RLMI boundary drawn): each returns
/// what its ``BatchCategorySubscription`` sends, and the bridge changes the watch in place with
/// it (``EnterpriseWatcherBridge/modifyWatch(_:_:)``). A single category subscription is one
/// resource, which its own dialog's state stands for (§3.4.5.1.1).
extension GatewayCore.EnterpriseWatch {
    /// `body`, the view of `resource`, goes out unless it is what was sent of it last.
    mutating func show(_ body: [UInt8], of resource: String, now: NIODeadline) -> [NotifierSubscription.Action] {
        let digest = BodyDigest(body)
        guard lastSent[resource] != digest else { return [] }
        lastSent[resource] = digest
        return subscription?.resourceChanged(resource, serialized: body, now: now) ?? []
    }

    /// Several resources changed at once (a list notification, RFC 4662 §5.3): each `update`
    /// lists a resource's new instance (`terminated`: it leaves; `pending`: no state), or
    /// carries its view, or both. One view change alone goes out as a leg's does, the categories
    /// document itself; more in one multipart notification.
    mutating func show(
        _ updates: [BatchCategorySubscription.ResourceChange], boundary: String, now: NIODeadline
    ) -> [NotifierSubscription.Action] {
        for update in updates {
            switch update.instance?.state {
            case .terminated?: forget(update.uri)
            case .pending?: lastSent[update.uri] = nil
            default: if let body = update.body { lastSent[update.uri] = BodyDigest(body) }
            }
        }
        guard let first = updates.first else { return [] }
        if updates.count == 1, first.instance == nil {
            return subscription?.resourceChanged(first.uri, serialized: first.body ?? [], now: now) ?? []
        }
        return subscription?.resourcesChanged(updates, boundary: boundary, now: now) ?? []
    }

    /// `resource` waits for authorization at the OMA side again (RFC 6665 §4.1.3): listed
    /// `pending` without state in a batch; a single dialog does not go back to pending (RFC 6665
    /// has no active → pending transition for the notifier), it sends nothing until active again.
    mutating func showPending(_ resource: String, boundary: String, now: NIODeadline) -> [NotifierSubscription.Action] {
        lastSent[resource] = nil
        if single { return [] }
        return subscription?.resourceStateChanged(
            resource, instance: GatewayCore.pendingInstance(resource), document: nil, boundary: boundary, now: now)
            ?? []
    }

    /// `resource` is authorized with `view` as its state (RFC 6665 §4.2.1.3): listed `active` in
    /// a batch; a single dialog pending until now is activated, one active all along gets the
    /// state as usual.
    mutating func showActive(_ resource: String, _ view: CategoriesDocument, boundary: String, now: NIODeadline)
        -> [NotifierSubscription.Action]
    {
        let body = view.serialized()
        lastSent[resource] = BodyDigest(body)
        guard let status = subscription?.subscription.status else { return [] }
        guard !single else {
            return status == .pending
                ? subscription?.activate(resource, document: view, now: now) ?? []
                : subscription?.resourceChanged(resource, serialized: body, now: now) ?? []
        }
        return subscription?.resourceStateChanged(
            resource, instance: RLMIList.Instance(state: .active, cid: resource), document: view, boundary: boundary,
            now: now) ?? []
    }

    /// `resource` leaves the dialog with `reason` (and the OMA side's `statusCode`): listed
    /// `terminated` in a batch; a single dialog ends so (RFC 6665 §4.2.2), also from `pending`.
    mutating func remove(
        _ resource: String, reason: String, statusCode: Int? = nil, boundary: String, now: NIODeadline
    ) -> [NotifierSubscription.Action] {
        forget(resource)
        guard !single else { return subscription?.terminate(reason: reason, now: now) ?? [] }
        let instance = RLMIList.Instance(state: .terminated, reason: reason, statusCode: statusCode)
        return subscription?.removeResource(resource, instance: instance, boundary: boundary, now: now) ?? []
    }

    /// Its dialog, document or batch, ends with `reason` (RFC 6665 §4.2.2).
    mutating func terminate(reason: String, now: NIODeadline) -> [NotifierSubscription.Action] {
        if document != nil { return document?.terminate(reason: reason, now: now) ?? [] }
        return subscription?.terminate(reason: reason, now: now) ?? []
    }
}
