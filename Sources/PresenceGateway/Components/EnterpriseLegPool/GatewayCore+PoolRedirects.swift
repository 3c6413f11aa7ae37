import NIOCore
import PresenceDocuments

/// Flow 3, the coordinator's part: what the pool decided of a consumer the enterprise moved
/// off its leg (`EnterpriseLegPool+Redirects`, [MS-PRES] §3.4.5.1.3.1), carried out: the OMA
/// watch attached again or ended, whatever consumer it is (a watcher's, a list member's, a
/// linked identity's source, a UPnP registration's).
extension GatewayCore {
    /// A resource the enterprise rejected in a batch response or notification of leg `key`.
    mutating func rejected(_ resource: String, instance: RLMIList.Instance, leg key: Int, now: NIODeadline) -> [Action]
    {
        guard let rejection = legPool.reject(resource, instance: instance, leg: key, configuration, now: now) else {
            return []
        }
        if rejection.foreignPool { quotas.refusals.foreignPool += 1 }
        let out = apply(rejection.output)
        guard let redirect = rejection.redirect else { return out }
        return out + redirected(rejection.consumer, redirect, now: now)
    }

    /// An enterprise leg ended (``EnterpriseLegPool/ended(_:reason:status:)``): each watch it
    /// carried is attached again or ended.
    mutating func enterpriseLegEnded(_ key: Int, reason: String, status: Int?, now: NIODeadline) -> [Action] {
        let (output, redirects) = legPool.ended(key, reason: reason, status: status)
        var out = apply(output)
        for (consumer, redirect) in redirects { out += redirected(consumer, redirect, now: now) }
        return out
    }

    /// OMA watch `key`, off its leg, attached again or ended as the pool decided.
    private mutating func redirected(_ key: Int, _ redirect: EnterpriseLegPool.Redirect, now: NIODeadline)
        -> [Action]
    {
        notifier.modify(key) { $0.leg = nil }
        switch redirect {
        case .attach(let single, let context):
            return attach(key, single: single, context: context, now: now)
        case .end(let reason, let status, let retryAfter):
            return endWatch(key, reason: reason, status: status, retryAfter: retryAfter, now: now)
        }
    }
}
