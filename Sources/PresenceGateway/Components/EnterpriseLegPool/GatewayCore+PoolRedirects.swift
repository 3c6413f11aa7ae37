import NIOCore
import PresenceDocuments
import SIPMessages

/// Flow 3: the enterprise's answers about an OMA watcher's resources that steer the gateway
/// ([MS-PRES] §3.4.5.1.3.1): `resubscribe` with `poolFqdn` moves the resource into the
/// watcher's batch dialog with that pool, `resubscribe` without it to a single category
/// SUBSCRIBE (§4.6), `quotaExceeded` or 413 refuses or ends the watch with a retry-after; a
/// refused first batch SUBSCRIBE switches the gateway to single ones, and a pool that stopped
/// answering is forgotten for its resources. How legs are kept: `GatewayCore+OMAWatchers`.
extension GatewayCore {
    /// The retry-after given to a watcher the enterprise refused for quota (an hour).
    static let quotaRetryAfter: UInt32 = 3600

    /// A resource the enterprise rejected in a batch response or notification (§3.4.5.1.3.1).
    mutating func rejected(_ resource: String, instance: RLMIList.Instance, leg key: Int, now: NIODeadline) -> [Action]
    {
        let taken = legPool.modify(key) { leg -> (Int, EnterpriseLeg)? in
            guard let watchKey = leg.watches.removeValue(forKey: resource) else { return nil }
            leg.subscriber.forget([resource])
            leg.categories[resource] = nil
            return (watchKey, leg)
        }
        guard let (watchKey, leg) = taken ?? nil else { return [] }
        var out: [Action] = []
        // A pending resource stays in its leg (below): the leg is not ended for it.
        if leg.watches.isEmpty, instance.state != .pending { out += endEnterpriseLeg(key, now: now) }
        notifier.modify(watchKey) { $0.leg = nil }
        switch instance.state {
        case .resubscribe:
            if let pool = instance.poolFqdn, pool != leg.pool {
                // A pool steers the gateway only to a host of the enterprise side (its domains,
                // peers or next hop); any other is not followed, as if no pool were given.
                if let uri = try? SIPURI(pool), uri.isSIP, uri.parameters.value("maddr") == nil,
                    configuration.isEnterpriseHost(uri.host)
                {
                    legPool.setPool(pool, of: resource)
                    return out + attach(watchKey, now: now)
                }
                quotas.refusals.foreignPool += 1
            }
            // No pool (or the same pool again): a single SUBSCRIBE to the resource (§4.6).
            legPool.setPool(nil, of: resource)
            return out + attach(watchKey, single: true, now: now)
        case .pending:
            // Still waiting for the presentity's decision: the watcher keeps waiting too.
            legPool.modify(key) { $0.watches[resource] = watchKey }
            notifier.modify(watchKey) { $0.leg = key }
            return out
        default:
            let quota = instance.reason?.lowercased() == "quotaexceeded" || instance.statusCode == 413
            return out
                + endWatch(
                    watchKey, reason: "rejected", status: quota ? 503 : instance.statusCode ?? 403,
                    retryAfter: quota ? Self.quotaRetryAfter : nil, now: now)
        }
    }

    /// An enterprise leg ended. A first SUBSCRIBE refused 413 for its `context` is made again
    /// without one; a refused first batch SUBSCRIBE makes the gateway use single ones; a pool that
    /// stopped answering is forgotten for its resources; every watcher it carried is refused or
    /// ended with the reason mapped.
    mutating func enterpriseLegEnded(_ key: Int, reason: String, status: Int?, now: NIODeadline) -> [Action] {
        guard let leg = legPool[key] else { return [] }
        removeEnterpriseLeg(key)
        var out: [Action] = []
        if leg.subscriber.refusedContext {
            // [MS-PRES] §3.6.5.3: the resource's subscriber list is full, which refuses the
            // context, not the subscription.
            for (_, watchKey) in leg.watches.sorted(by: { $0.key < $1.key }) {
                notifier.modify(watchKey) { $0.leg = nil }
                out += attach(watchKey, context: false, now: now)
            }
            return out
        }
        let refusedBatch =
            !leg.single && !leg.established
            && status.map { [400, 403, 405, 415, 420, 421, 489, 501].contains($0) } == true
        if refusedBatch && leg.pool == nil { legPool.refuseBatches() }
        for (resource, watchKey) in leg.watches.sorted(by: { $0.key < $1.key }) {
            notifier.modify(watchKey) { $0.leg = nil }
            if refusedBatch {
                out += attach(watchKey, single: true, now: now)
                continue
            }
            if leg.pool != nil, reason == "timeout" || status == 408 || status == 503 {
                legPool.setPool(nil, of: resource)
            }
            let code = status.map { [403, 404, 408, 480, 489].contains($0) ? $0 : 503 } ?? 503
            out += endWatch(watchKey, reason: reason, status: code, retryAfter: nil, now: now)
        }
        return out
    }
}
