import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// Flow 1 for enterprise clients that subscribe without a category list ([MS-PRES] §4.10,
/// §4.11): the coordinator's part, a new subscription refused or admitted (its peer's quota)
/// with its one OMA leg. Its dialog's steps are the bridge's
/// (`EnterpriseWatcherBridge+DocumentWatches`).
extension GatewayCore {
    /// A new PIDF or msrtc.pidf SUBSCRIBE from an enterprise watcher. A blocked watcher is
    /// refused 403 (RFC 5025 §3.2.1 `block`); otherwise the OMA leg starts and the watcher is
    /// answered once it reported, or after the configured piggyback wait.
    mutating func newDocumentWatch(
        _ request: SIPRequest, id: ServerRequestID, watcher: WatcherIdentity,
        terms: SubscriptionTerms, peer: DialogPeer?, now: NIODeadline
    ) -> [Action] {
        let resource = WatcherIdentity.addressOfRecord(request.uri.description) ?? request.uri.description
        if policy(for: resource).subHandling(for: watcher) == .block {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 403, toTag: ids.tag()))]
        }
        guard takePeerQuota(peer) else { return overQuota(request, id: id) }
        let key = takeKey()
        var new = EnterpriseWatch(watcher: watcher, pending: (request, id, BatchSubscribe(), terms), peer: peer)
        new.single = true
        new.documentResource = resource
        bridge.openWatch(key, new)
        let actions = addOMALeg(watch: key, resource: resource, request: request)
        guard let watch = bridge[watch: key], !watch.refused.contains(resource) else {
            // Past the watcher's quota (the router already held the Request-URI to the OMA domains).
            forgetEnterpriseWatch(key)
            return overQuota(request, id: id)
        }
        if bridge.allLegsReported(watch) {
            return actions + apply(bridge.answerDocument(key, views, ids: &ids, now: now))
        }
        let wait = TimeAmount.milliseconds(Int64(configuration.subscriptions.piggybackWaitMilliseconds))
        return actions + [.schedule(.firstAnswer(.enterpriseWatch(key)), at: now + wait)]
    }

}
