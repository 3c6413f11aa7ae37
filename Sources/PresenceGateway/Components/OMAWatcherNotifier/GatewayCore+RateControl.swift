import NIOCore
import SIPStack

/// The rate-control timer of an OMA watch (RFC 6446; the rest of rate control is the notifier's,
/// `Components/OMAWatcherNotifier/OMAWatcherNotifier.swift`).
extension GatewayCore {
    /// The rate-control timer of OMA watch `key`: a held change, or a state that `min-rate` asks
    /// to be sent again, goes out as the state is now.
    mutating func rateControlDue(_ key: Int, now: NIODeadline) -> [Action] {
        guard var control = notifier.rateControl(of: key), let watch = notifier[key], let sub = watch.subscription,
            sub.status == .active, let leg = watch.leg,
            let state = legPool[leg]?.categories[watch.resource]
        else { return [] }
        let full = notifier.filtered(key, render(state, as: sub.terms.bodyType)).body
        let changed = BodyDigest(full) != watch.lastSent
        let max = control.resendAfter
        let resend = max.map { now >= control.lastNotified + $0 } ?? false
        control.held = false
        notifier.setRateControl(control, of: key)
        guard changed || resend else {
            // The held change was undone before the interval ended: nothing to send.
            guard let max else { return [] }
            return [.schedule(.rateControl(.omaWatch(key)), at: control.lastNotified + max)]
        }
        return notify(key, full, now: now)
    }
}
