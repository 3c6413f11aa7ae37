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
/// - `adaptive-min-rate` (§7): the same, after a time that grows with the NOTIFYs sent over the
///   last ``adaptivePeriod(_:)`` (§7.4: count / (rate² × period)), at most one a minute too.
///   Combined as §8 says: it is lowered to `max-rate`, and a `min-rate` not below it is ignored.
///
/// Only watches that ask keep an entry in ``GatewayCore/rateControlled``, so the others pay
/// nothing. The entry is not stored durably: a restored watch's first change goes out at once
/// and its rate control starts from there (docs/flows.md, "Rate control").
extension GatewayCore {
    /// The highest `min-rate` honoured, in notifications per second (one a minute): a higher one
    /// is lowered to this.
    static let minRateCeiling = 1.0 / 60

    /// The terms as the gateway applies them (RFC 6446 §6.3, §7.3, §8): `min-rate` and
    /// `adaptive-min-rate` at most ``minRateCeiling`` and at most `max-rate`; a `min-rate` not
    /// below `adaptive-min-rate` is dropped.
    static func rateControlApplied(_ terms: SubscriptionTerms) -> SubscriptionTerms {
        var applied = terms
        let ceiling = Swift.min(minRateCeiling, terms.maxRate ?? minRateCeiling)
        if let rate = terms.minRate { applied.minRate = Swift.min(rate, ceiling) }
        if let rate = terms.adaptiveMinRate {
            let adaptive = Swift.min(rate, ceiling)
            applied.adaptiveMinRate = adaptive
            if let minimum = applied.minRate, minimum >= adaptive { applied.minRate = nil }
        }
        return applied
    }

    /// The rolling period over which `adaptive-min-rate` counts NOTIFYs, in units of
    /// 1 / adaptive-min-rate (§7.4: greater than one, best several).
    static let adaptivePeriodUnits = 10

    /// The rolling period for `rate`: ``adaptivePeriodUnits`` / rate seconds.
    static func adaptivePeriod(_ rate: Double) -> TimeAmount {
        .nanoseconds(Int64(Swift.min(Double(adaptivePeriodUnits) * 1e9 / rate, 3.2e18).rounded()))
    }

    /// The most NOTIFY times kept for `adaptive-min-rate`: beyond them the count stays there.
    static let adaptiveHistoryLimit = 1024

    struct RateControl: Sendable {
        /// When the last NOTIFY went out.
        var lastNotified: NIODeadline
        /// A change arrived within 1 / max-rate seconds and waits for the timer.
        var held = false
        /// How long after the last NOTIFY the state is sent again unprompted (`min-rate`,
        /// `adaptive-min-rate`); nil: never.
        var resendAfter: TimeAmount?
        /// For `adaptive-min-rate`: when the NOTIFYs of the last period went out, in nanoseconds
        /// from the first (so that a period longer than the uptime fits).
        var history: [Int64] = []
        var origin: NIODeadline?
    }

    /// A NOTIFY went to OMA watch `key`: its rate control starts over from now, and the timer is
    /// set for when the state is to be sent again unprompted (or cancelled when the watch asks
    /// for neither `min-rate` nor `adaptive-min-rate`).
    mutating func notified(_ key: Int, now: NIODeadline) -> [Action] {
        guard let sub = notifier[key]?.subscription, !sub.isTerminated,
            sub.terms.maxRate != nil || sub.terms.minRate != nil || sub.terms.adaptiveMinRate != nil
        else {
            if notifier.rateControlled.removeValue(forKey: key) != nil {
                return [.cancel(.rateControl(.omaWatch(key)))]
            }
            return []
        }
        var control = notifier.rateControlled[key] ?? RateControl(lastNotified: now)
        control.lastNotified = now
        control.held = false
        control.resendAfter = sub.terms.maximumInterval
        if let rate = sub.terms.adaptiveMinRate {
            let origin = control.origin ?? now
            control.origin = origin
            let timeout = Self.adaptiveTimeout(
                rate, terms: sub.terms, history: &control.history, at: (now - origin).nanoseconds)
            control.resendAfter = control.resendAfter.map { Swift.min($0, timeout) } ?? timeout
        } else {
            control.history = []
            control.origin = nil
        }
        notifier.rateControlled[key] = control
        guard let after = control.resendAfter else { return [.cancel(.rateControl(.omaWatch(key)))] }
        return [.schedule(.rateControl(.omaWatch(key)), at: now + after)]
    }

    /// RFC 6446 §7.2, §7.4: the NOTIFY sent at `now` (nanoseconds from the first) joins
    /// `history` (on the first, a history of period × rate NOTIFYs evenly spread over the period
    /// before), those older than the period leave it, and the time to the next unprompted NOTIFY
    /// is count / (rate² × period), at least 1 / max-rate (equation 2).
    static func adaptiveTimeout(
        _ rate: Double, terms: SubscriptionTerms, history: inout [Int64], at now: Int64
    ) -> TimeAmount {
        let period = adaptivePeriod(rate).nanoseconds
        if history.isEmpty {
            // period × rate = adaptivePeriodUnits NOTIFYs; the one a whole period ago has left it.
            let spacing = period / Int64(adaptivePeriodUnits)
            history = (1..<adaptivePeriodUnits).reversed().map { now - spacing * Int64($0) }
        }
        history.append(now)
        history.removeAll { $0 <= now - period }
        if history.count > adaptiveHistoryLimit { history.removeFirst(history.count - adaptiveHistoryLimit) }
        let seconds = Double(history.count) / (rate * rate * Double(period) / 1e9)
        let timeout = TimeAmount.nanoseconds(Int64(Swift.min(seconds * 1e9, 3.2e18).rounded(.up)))
        return terms.minimumInterval.map { Swift.max($0, timeout) } ?? timeout
    }

    /// Whether a change for OMA watch `key`, none held yet, is held by its `max-rate`: nil when
    /// it may go out now, else the timer that sends it (later changes wait for the same one:
    /// ``isHoldingChange(_:)``).
    mutating func holdsChange(_ key: Int, terms: SubscriptionTerms, now: NIODeadline) -> [Action]? {
        guard let min = terms.minimumInterval, var control = notifier.rateControlled[key] else { return nil }
        let due = control.lastNotified + min
        guard now < due else { return nil }
        control.held = true
        notifier.rateControlled[key] = control
        return [.schedule(.rateControl(.omaWatch(key)), at: due)]
    }

    /// A change for OMA watch `key` is held already: a newer one waits for the same timer.
    func isHoldingChange(_ key: Int) -> Bool { notifier.rateControlled[key]?.held == true }

    /// The rate-control timer of OMA watch `key`: a held change, or a state that `min-rate` asks
    /// to be sent again, goes out as the state is now.
    mutating func rateControlDue(_ key: Int, now: NIODeadline) -> [Action] {
        guard var control = notifier.rateControlled[key], var watch = notifier[key], var sub = watch.subscription,
            sub.status == .active, let leg = watch.leg,
            let state = legPool.legs[leg]?.categories[watch.resource]
        else { return [] }
        let full = watch.filtered(render(state, as: sub.terms.bodyType)).body
        let changed = BodyDigest(full) != watch.lastSent
        let max = control.resendAfter
        let resend = max.map { now >= control.lastNotified + $0 } ?? false
        control.held = false
        notifier.rateControlled[key] = control
        guard changed || resend else {
            // The held change was undone before the interval ended: nothing to send.
            guard let max else { return [] }
            return [.schedule(.rateControl(.omaWatch(key)), at: control.lastNotified + max)]
        }
        watch.lastSent = BodyDigest(full)
        let (body, type) = watch.body(for: full, forceFull: false)
        let updates = sub.stateChanged(body: body, bodyType: type, now: now)
        watch.subscription = sub
        notifier[key] = watch
        return apply(updates, context: .omaWatch(key), now: now)
    }
}
