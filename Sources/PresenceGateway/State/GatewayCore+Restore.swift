import Foundation
public import GatewayState
import MSPresenceEvents
public import NIOCore
import PresenceDocuments
import SIPMessages
public import SIPStack
import Synchronization
import _GatewayInternals

/// Taking back the state the durable store kept (docs/state.md, "After a restart"): after a
/// restart, or a dead node's state taken over by another. Every pair continues in its original
/// dialogs: the watchers' dialogs go on above every CSeq they used, and every subscription the
/// gateway holds is refreshed in its dialog (paced at `recoveryRate` a second), which brings the
/// current state back, so each watcher is sent it once the gateway has it again. Timers that ran
/// out meanwhile fire at once: a watcher's subscription that expired ends with
/// `terminated;reason=timeout` (RFC 6665 §4.2.2), and a subscription on the other side whose
/// refresh finds it gone (481) is made again with a new dialog (§4.1.2.2), its watcher's dialog
/// unchanged.
extension GatewayCore {
    /// Restores `records` into this core (empty, or already running when a node takes over
    /// another's dialogs) and returns what to do at once: unsubscribes of what was being ended,
    /// refreshes, expiry timers. A record that does not decode is an error naming it; nothing is
    /// restored then. `sliceSize`: records read at a time on one core (a large store is read in
    /// slices of that many, shared out among the cores as they finish one). `progress` is told
    /// the number of records read as they are, from any thread.
    public mutating func restore(
        _ records: [StateRecord], clock: WallClock, now: NIODeadline,
        recoveryRate: Int = 1000, sliceSize: Int = 2_000, progress: (@Sendable (Int) -> Void)? = nil
    ) throws(RestoreError) -> [Action] {
        try restore(
            records, clock: clock, now: now, recoveryRate: recoveryRate, sliceSize: sliceSize, skipping: false,
            progress: progress
        ).actions
    }

    /// ``restore(_:clock:now:recoveryRate:sliceSize:)`` record by record: each record that does
    /// not decode is left out and reported, the others are restored (a node taking over another's
    /// dialogs continues every one it can; docs/state.md, "Several nodes").
    public mutating func restoreReadable(
        _ records: [StateRecord], clock: WallClock, now: NIODeadline, recoveryRate: Int = 1000
    ) -> (actions: [Action], unreadable: [RestoreError]) {
        do {
            return try restore(
                records, clock: clock, now: now, recoveryRate: recoveryRate, sliceSize: 2_000, skipping: true,
                progress: nil)
        } catch {
            return ([], [error])
        }
    }

    private mutating func restore(
        _ records: [StateRecord], clock: WallClock, now: NIODeadline, recoveryRate: Int, sliceSize: Int,
        skipping: Bool, progress: (@Sendable (Int) -> Void)?
    ) throws(RestoreError) -> (actions: [Action], unreadable: [RestoreError]) {
        let (entries, unreadable) = try readRecords(
            records, clock: clock, sliceSize: sliceSize, skipping: skipping, progress: progress)
        // Keys handed out from now on do not repeat a restored one.
        for key in entries.numberedKeys { ids.noteRestoredKey(key) }
        var out = restore(\.bridge, from: entries, now: now)
        restoreOMAWatchDialogs(entries.table(StoredOMAWatch.self))
        // Before any watch is attached again: the legs toward the enterprise, and where the
        // enterprise said to subscribe.
        // Their keys only: the pool builds the table of legs itself.
        let enterpriseLegs = Set(entries.entries(EnterpriseLeg.self).compactMap { Int($0.key) }).sorted()
        out += restore(\.legPool, from: entries, now: now)
        var paced = 0
        func pace() -> NIODeadline {
            defer { paced += 1 }
            return now + .nanoseconds(Int64(paced) * 1_000_000_000 / Int64(max(1, recoveryRate)))
        }
        out += resumeEnterpriseWatchers(entries, now: now, pace: pace)
        out += restoreOMAWatches(entries.table(StoredOMAWatch.self).keys.sorted(), now: now)
        out += restoreEnterpriseLegs(enterpriseLegs, now: now, pace: pace)
        out += restore(\.linkedIdentities, from: entries, now: now)
        // Publications received for served identities: their composed state worked out, shown to
        // their watchers and published into the enterprise.
        let published = entries.entries(EventStateCompositor.Publication.self).map(\.value.resource)
        for resource in Set(published).sorted() {
            out += composedStateChanged(resource, publications: linkedIdentities.publications(of: resource), now: now)
        }
        out += restore(\.watcherInfo, from: entries, now: now)
        followWatcherInfoSubscribers()
        return (out + watcherInfoChanges(now: now), unreadable)
    }

    /// Restores one component's entries and applies what it returns. The component reads the
    /// rest of the core as restored so far from a copy that ends before anything is applied, so
    /// no table is copied on write.
    private mutating func restore<C: DurableComponent>(
        _ component: WritableKeyPath<GatewayCore, C>, from entries: StoredEntries, now: NIODeadline
    ) -> [Action] {
        for peer in self[keyPath: component].chargedPeers(in: entries) { _ = charge(peer) }
        let output: ComponentOutput
        do {
            let core = self
            output = self[keyPath: component].restore(entries, core: core, now: now)
        }
        return apply(output)
    }

    /// The OMA watchers' dialogs back in their tables (with what the list server and the
    /// stand-ins say of each), with their quotas and dialog index entries.
    private mutating func restoreOMAWatchDialogs(_ read: [Int: StoredOMAWatch]) {
        for (key, stored) in read {
            let watch = stored.watch
            notifier.restore(key, watch, standingInFor: stored.standsIn)
            lists.restore(key, list: stored.list, owner: stored.listOwner)
            count(held(of: key, watch))
            dialogChanged(.restored, .omaWatch(key), watch.dialogKey)
        }
    }

    /// The OMA watchers' dialogs: their expiry timers again; one never answered is ended and its
    /// resource leaves its leg; one whose leg was not kept is attached to a leg again.
    private mutating func restoreOMAWatches(_ keys: [Int], now: NIODeadline) -> [Action] {
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
    private mutating func restoreEnterpriseLegs(_ keys: [Int], now: NIODeadline, pace: () -> NIODeadline) -> [Action] {
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
            // As it is now: the removal's actions may have changed it.
            guard let leg = legPool[key] else { continue }
            switch leg.subscriber.subscription.status {
            case .unsubscribing:
                let actions = legPool.modify(key) { $0.subscriber.unsubscribeAgain() } ?? []
                if actions.contains(where: { if case .subscription(.ended) = $0 { true } else { false } }) {
                    removeEnterpriseLeg(key)
                    continue
                }
                out += legActions(
                    actions.compactMap { if case .subscription(let a) = $0 { a } else { nil } },
                    context: .enterpriseLeg(key))
                out.append(.schedule(.cleanup(.enterpriseLeg(key)), at: now + Self.cleanupDelay))
            case .subscribing, .terminated:
                out += restartEnterpriseLeg(key, now: now)
            case .active, .pending:
                if leg.subscriber.hasQueued {
                    let actions = legPool.modify(key) { $0.subscriber.resume(now: now) } ?? []
                    out += enterpriseLegActions(key, actions, now: now)
                } else {
                    out.append(.schedule(.refresh(.enterpriseLeg(key)), at: pace()))
                }
            }
        }
        return out
    }

    // MARK: - Subscriptions made again

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

// MARK: - Decoding

extension GatewayCore {
    /// Reads every record into ``StoredEntries``; a large store in slices on every core (decoding
    /// the JSON is most of a restart's time: `gateway-bench state`), merged in the records' order,
    /// so the result and the first error reported are those of reading them one by one. Many
    /// slices rather than one per core: records of one kind can be stored together, and kinds
    /// differ in cost, so equal halves left one core idle for a third of the read. `skipping`:
    /// a record that does not decode is left out and reported rather than failing the read.
    func readRecords(
        _ records: [StateRecord], clock: WallClock, sliceSize: Int, skipping: Bool,
        progress: (@Sendable (Int) -> Void)? = nil
    ) throws(RestoreError) -> (entries: StoredEntries, unreadable: [RestoreError]) {
        let slices = records.count / max(1, sliceSize)
        guard slices > 1, ProcessInfo.processInfo.activeProcessorCount > 1 else {
            return try readSlice(records[...], clock: clock, skipping: skipping, progress: progress)
        }
        let parts = Mutex<[Int: Result<(StoredEntries, [RestoreError]), RestoreError>]>([:])
        DispatchQueue.concurrentPerform(iterations: slices) { slice in
            let range = slice * records.count / slices..<(slice + 1) * records.count / slices
            let result = Result { () throws(RestoreError) in
                try readSlice(records[range], clock: clock, skipping: skipping, progress: progress)
            }
            parts.withLock { $0[slice] = result }
        }
        var entries = StoredEntries()
        var unreadable: [RestoreError] = []
        for slice in 0..<slices {
            guard let part = parts.withLock({ $0[slice] }) else { continue }
            let (read, skipped) = try part.get()
            entries.merge(read)
            unreadable += skipped
        }
        return (entries, unreadable)
    }

    private func readSlice(
        _ records: ArraySlice<StateRecord>, clock: WallClock, skipping: Bool, progress: (@Sendable (Int) -> Void)?
    ) throws(RestoreError) -> (StoredEntries, [RestoreError]) {
        let coding = recordCoding(clock: clock)
        let decoder = coding.decoder()
        var entries = StoredEntries()
        var unreadable: [RestoreError] = []
        for (n, record) in records.enumerated() {
            if let progress, n % Self.progressStep == Self.progressStep - 1 { progress(Self.progressStep) }
            do throws(RestoreError.Detail) {
                try entries.read(record, decoder: decoder, coding: coding)
            } catch {
                let failure = RestoreError(kind: record.kind, key: record.key, detail: error.text)
                guard skipping else { throw failure }
                unreadable.append(failure)
            }
        }
        if let progress { progress(records.count % Self.progressStep) }
        return (entries, unreadable)
    }

    /// Records read between two reports of progress.
    private static let progressStep = 1024
}
