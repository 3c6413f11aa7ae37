import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages

/// Flow 3: the enterprise's answers about a consumer's resource that steer the pool ([MS-PRES]
/// §3.4.5.1.3.1). `resubscribe` with `poolFqdn` moves the resource into the watcher's batch
/// dialog with that pool, `resubscribe` without it to a single category SUBSCRIBE (§4.6),
/// `quotaExceeded` or 413 refuses or ends the consumer with a retry-after; a refused first
/// batch SUBSCRIBE switches the pool to single ones, and a pool that stopped answering is
/// forgotten for its resources. The pool notes what it was told and says what becomes of each
/// consumer (``Redirect``); the coordinator carries that out (`GatewayCore+PoolRedirects`).
extension EnterpriseLegPool {
    /// What becomes of a consumer the enterprise moved off its leg.
    enum Redirect: Equatable {
        /// Attached again: to the batch toward the pool its resource has now (or a new one),
        /// or to a subscription of its own when `single`; without joining the subscriber list
        /// when not `context`.
        case attach(single: Bool, context: Bool)
        /// Ended for `reason`: refused `status` while waiting, with `retryAfter` when given.
        case end(reason: String, status: Int, retryAfter: UInt32?)
    }

    /// The retry-after given to a watcher the enterprise refused for quota (an hour).
    static let quotaRetryAfter: UInt32 = 3600

    /// A rejection of `resource` in leg `key`'s batch response or notification: the consumer it
    /// took off the leg and what becomes of it (nil while the presentity has yet to decide: it
    /// stays on the leg and keeps waiting), the leg unsubscribed when it served no one else, and
    /// whether a `poolFqdn` outside the enterprise (`configuration`) was not followed. nil: the
    /// leg serves no consumer of `resource`.
    mutating func reject(
        _ resource: String, instance: RLMIList.Instance, leg key: Int, _ configuration: GatewayConfiguration,
        now: NIODeadline
    ) -> (consumer: Int, redirect: Redirect?, output: ComponentOutput, foreignPool: Bool)? {
        let taken = modify(key) { leg -> (Int, GatewayCore.EnterpriseLeg)? in
            guard let consumer = leg.watches.removeValue(forKey: resource) else { return nil }
            leg.subscriber.forget([resource])
            leg.categories[resource] = nil
            if instance.state == .pending { leg.watches[resource] = consumer }
            return (consumer, leg)
        }
        guard let (consumer, leg) = taken ?? nil else { return nil }
        switch instance.state {
        case .pending:
            // Still waiting for the presentity's decision: the consumer keeps waiting too.
            return (consumer, nil, ComponentOutput(), false)
        case .resubscribe:
            let output = leg.watches.isEmpty ? end(key, now: now) : ComponentOutput()
            if let pool = instance.poolFqdn, pool != leg.pool {
                // A pool steers the gateway only to a host of the enterprise side (its domains,
                // peers or next hop); any other is not followed, as if no pool were given.
                if let uri = try? SIPURI(pool), uri.isSIP, uri.parameters.value("maddr") == nil,
                    configuration.isEnterpriseHost(uri.host)
                {
                    setPool(pool, of: resource)
                    return (consumer, .attach(single: false, context: true), output, false)
                }
                setPool(nil, of: resource)
                return (consumer, .attach(single: true, context: true), output, true)
            }
            // No pool (or the same pool again): a single SUBSCRIBE to the resource (§4.6).
            setPool(nil, of: resource)
            return (consumer, .attach(single: true, context: true), output, false)
        default:
            let output = leg.watches.isEmpty ? end(key, now: now) : ComponentOutput()
            let quota = instance.reason?.lowercased() == "quotaexceeded" || instance.statusCode == 413
            let redirect = Redirect.end(
                reason: "rejected", status: quota ? 503 : instance.statusCode ?? 403,
                retryAfter: quota ? Self.quotaRetryAfter : nil)
            return (consumer, redirect, output, false)
        }
    }

    /// Leg `key` ended for `reason` (`status`, when a response ended it): forgotten, and what
    /// becomes of each consumer it served, in the order of their resources. A first SUBSCRIBE
    /// refused for its `context` is made again without one ([MS-PRES] §3.6.5.3: the resource's
    /// subscriber list is full, which refuses the context, not the subscription); a refused
    /// first batch SUBSCRIBE makes the pool use single ones; a pool that stopped answering is
    /// forgotten for its resources; every other consumer is ended with the status mapped.
    mutating func ended(_ key: Int, reason: String, status: Int?)
        -> (output: ComponentOutput, redirects: [(consumer: Int, redirect: Redirect)])
    {
        guard let leg = self[key] else { return (ComponentOutput(), []) }
        let output = close(key)
        let consumers = leg.watches.sorted { $0.key < $1.key }
        if leg.subscriber.refusedContext {
            return (output, consumers.map { ($0.value, .attach(single: false, context: false)) })
        }
        let refusedBatch =
            !leg.single && !leg.established
            && status.map { [400, 403, 405, 415, 420, 421, 489, 501].contains($0) } == true
        if refusedBatch {
            if leg.pool == nil { refuseBatches() }
            return (output, consumers.map { ($0.value, .attach(single: true, context: true)) })
        }
        let code = status.map { [403, 404, 408, 480, 489].contains($0) ? $0 : 503 } ?? 503
        var redirects: [(consumer: Int, redirect: Redirect)] = []
        for (resource, consumer) in consumers {
            if leg.pool != nil, reason == "timeout" || status == 408 || status == 503 { setPool(nil, of: resource) }
            redirects.append((consumer, .end(reason: reason, status: code, retryAfter: nil)))
        }
        return (output, redirects)
    }
}
