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
        // Before the OMA watches: which of them carry a UPnP registration's contact (flow 5).
        out += restore(\.upnp, from: entries, now: now)
        out += restore(\.notifier, from: entries, now: now)
        // Before any watch is attached again: the legs toward the enterprise, and where the
        // enterprise said to subscribe.
        out += restore(\.legPool, from: entries, now: now)
        var paced = 0
        func pace() -> NIODeadline {
            defer { paced += 1 }
            return now + .nanoseconds(Int64(paced) * 1_000_000_000 / Int64(max(1, recoveryRate)))
        }
        out += resumeEnterpriseWatchers(entries, now: now, pace: pace)
        out += resumeOMAWatchers(entries, now: now, pace: pace)
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
