import NIOCore
import SIPStack

/// Flows 2 and 3 after a restore (docs/state.md, "After a restart"): the OMA watchers' dialogs
/// taken back with what the list server and the stand-ins hold of them, then each goes on: its
/// expiry timer again, attached to a leg toward the enterprise again where its leg was not kept;
/// the legs toward the enterprise refreshed (paced), unsubscribed again or made again.
extension GatewayCore {
    /// What the restored OMA watches and enterprise legs of `entries` do at once (after the leg
    /// pool took its legs back): the watches first, so that a leg whose watchers are gone leaves
    /// them.
    mutating func resumeOMAWatchers(_ entries: StoredEntries, now: NIODeadline, pace: () -> NIODeadline) -> [Action] {
        // Their keys only: the pool built the table of legs itself.
        let enterpriseLegs = Set(entries.entries(EnterpriseLeg.self).compactMap { Int($0.key) }).sorted()
        return resumeOMAWatches(entries.table(OMAWatcherNotifier.StoredWatch.self).keys.sorted(), now: now)
            + resumeEnterpriseLegs(enterpriseLegs, now: now, pace: pace)
    }

    /// The OMA watchers' dialogs: their expiry timers again; one never answered is ended and its
    /// resource leaves its leg; one whose leg was not kept is attached to a leg again.
    private mutating func resumeOMAWatches(_ keys: [Int], now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in keys {
            guard let watch = notifier[key] else { continue }
            if let subscription = watch.subscription {
                out.append(.schedule(.expiry(.omaWatch(key)), at: subscription.expiresAt))
                // A list has no leg of its own; its members are attached as theirs.
                if lists.isList(key) { continue }
            } else if let owner = lists.owner(of: key) {
                // A member whose list is gone (never answered, or not kept) goes with it.
                guard notifier[owner]?.subscription != nil else {
                    if let gone = forgetOMAWatch(key) { out += detachOMAWatch(gone, now: now) }
                    continue
                }
            } else if isWatchersOwn(key, watch) {
                if let gone = forgetOMAWatch(key) { out += detachOMAWatch(gone, now: now) }
                continue
            }
            let legKey = watch.leg
            if legKey.map({ legPool[$0]?.watches[watch.resource] != key }) ?? true {
                notifier.modify(key) { $0.leg = nil }
                out += attach(key, now: now)
            }
        }
        return out
    }

    /// The subscriptions toward the enterprise: refreshed (paced; with the additions and removals
    /// that were waiting at once), unsubscribed again when being ended, made again without a
    /// dialog; resources whose watcher is gone leave them.
    private mutating func resumeEnterpriseLegs(_ keys: [Int], now: NIODeadline, pace: () -> NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in keys {
            guard let held = legPool[key] else { continue }
            let gone = held.watches.filter { notifier[$0.value]?.leg != key }.map(\.key)
            switch legPool.detach(gone, from: key, now: now) {
            case nil: break
            case .removed(let actions): out += enterpriseLegActions(key, actions, now: now)
            case .ended(let output):
                out += apply(output)
                continue
            }
            switch legPool.resume(key, now: now, pace: pace) {
            case nil: break
            case .take(let actions): out += enterpriseLegActions(key, actions, now: now)
            case .output(let output): out += apply(output)
            case .restart: out += restartEnterpriseLeg(key, now: now)
            }
        }
        return out
    }

    /// A subscription toward the enterprise is made again with a new dialog (RFC 6665
    /// §4.1.2.2), after a refresh found it gone or when the restart came before its dialog
    /// existed: each watcher the leg carried is attached again (to a batch dialog with its pool,
    /// or a new one).
    mutating func restartEnterpriseLeg(_ key: Int, now: NIODeadline) -> [Action] {
        guard let leg = legPool[key] else { return [] }
        removeEnterpriseLeg(key)
        var out: [Action] = [.cancel(.refresh(.enterpriseLeg(key))), .cancel(.expiry(.enterpriseLeg(key)))]
        for (_, watch) in leg.watches.sorted(by: { $0.key < $1.key }) {
            notifier.modify(watch) { $0.leg = nil }
            out += attach(watch, single: leg.single, now: now)
        }
        return out
    }
}
