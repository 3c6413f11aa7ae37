import Foundation
import GatewayState
import NIOCore
import PresenceDocuments
import SIPStack

/// The notifier side of flow 2: the OMA watchers' presence subscriptions the gateway answers,
/// with the watches that stand in for watchers at the OMA presence server and the watches that
/// asked for rate control (RFC 6446). Its flow logic is in this folder: rate control below and
/// its timer in `GatewayCore+RateControl`, filters (RFC 4660), partial notifications (RFC
/// 5263), and the rest in `GatewayCore+OMAWatchers`; the stand-ins are made by
/// `OMAServerWatches/GatewayCore+WatcherMirror`. A served list's subscription and its members'
/// back-end watches are OMA watches too; what makes them so is kept by the notifier's
/// ``ResourceListServer`` (``lists``), a component of its own whose entries are facets of the
/// notifier's watches, stored in their records (`OMAWatcherNotifier+Storage`).
///
/// The tables are private: a watch is opened (``open(_:_:)``, ``standIn(_:_:for:)``), changed in
/// place (``modify(_:_:)``: no caller holds a copy to put back), answered (``answer(_:_:_:)``)
/// and removed (``close(_:held:forgotten:)``), which takes the stand-in index and rate control
/// with it, so no caller has to remember them. Answering and removing return the dialog opened
/// or closed and the quotas given back, for the coordinator to apply.
/// Quotas and the dialog index stay the coordinator's.
struct OMAWatcherNotifier: Sendable {
    private var watches = JournaledTable<GatewayCore.OMAWatch>()
    /// Watches that asked for rate control (RFC 6446), by key (below).
    private var rateControlled: [Int: RateControl] = [:]
    /// The stand-ins for watchers at the OMA presence server (`GatewayCore+WatcherMirror`): the
    /// linked OMA identity each stands in a watcher of, by key, and the index of them by that
    /// identity and the watcher's URI.
    private var standingIn: [Int: String] = [:]
    private(set) var standIns: [String: [String: Int]] = [:]
    /// The watches to report to the watchers' roster (``takeWatcherReports()``).
    private var reporting = WatcherReporting()
    /// The resource lists served to OMA watchers, by the key of their list watch.
    var lists = ResourceListServer()

    var count: Int { watches.count }

    /// Watchers at the OMA presence server stood in for, for metrics.
    var standInCount: Int { standingIn.count }
    var keys: [Int] { watches.keys }

    func first(where predicate: ((key: Int, value: GatewayCore.OMAWatch)) throws -> Bool) rethrows
        -> (key: Int, value: GatewayCore.OMAWatch)?
    {
        try watches.first(where: predicate)
    }

    subscript(key: Int) -> GatewayCore.OMAWatch? { watches[key] }

    /// A new watch.
    mutating func open(_ key: Int, _ watch: GatewayCore.OMAWatch) {
        watches[key] = watch
        reporting.changed(key)
    }

    /// Changes watch `key` in place (its storage is not copied); nil when there is none.
    @discardableResult
    mutating func modify<R>(_ key: Int, _ body: (inout GatewayCore.OMAWatch) -> R) -> R? {
        reporting.changed(key)
        return watches.modify(key, body)
    }

    /// The linked OMA identity the watch `key` stands in a watcher of, when it is a stand-in.
    func standsIn(_ key: Int) -> String? { standingIn[key] }

    /// Adds a watch that stands in for its watcher, listed by the OMA presence server for the
    /// linked OMA identity `identity`.
    mutating func standIn(_ key: Int, _ watch: GatewayCore.OMAWatch, for identity: String) {
        watches[key] = watch
        reporting.changed(key)
        index(key, watch, standingIn: identity)
    }

    /// Watch `key` answered with `subscription` (and what `answer` sets with it): its dialog,
    /// returned as opened for the coordinator to index (its peer was charged when its
    /// SUBSCRIBE was admitted).
    mutating func answer(
        _ key: Int, _ subscription: NotifierSubscription, _ answer: (inout GatewayCore.OMAWatch) -> Void = { _ in }
    ) -> ComponentOutput {
        var out = ComponentOutput()
        let answered: Void? = modify(key) { watch in
            watch.pending = nil
            watch.subscription = subscription
            answer(&watch)
        }
        guard answered != nil else { return out }
        out.dialog(.opened, .omaWatch(key), subscription.dialog.id.dialogKey)
        return out
    }

    /// Removes watch `key`: its dialog closed, when it was answered, and what it held of the
    /// quotas (`held`, the coordinator's to work out) given back. `forgotten`: another node
    /// holds it now, and the store is not told.
    mutating func close(_ key: Int, held: HeldQuota, forgotten: Bool = false)
        -> (watch: GatewayCore.OMAWatch?, output: ComponentOutput)
    {
        var out = ComponentOutput()
        let old = forgotten ? watches.forget(key) : watches.removeValue(forKey: key)
        removed(key, old)
        guard let old else { return (nil, out) }
        out.dialog(.closed, .omaWatch(key), old.dialogKey)
        out.released = [held]
        return (old, out)
    }

    private mutating func index(_ key: Int, _ watch: GatewayCore.OMAWatch, standingIn identity: String) {
        standingIn[key] = identity
        standIns[identity, default: [:]][watch.watcher.uri] = key
    }

    /// What hangs off a removed watch goes with it.
    private mutating func removed(_ key: Int, _ old: GatewayCore.OMAWatch?) {
        rateControlled[key] = nil
        reporting.changed(key)
        guard let identity = standingIn.removeValue(forKey: key), let old else { return }
        standIns[identity]?[old.watcher.uri] = nil
        if standIns[identity]?.isEmpty == true { standIns[identity] = nil }
    }

    // MARK: The watchers' roster

    /// Whether anyone follows watchers (``WatcherRoster``): the watches are then reported as
    /// they change, every one of them when following starts.
    mutating func followWatchers(_ on: Bool) { reporting.follow(on, keys: watches.keys) }

    /// Each watch changed since the last call, by key, as the roster files it: the enterprise
    /// identity it names, and whether the enterprise answered it yet. A linked identity's own
    /// watch and a stand-in for a watcher at the OMA presence server are not watchers of their
    /// own (nil).
    mutating func takeWatcherReports() -> [(key: Int, report: WatcherReport?)] {
        reporting.take().map { key in
            guard let watch = watches[key], watch.linked == nil, standingIn[key] == nil,
                let presentity = WatcherIdentity.addressOfRecord(watch.resource)
            else { return (key, nil) }
            let named = [presentity: WatcherReport.Naming(resource: watch.resource)]
            return (
                key, WatcherReport(source: .oma, watcher: watch.watcher, named: named, waiting: watch.pending != nil)
            )
        }
    }
}

// MARK: - Persistence

extension OMAWatcherNotifier {
    /// The watch `key` with what the other tables hold of it, for the store.
    func stored(_ key: Int) -> StoredWatch? {
        watches[key].map {
            StoredWatch(watch: $0, list: lists[key], listOwner: lists.owner(of: key), standsIn: standingIn[key])
        }
    }

    /// What the watch `key` holds of the coordinator's quotas (docs/security.md): a watcher's own
    /// subscription counts against its peer's quota, and against its watcher's unless it is a
    /// list's (whose members count instead). A linked identity's source, a stand-in for a
    /// watcher at the OMA presence server and a UPnP registration's watch (`registered`, which
    /// the coordinator lends: flow 5 caps those itself) are the gateway's own, charged to nobody.
    func held(of key: Int, _ watch: GatewayCore.OMAWatch, registered: Bool) -> HeldQuota {
        guard isWatchersOwn(key, watch, registered: registered) else { return HeldQuota() }
        return HeldQuota(watcher: lists.isList(key) ? nil : watch.watcher.uri, peer: watch.peer)
    }

    /// Whether the watch `key` is a watcher's own subscription (a list's included).
    func isWatchersOwn(_ key: Int, _ watch: GatewayCore.OMAWatch, registered: Bool) -> Bool {
        watch.linked == nil && standingIn[key] == nil && !registered
    }

    /// Lets go of the watch of `id`, which another node took over, without a message: its
    /// dialog closed, its quotas given back (`registered`: as for ``held(of:_:registered:)``),
    /// its timers cancelled, its list or membership forgotten.
    mutating func disown(_ id: StateRecordID, registered: Bool) -> ComponentOutput {
        guard id.kind == StoredWatch.recordKind.rawValue, let key = Int(id.key), let watch = watches[key] else {
            return ComponentOutput()
        }
        let held = held(of: key, watch, registered: registered)
        lists.forget(key)
        var out = close(key, held: held, forgotten: true).output
        out.actions += [.cancel(.expiry(.omaWatch(key))), .cancel(.firstAnswer(.omaWatch(key)))]
        return out
    }
}

/// The journal and restore, for the coordinator. A list's change is its list watch's record.
extension OMAWatcherNotifier: DurableComponent {
    var journaling: Bool {
        get { watches.journaling }
        set {
            watches.journaling = newValue
            lists.journaling = newValue
        }
    }

    mutating func takeChangedKeys() -> Set<Int> { watches.takeChanged().union(lists.takeChanged()) }

    func stateChanges(_ keys: Set<Int>, coding: RecordCoding, encoder: JSONEncoder) -> [StateChange] {
        StoredWatch.changes(keys.map(String.init), coding: coding, encoder: encoder) { Int($0).flatMap(stored) }
    }

    mutating func beginQuiet() {
        watches.beginQuiet()
        lists.beginQuiet()
    }

    mutating func endQuiet() {
        watches.endQuiet()
        lists.endQuiet()
    }

    /// Takes the watches back as the store held them, with their stand-in index and lists: their
    /// dialogs, and what they hold of the quotas. What each does next (its expiry timer, a leg
    /// toward the enterprise again) is the coordinator's (`GatewayCore+OMAWatcherRestore`),
    /// once the legs are back too.
    mutating func restore(_ entries: GatewayCore.StoredEntries, core: GatewayCore, now: NIODeadline)
        -> ComponentOutput
    {
        var out = ComponentOutput()
        for (key, stored) in entries.table(StoredWatch.self) {
            let watch = stored.watch
            watches.restore(key, watch)
            reporting.changed(key)
            if let identity = stored.standsIn { index(key, watch, standingIn: identity) }
            lists.restore(key, list: stored.list, owner: stored.listOwner)
            out.dialog(.restored, .omaWatch(key), watch.dialogKey)
            out.counted.append(held(of: key, watch, registered: core.upnp.registration(ofWatch: key) != nil))
        }
        return out
    }

    /// The records of the dialogs it holds (docs/state.md, "Several nodes").
    func dialogRecordIDs() -> [StateRecordID] {
        watches.keys.map { StateRecordID(kind: StoredWatch.recordKind.rawValue, key: String($0)) }
    }

    func holds(_ context: GatewayCore.Context) -> Bool? {
        guard case .omaWatch(let key) = context else { return nil }
        return watches[key] != nil
    }
}

// MARK: - Rate control

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
/// Only watches that ask keep an entry in the notifier's rate-control table, so the others pay
/// nothing. The entry is not stored durably: a restored watch's first change goes out at once
/// and its rate control starts from there (docs/flows.md, "Rate control").
extension OMAWatcherNotifier {
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
    mutating func notified(_ key: Int, now: NIODeadline) -> [GatewayCore.Action] {
        guard let sub = watches[key]?.subscription, !sub.isTerminated,
            sub.terms.maxRate != nil || sub.terms.minRate != nil || sub.terms.adaptiveMinRate != nil
        else {
            if rateControlled.removeValue(forKey: key) != nil {
                return [.cancel(.rateControl(.omaWatch(key)))]
            }
            return []
        }
        var control = rateControlled[key] ?? RateControl(lastNotified: now)
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
        rateControlled[key] = control
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
    mutating func holdsChange(_ key: Int, terms: SubscriptionTerms, now: NIODeadline) -> [GatewayCore.Action]? {
        guard let min = terms.minimumInterval, var control = rateControlled[key] else { return nil }
        let due = control.lastNotified + min
        guard now < due else { return nil }
        control.held = true
        rateControlled[key] = control
        return [.schedule(.rateControl(.omaWatch(key)), at: due)]
    }

    /// A change for OMA watch `key` is held already: a newer one waits for the same timer.
    func isHoldingChange(_ key: Int) -> Bool { rateControlled[key]?.held == true }

    /// Whether watch `key` has a rate-control entry (and so maybe a timer).
    func hasRateControl(_ key: Int) -> Bool { rateControlled[key] != nil }

    /// The rate-control timer of watch `key`: a held change, or a state that `min-rate` asks to
    /// be sent again, goes out as the state is now. `state` is the enterprise state its leg
    /// holds (lent by the coordinator, from the leg pool), rendered with `settings`.
    mutating func rateControlDue(_ key: Int, state: CategoriesDocument?, _ settings: CoreSettings, now: NIODeadline)
        -> WatchStep
    {
        guard var control = rateControlled[key], let watch = watches[key], let sub = watch.subscription,
            sub.status == .active, let state
        else { return (ComponentOutput(), false) }
        let full = filtered(key, settings.render(state, as: sub.terms.bodyType)).body
        let changed = BodyDigest(full) != watch.lastSent
        let max = control.resendAfter
        let resend = max.map { now >= control.lastNotified + $0 } ?? false
        control.held = false
        rateControlled[key] = control
        guard changed || resend else {
            // The held change was undone before the interval ended: nothing to send.
            guard let max else { return (ComponentOutput(), false) }
            let timer = GatewayCore.Action.schedule(.rateControl(.omaWatch(key)), at: control.lastNotified + max)
            return (ComponentOutput(actions: [timer]), false)
        }
        return watchActions(notify(key, full, now: now), key, now: now)
    }

}
