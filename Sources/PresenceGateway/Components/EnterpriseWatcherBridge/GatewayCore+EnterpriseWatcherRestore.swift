import NIOCore
import SIPMessages
import SIPStack

/// Flow 1 after a restore (docs/state.md, "After a restart"): the bridge took its watches, legs
/// and lists back (``EnterpriseWatcherBridge/restore(_:core:now:)``); here each goes on in its
/// dialog.
extension GatewayCore {
    /// What the restored watches, legs and lists of `entries` do at once: the legs and lists
    /// refreshed (paced by `pace`), unsubscribed again or made again; the watchers' expiry timers,
    /// and a leg for each resource whose leg was not kept. A leg whose watch was not taken back
    /// ends.
    mutating func resumeEnterpriseWatchers(_ entries: StoredEntries, now: NIODeadline, pace: () -> NIODeadline)
        -> [Action]
    {
        resumeOMALegs(entries.table(OMALeg.self).keys.sorted(), now: now, pace: pace)
            + resumeOMALists(entries.table(OMAList.self).keys.sorted(), now: now, pace: pace)
            + resumeEnterpriseWatches(entries.table(EnterpriseWatch.self).keys.sorted(), now: now)
    }

    /// The subscriptions the gateway holds toward the OMA side: refreshed (paced), unsubscribed
    /// again when they were being ended, made again when no dialog was made yet, ended when their
    /// watcher is gone.
    private mutating func resumeOMALegs(_ keys: [Int], now: NIODeadline, pace: () -> NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in keys {
            guard let leg = bridge[leg: key] else { continue }
            if bridge[watch: leg.watch] == nil {
                out += endOMALegs([key], now: now)
                continue
            }
            // A list's member comes back with its list (``resumeOMALists(_:now:pace:)``).
            guard let subscription = leg.subscription else { continue }
            switch subscription.status {
            case .unsubscribing:
                out += apply(bridge.unsubscribeLegAgain(key, now: now))
            case .subscribing:
                out += restartOMALeg(key, now: now)
            case .active, .pending:
                out.append(.schedule(.refresh(.omaLeg(key)), at: pace()))
            case .terminated:
                out += omaLegEnded(key, reason: "terminated", statusCode: nil, now: now)
            }
        }
        return out
    }

    /// The list subscriptions toward OMA RLSes: refreshed (paced) in their dialogs, unsubscribed
    /// again when they were being ended, made again when no dialog was made yet; a list whose
    /// document may not have been written is written first. The version of the last RLMI
    /// notification is not kept: the next one with full state is taken.
    private mutating func resumeOMALists(_ keys: [Int], now: NIODeadline, pace: () -> NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in keys {
            guard let list = bridge[list: key] else { continue }
            if list.closing {
                out += apply(bridge.unsubscribeListAgain(key, now: now))
                continue
            }
            if list.members.isEmpty || bridge[watch: list.watch] == nil {
                out += endOMAList(key, now: now)
                continue
            }
            guard let subscription = list.subscription else {
                out += bridge.writeListDocument(of: key)
                continue
            }
            switch subscription.status {
            case .unsubscribing:
                // Only a list being ended unsubscribes (above).
                out += restartOMAList(key)
            case .subscribing, .terminated:
                out += restartOMAList(key)
            case .active, .pending:
                out +=
                    list.changed
                    ? bridge.writeListDocument(of: key) : [.schedule(.refresh(.omaList(key)), at: pace())]
            }
        }
        return out
    }

    /// The enterprise watchers' dialogs: their expiry timers again (one that ran out fires at
    /// once), and a leg made for each resource whose leg was not kept.
    private mutating func resumeEnterpriseWatches(_ keys: [Int], now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in keys {
            guard let watch = bridge[watch: key], let notifier = watch.subscription?.subscription ?? watch.document
            else { continue }
            out.append(.schedule(.expiry(.enterpriseWatch(key)), at: notifier.expiresAt))
            let missing = watch.legs.filter { bridge[leg: $0.value] == nil }.map(\.key)
            guard !missing.isEmpty else { continue }
            var from = notifier.dialog.remoteURI
            from.tag = nil
            for resource in missing.sorted() {
                let leg = startOMALeg(
                    watch: key, resource: resource, watcher: watch.watcher, from: from, charged: charge(watch.peer))
                if let leg {
                    count(HeldQuota(watcher: watch.watcher.uri, peer: watch.peer))
                    out += leg.actions
                }
                bridge.modifyWatch(key) { $0.legs[resource] = leg?.key }
            }
        }
        return out
    }

    /// A subscription toward the OMA side is made again with a new dialog
    /// (``EnterpriseWatcherBridge/restartLeg(_:ids:)``).
    mutating func restartOMALeg(_ key: Int, now: NIODeadline) -> [Action] { apply(bridge.restartLeg(key, ids: &ids)) }
}
