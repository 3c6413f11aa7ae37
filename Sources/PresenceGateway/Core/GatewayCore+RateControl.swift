import NIOCore
import SIPStack

/// Notification rate control for OMA watchers (RFC 6446), asked for in the Event header of
/// their SUBSCRIBE in notifications per second (`Event: presence;max-rate=0.2;min-rate=0.01`):
///
/// - `max-rate`: at most that many NOTIFYs per second, one per 1 / max-rate seconds. A change
///   that comes sooner is held, and when the interval has passed the watcher gets the state as
///   it is then, once (changes in between are not sent one by one). The first NOTIFY of a
///   subscription or a refresh and the final one are not held.
/// - `min-rate`: when 1 / min-rate seconds pass without a NOTIFY, the current state is sent
///   again; at most one a minute (``minRateCeiling``), so that a watcher cannot make the gateway
///   send a NOTIFY every second. The rate applied is the one Subscription-State gives back.
///
/// Only watches that ask keep an entry in ``GatewayCore/rateControlled``, so the others pay
/// nothing. The entry is not stored durably: a restored watch's first change goes out at once
/// and its rate control starts from there (docs/flows.md, "Rate control").
extension GatewayCore {
    /// The highest `min-rate` honoured, in notifications per second (one a minute): a higher one
    /// is lowered to this.
    static let minRateCeiling = 1.0 / 60

    /// The terms as the gateway applies them: `min-rate` at most ``minRateCeiling``.
    static func rateControlApplied(_ terms: SubscriptionTerms) -> SubscriptionTerms {
        var applied = terms
        if let rate = terms.minRate { applied.minRate = Swift.min(rate, minRateCeiling) }
        return applied
    }

    struct RateControl: Sendable {
        /// When the last NOTIFY went out.
        var lastNotified: NIODeadline
        /// A change arrived within 1 / max-rate seconds and waits for the timer.
        var held = false
    }

    /// A NOTIFY went to OMA watch `key`: its rate control starts over from now, and the timer is
    /// set for 1 / min-rate seconds (or cancelled when the watch asks for no `min-rate`).
    mutating func notified(_ key: Int, now: NIODeadline) -> [Action] {
        guard let sub = omaWatches[key]?.subscription, !sub.isTerminated,
            sub.terms.maxRate != nil || sub.terms.minRate != nil
        else {
            if rateControlled.removeValue(forKey: key) != nil { return [.cancel(.rateControl(.omaWatch(key)))] }
            return []
        }
        rateControlled[key] = RateControl(lastNotified: now)
        guard let max = sub.terms.maximumInterval else { return [.cancel(.rateControl(.omaWatch(key)))] }
        return [.schedule(.rateControl(.omaWatch(key)), at: now + max)]
    }

    /// Whether a change for OMA watch `key`, none held yet, is held by its `max-rate`: nil when
    /// it may go out now, else the timer that sends it (later changes wait for the same one:
    /// ``isHoldingChange(_:)``).
    mutating func holdsChange(_ key: Int, terms: SubscriptionTerms, now: NIODeadline) -> [Action]? {
        guard let min = terms.minimumInterval, var control = rateControlled[key] else { return nil }
        let due = control.lastNotified + min
        guard now < due else { return nil }
        control.held = true
        rateControlled[key] = control
        return [.schedule(.rateControl(.omaWatch(key)), at: due)]
    }

    /// A change for OMA watch `key` is held already: a newer one waits for the same timer.
    func isHoldingChange(_ key: Int) -> Bool { rateControlled[key]?.held == true }

    /// The rate-control timer of OMA watch `key`: a held change, or a state that `min-rate` asks
    /// to be sent again, goes out as the state is now.
    mutating func rateControlDue(_ key: Int, now: NIODeadline) -> [Action] {
        guard var control = rateControlled[key], var watch = omaWatches[key], var sub = watch.subscription,
            sub.status == .active, let leg = watch.leg,
            let state = enterpriseLegs[leg]?.categories[watch.resource]
        else { return [] }
        let full = watch.filtered(render(state, as: sub.terms.bodyType)).body
        let changed = BodyDigest(full) != watch.lastSent
        let max = sub.terms.maximumInterval
        let resend = max.map { now >= control.lastNotified + $0 } ?? false
        control.held = false
        rateControlled[key] = control
        guard changed || resend else {
            // The held change was undone before the interval ended: nothing to send.
            guard let max else { return [] }
            return [.schedule(.rateControl(.omaWatch(key)), at: control.lastNotified + max)]
        }
        watch.lastSent = BodyDigest(full)
        let (body, type) = watch.body(for: full, forceFull: false)
        let updates = sub.stateChanged(body: body, bodyType: type, now: now)
        watch.subscription = sub
        omaWatches[key] = watch
        return apply(updates, context: .omaWatch(key), now: now)
    }
}
