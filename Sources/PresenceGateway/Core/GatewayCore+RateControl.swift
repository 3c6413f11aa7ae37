import NIOCore
import SIPStack

/// Notification rate control for OMA watchers (RFC 6446), asked for in the Event header of
/// their SUBSCRIBE (`Event: presence;min-interval=5;max-interval=600`):
///
/// - `min-interval`: at most one NOTIFY per that many seconds. A change that comes sooner is
///   held, and when the interval has passed the watcher gets the state as it is then, once
///   (changes in between are not sent one by one). The first NOTIFY of a subscription or a
///   refresh and the final one are not held.
/// - `max-interval`: when that long passes without a NOTIFY, the current state is sent again;
///   at least ``maxIntervalFloor`` seconds, so that a watcher cannot make the gateway send a
///   NOTIFY every second.
///
/// Only watches that ask keep an entry in ``GatewayCore/rateControlled``, so the others pay
/// nothing. The entry is not stored durably: a restored watch's first change goes out at once
/// and its rate control starts from there (docs/flows.md, "Rate control").
extension GatewayCore {
    /// The shortest `max-interval` honoured, in seconds: a shorter one is taken as this.
    static let maxIntervalFloor: UInt32 = 60

    /// The `max-interval` applied to a watch with `terms`: nil when it asks for none.
    static func maxInterval(_ terms: SubscriptionTerms) -> TimeAmount? {
        terms.maxInterval.map { .seconds(Int64(Swift.max($0, maxIntervalFloor))) }
    }

    struct RateControl: Sendable {
        /// When the last NOTIFY went out.
        var lastNotified: NIODeadline
        /// A change arrived within `min-interval` and waits for the timer.
        var held = false
    }

    /// A NOTIFY went to OMA watch `key`: its rate control starts over from now, and the timer is
    /// set for `max-interval` (or cancelled when the watch asks for none).
    mutating func notified(_ key: Int, now: NIODeadline) -> [Action] {
        guard let sub = omaWatches[key]?.subscription, !sub.isTerminated,
            sub.terms.minInterval != nil || sub.terms.maxInterval != nil
        else {
            if rateControlled.removeValue(forKey: key) != nil { return [.cancel(.rateControl(.omaWatch(key)))] }
            return []
        }
        rateControlled[key] = RateControl(lastNotified: now)
        guard let max = Self.maxInterval(sub.terms) else { return [.cancel(.rateControl(.omaWatch(key)))] }
        return [.schedule(.rateControl(.omaWatch(key)), at: now + max)]
    }

    /// Whether a change for OMA watch `key`, none held yet, is held by its `min-interval`: nil
    /// when it may go out now, else the timer that sends it (later changes wait for the same one:
    /// ``isHoldingChange(_:)``).
    mutating func holdsChange(_ key: Int, terms: SubscriptionTerms, now: NIODeadline) -> [Action]? {
        guard let min = terms.minInterval, var control = rateControlled[key] else { return nil }
        let due = control.lastNotified + .seconds(Int64(min))
        guard now < due else { return nil }
        control.held = true
        rateControlled[key] = control
        return [.schedule(.rateControl(.omaWatch(key)), at: due)]
    }

    /// A change for OMA watch `key` is held already: a newer one waits for the same timer.
    func isHoldingChange(_ key: Int) -> Bool { rateControlled[key]?.held == true }

    /// The rate-control timer of OMA watch `key`: a held change, or a state that `max-interval`
    /// asks to be sent again, goes out as the state is now.
    mutating func rateControlDue(_ key: Int, now: NIODeadline) -> [Action] {
        guard var control = rateControlled[key], var watch = omaWatches[key], var sub = watch.subscription,
            sub.status == .active, let leg = watch.leg,
            let state = enterpriseLegs[leg]?.categories[watch.resource]
        else { return [] }
        let body = render(state, as: sub.terms.bodyType)
        let changed = BodyDigest(body) != watch.lastSent
        let max = Self.maxInterval(sub.terms)
        let resend = max.map { now >= control.lastNotified + $0 } ?? false
        control.held = false
        rateControlled[key] = control
        guard changed || resend else {
            // The held change was undone before the interval ended: nothing to send.
            guard let max else { return [] }
            return [.schedule(.rateControl(.omaWatch(key)), at: control.lastNotified + max)]
        }
        watch.lastSent = BodyDigest(body)
        let updates = sub.stateChanged(body: body, now: now)
        watch.subscription = sub
        omaWatches[key] = watch
        return apply(updates, context: .omaWatch(key), now: now)
    }
}
