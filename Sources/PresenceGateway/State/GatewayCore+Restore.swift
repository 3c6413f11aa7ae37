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
    /// slices of that many, shared out among the cores as they finish one).
    public mutating func restore(
        _ records: [StateRecord], clock: WallClock, now: NIODeadline,
        recoveryRate: Int = 1000, sliceSize: Int = 2_000
    ) throws(RestoreError) -> [Action] {
        try restore(records, clock: clock, now: now, recoveryRate: recoveryRate, sliceSize: sliceSize, skipping: false)
            .actions
    }

    /// ``restore(_:clock:now:recoveryRate:sliceSize:)`` record by record: each record that does
    /// not decode is left out and reported, the others are restored (a node taking over another's
    /// dialogs continues every one it can; docs/state.md, "Several nodes").
    public mutating func restoreReadable(
        _ records: [StateRecord], clock: WallClock, now: NIODeadline, recoveryRate: Int = 1000
    ) -> (actions: [Action], unreadable: [RestoreError]) {
        do {
            return try restore(
                records, clock: clock, now: now, recoveryRate: recoveryRate, sliceSize: 2_000, skipping: true)
        } catch {
            return ([], [error])
        }
    }

    private mutating func restore(
        _ records: [StateRecord], clock: WallClock, now: NIODeadline, recoveryRate: Int, sliceSize: Int,
        skipping: Bool
    ) throws(RestoreError) -> (actions: [Action], unreadable: [RestoreError]) {
        var decoded = Decoded()
        decoded.skipUnreadable = skipping
        try decoded.read(records, core: self, clock: clock, sliceSize: sliceSize)
        var out: [Action] = []
        var dropped: [Int: EnterpriseWatch] = [:]

        for (key, watch) in decoded.enterpriseWatches {
            noteRestoredKey(key)
            guard watch.pending == nil, decoded.answered.contains(key) else {
                dropped[key] = watch
                continue
            }
            enterpriseWatches.restore(key, watch)
            _ = takePeerQuotaRestored(watch.peer)
            if let id = (watch.subscription?.subscription ?? watch.document)?.dialog.id {
                dialogs.insert(DialogKey(callID: id.callID, localTag: id.localTag), .enterpriseWatch(key))
            }
        }
        for (key, list) in decoded.omaLists {
            noteRestoredKey(key)
            omaLists.restore(key, list)
            listDocuments[list.document, default: ListDocument()].lists.insert(key)
            if let subscription = list.subscription {
                dialogs.insert(DialogKey(callID: subscription.callID, localTag: subscription.localTag), .omaList(key))
            }
        }
        for (key, leg) in decoded.omaLegs {
            noteRestoredKey(key)
            // A member whose list was not kept is left out: its watch makes it a leg of its own.
            if let list = leg.list, decoded.omaLists[list]?.members[leg.resource] != key { continue }
            // Charged to the sender of its watcher's SUBSCRIBE, as when it was made.
            var leg = leg
            leg.charged = charge(decoded.enterpriseWatches[leg.watch]?.peer)
            omaLegs.restore(key, leg)
            takeQuotaRestored(leg.watcher)
            notePresentityLeg(leg.resource)
            if let key = sender(of: leg.charged) { peerLoad[key, default: 0] += 1 }
            if let subscription = leg.subscription {
                dialogs.insert(DialogKey(callID: subscription.callID, localTag: subscription.localTag), .omaLeg(key))
            }
        }
        for (key, watch) in decoded.omaWatches {
            noteRestoredKey(key)
            omaWatches.restore(key, watch)
            if watch.listOwner != nil { listMemberWatches += 1 }
            if let identity = watch.mirrorOf { standIns[identity, default: [:]][watch.watcher.uri] = key }
            if watch.takesQuota {
                if watch.takesWatcherSlot { takeQuotaRestored(watch.watcher.uri) }
                _ = takePeerQuotaRestored(watch.peer)
            }
            if let id = watch.subscription?.dialog.id {
                dialogs.insert(DialogKey(callID: id.callID, localTag: id.localTag), .omaWatch(key))
            }
        }
        for (key, leg) in decoded.enterpriseLegs {
            noteRestoredKey(key)
            enterpriseLegs.restore(key, leg)
            let subscription = leg.subscriber.subscription
            dialogs.insert(DialogKey(callID: subscription.callID, localTag: subscription.localTag), .enterpriseLeg(key))
        }
        for (resource, pool) in decoded.pools { pools[resource] = pool }
        if decoded.batchRefused { batchRefused = true }
        for (identity, publisher) in decoded.servicePublishers { servicePublishers[identity] = publisher }
        journal.writtenPublications.formUnion(decoded.publications.map(\.entityTag))

        // Watchers never answered: ended, their legs unsubscribed. The store learns it.
        for (key, watch) in dropped.sorted(by: { $0.key < $1.key }) {
            enterpriseWatches.restore(key, watch)
            enterpriseWatches.removeValue(forKey: key)
            out += endOMALegs(watch.legs.values.filter { decoded.omaLegs[$0] != nil }, now: now)
        }
        var paced = 0
        func pace() -> NIODeadline {
            defer { paced += 1 }
            return now + .nanoseconds(Int64(paced) * 1_000_000_000 / Int64(max(1, recoveryRate)))
        }
        out += restoreOMALegs(decoded.omaLegs.keys.sorted(), now: now, pace: pace)
        out += restoreOMALists(decoded.omaLists.keys.sorted(), now: now, pace: pace)
        out += restoreEnterpriseWatches(decoded.enterpriseWatches.keys.sorted(), now: now)
        out += restoreOMAWatches(decoded.omaWatches.keys.sorted(), now: now)
        out += restoreEnterpriseLegs(decoded.enterpriseLegs.keys.sorted(), now: now, pace: pace)
        out += restoreLinked(decoded.linked, now: now)
        out += compositorRestored(decoded.publications, now: now)
        out += restoreWinfoWatches(decoded.winfoWatches, now: now)
        return (out + watcherInfoChanges(now: now), decoded.unreadable)
    }

    /// Watcher information subscriptions: back in their dialogs with their expiry (one that ran
    /// out meanwhile ends at once), each sent the full list (``watcherInfoChanges(now:)``).
    private mutating func restoreWinfoWatches(_ watches: [Int: WinfoWatch], now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for (key, watch) in watches.sorted(by: { $0.key < $1.key }) {
            noteRestoredKey(key)
            winfoWatches[key] = watch
            _ = takePeerQuotaRestored(watch.peer)
            let dialog = watch.subscription.dialog.id
            dialogs.insert(DialogKey(callID: dialog.callID, localTag: dialog.localTag), .winfoWatch(key))
            out.append(.schedule(.expiry(.winfoWatch(key)), at: watch.subscription.expiresAt))
        }
        return out
    }

    /// The subscriptions the gateway holds toward the OMA side: refreshed (paced), unsubscribed
    /// again when they were being ended, made again when no dialog was made yet, ended when their
    /// watcher is gone.
    private mutating func restoreOMALegs(_ keys: [Int], now: NIODeadline, pace: () -> NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in keys {
            guard var leg = omaLegs[key] else { continue }
            if enterpriseWatches[leg.watch] == nil {
                out += endOMALegs([key], now: now)
                continue
            }
            // A list's member comes back with its list (``restoreOMALists(_:now:pace:)``).
            guard var subscription = leg.subscription else { continue }
            switch subscription.status {
            case .unsubscribing:
                let actions = subscription.unsubscribeAgain()
                leg.subscription = subscription
                omaLegs[key] = leg
                if actions.contains(where: { if case .ended = $0 { true } else { false } }) {
                    removeOMALeg(key)
                    continue
                }
                out += legActions(actions, context: .omaLeg(key))
                out.append(.schedule(.cleanup(.omaLeg(key)), at: now + Self.cleanupDelay))
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
    private mutating func restoreOMALists(_ keys: [Int], now: NIODeadline, pace: () -> NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in keys {
            guard var list = omaLists[key] else { continue }
            if list.closing {
                // Being ended: unsubscribed again, or forgotten when it has no dialog to end.
                guard var subscription = list.subscription, subscription.status == .unsubscribing else {
                    removeOMAList(key)
                    continue
                }
                let actions = subscription.unsubscribeAgain()
                list.subscription = subscription
                omaLists[key] = list
                if actions.contains(where: { if case .ended = $0 { true } else { false } }) {
                    removeOMAList(key)
                    continue
                }
                out += legActions(actions, context: .omaList(key))
                out.append(.schedule(.cleanup(.omaList(key)), at: now + Self.cleanupDelay))
                continue
            }
            if list.members.isEmpty || enterpriseWatches[list.watch] == nil {
                out += endOMAList(key, now: now)
                continue
            }
            guard let subscription = list.subscription else {
                out += writeListDocument(of: key)
                continue
            }
            switch subscription.status {
            case .unsubscribing:
                // Only a list being ended unsubscribes (above).
                out += restartOMAList(key)
            case .subscribing, .terminated:
                out += restartOMAList(key)
            case .active, .pending:
                out += list.changed ? writeListDocument(of: key) : [.schedule(.refresh(.omaList(key)), at: pace())]
            }
        }
        return out
    }

    /// The enterprise watchers' dialogs: their expiry timers again (one that ran out fires at
    /// once), and a leg made for each resource whose leg was not kept.
    private mutating func restoreEnterpriseWatches(_ keys: [Int], now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in keys {
            guard var watch = enterpriseWatches[key], let notifier = watch.subscription?.subscription ?? watch.document
            else { continue }
            out.append(.schedule(.expiry(.enterpriseWatch(key)), at: notifier.expiresAt))
            let missing = watch.legs.filter { omaLegs[$0.value] == nil }.map(\.key)
            guard !missing.isEmpty else { continue }
            var from = notifier.dialog.remoteURI
            from.tag = nil
            for resource in missing.sorted() {
                watch.legs[resource] = nil
                if let leg = startOMALeg(
                    watch: key, resource: resource, watcher: watch.watcher, from: from, charged: charge(watch.peer))
                {
                    takeQuotaRestored(watch.watcher.uri)
                    _ = takePeerQuotaRestored(watch.peer)
                    watch.legs[resource] = leg.key
                    out += leg.actions
                }
            }
            enterpriseWatches[key] = watch
        }
        return out
    }

    /// The OMA watchers' dialogs: their expiry timers again; one never answered is ended and its
    /// resource leaves its leg; one whose leg was not kept is attached to a leg again.
    private mutating func restoreOMAWatches(_ keys: [Int], now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in keys {
            guard let watch = omaWatches[key] else { continue }
            if let subscription = watch.subscription {
                out.append(.schedule(.expiry(.omaWatch(key)), at: subscription.expiresAt))
                // A list has no leg of its own; its members are attached as theirs.
                if watch.isList { continue }
            } else if let owner = watch.listOwner {
                // A member whose list is gone (never answered, or not kept) goes with it.
                guard omaWatches[owner]?.subscription != nil else {
                    if let gone = forgetOMAWatch(key) { out += detachOMAWatch(gone, now: now) }
                    continue
                }
            } else if watch.takesQuota {
                if let gone = forgetOMAWatch(key) { out += detachOMAWatch(gone, now: now) }
                continue
            }
            let legKey = watch.leg
            if legKey.map({ enterpriseLegs[$0]?.watches[watch.resource] != key }) ?? true {
                omaWatches[key]?.leg = nil
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
            guard var leg = enterpriseLegs[key] else { continue }
            let gone = leg.watches.filter { omaWatches[$0.value]?.leg != key }.map(\.key)
            if !gone.isEmpty {
                for resource in gone { leg.watches[resource] = nil }
                if leg.watches.isEmpty {
                    enterpriseLegs[key] = leg
                    out += endEnterpriseLeg(key, now: now)
                    continue
                }
                let actions = leg.subscriber.remove(gone, now: now)
                enterpriseLegs[key] = leg
                out += enterpriseLegActions(key, actions, now: now)
            }
            switch leg.subscriber.subscription.status {
            case .unsubscribing:
                let actions = leg.subscriber.unsubscribeAgain()
                enterpriseLegs[key] = leg
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
                    let actions = leg.subscriber.resume(now: now)
                    enterpriseLegs[key] = leg
                    out += enterpriseLegActions(key, actions, now: now)
                } else {
                    out.append(.schedule(.refresh(.enterpriseLeg(key)), at: pace()))
                }
            }
        }
        return out
    }

    /// Linked identities' publications toward the OMA presence server: continued (the PUBLISH
    /// that was under way again, or a refresh by expiry), or removed when the identity is no
    /// longer configured.
    private mutating func restoreLinked(_ restored: [(Int, LinkedPublication)], now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for (key, link) in restored {
            noteRestoredKey(key)
            var link = link
            let configured = configuration.linkedIdentities.contains { $0 == link.identity }
            if var client = link.client {
                let actions = configured ? client.resume(now: now) : client.remove()
                link.client = client
                out += publicationActions(actions, key: key)
            }
            if !configured { link.watch = nil }
            if link.watch.map({ omaWatches[$0]?.linked != key }) ?? false { link.watch = nil }
            linked[key] = link
            journal.link(key)
            if configured, link.watch == nil { out.append(.schedule(.retry(.linkedPublication(key)), at: now)) }
        }
        return out
    }

    /// Publications received for served identities: their expiry timers again, and the composed
    /// state worked out, shown to their watchers and published into the enterprise.
    private mutating func compositorRestored(_ publications: [EventStateCompositor.Publication], now: NIODeadline)
        -> [Action]
    {
        guard !publications.isEmpty else { return [] }
        var out: [Action] = []
        for action in compositor.restore(publications) {
            if case .scheduleExpiry(let tag, let at) = action { out.append(.schedule(.publicationExpiry(tag), at: at)) }
        }
        for resource in Set(publications.map(\.resource)).sorted() {
            out += composedStateChanged(resource, publications: compositor.publications(of: resource), now: now)
        }
        return out
    }

    // MARK: - Subscriptions made again

    /// A subscription toward the OMA side is made again with a new dialog (RFC 6665 §4.1.2.2:
    /// "an unrelated initial SUBSCRIBE request with a freshly generated Call-ID and a new, unique
    /// From tag"): after a refresh found it gone (481), or when the restart came before its
    /// dialog existed. The watcher's dialog and the last state seen stay.
    mutating func restartOMALeg(_ key: Int, now: NIODeadline) -> [Action] {
        guard var leg = omaLegs[key], let old = leg.subscription else { return [] }
        dialogs.remove(DialogKey(callID: old.callID, localTag: old.localTag), .omaLeg(key))
        let (subscription, actions) = SubscriberSubscription.start(
            old.configuration, callID: ids.callID(), localTag: ids.tag())
        leg.subscription = subscription
        leg.closing = false
        omaLegs[key] = leg
        dialogs.insert(DialogKey(callID: subscription.callID, localTag: subscription.localTag), .omaLeg(key))
        return [.cancel(.refresh(.omaLeg(key))), .cancel(.expiry(.omaLeg(key)))]
            + legActions(actions, context: .omaLeg(key))
    }

    /// The same toward the enterprise: each watcher the leg carried is attached again (to a batch
    /// dialog with its pool, or a new one).
    mutating func restartEnterpriseLeg(_ key: Int, now: NIODeadline) -> [Action] {
        guard let leg = enterpriseLegs[key] else { return [] }
        removeEnterpriseLeg(key)
        var out: [Action] = [.cancel(.refresh(.enterpriseLeg(key))), .cancel(.expiry(.enterpriseLeg(key)))]
        for (_, watch) in leg.watches.sorted(by: { $0.key < $1.key }) {
            omaWatches[watch]?.leg = nil
            out += attach(watch, single: leg.single, now: now)
        }
        return out
    }

    /// Keys handed out after a restore do not repeat a restored one of this core's range (a
    /// dead node's records taken over keep their own keys, in that node's range).
    private mutating func noteRestoredKey(_ key: Int) {
        guard key > keyBase, key - keyBase < Self.keyRangeSize else { return }
        nextKey = max(nextKey, key - keyBase)
    }

    /// Keys per node: 2⁴⁰.
    static let keyRangeSize = 1 << 40

    // MARK: - Quotas of restored subscriptions

    /// A restored subscription counts against its watcher's quota, whatever the limit is now.
    private mutating func takeQuotaRestored(_ watcher: String) {
        watcherLoad[watcher.hashValue] = (watcherLoad[watcher.hashValue] ?? 0) + 1
    }

    private mutating func takePeerQuotaRestored(_ peer: DialogPeer?) -> Bool {
        guard let peer else { return true }
        peerLoad[loadKey(peer), default: 0] += 1
        return true
    }
}

// MARK: - Decoding

extension GatewayCore {
    /// The records read back into values, by kind, before any of them enters the core.
    struct Decoded {
        var enterpriseWatches: [Int: EnterpriseWatch] = [:]
        /// Watches whose SUBSCRIBE had been answered.
        var answered: Set<Int> = []
        var omaLegs: [Int: OMALeg] = [:]
        var omaLists: [Int: OMAList] = [:]
        var omaWatches: [Int: OMAWatch] = [:]
        var enterpriseLegs: [Int: EnterpriseLeg] = [:]
        var linked: [(Int, LinkedPublication)] = []
        var publications: [EventStateCompositor.Publication] = []
        var servicePublishers: [String: CategoryPublisher] = [:]
        var pools: [String: String] = [:]
        var batchRefused = false
        var winfoWatches: [Int: WinfoWatch] = [:]
        /// Leave out a record that does not decode (into ``unreadable``) rather than fail.
        var skipUnreadable = false
        var unreadable: [RestoreError] = []

        /// Reads every record; a large store in slices on every core (decoding the JSON is most of
        /// a restart's time: `gateway-bench state`), merged in the records' order, so the result
        /// and the first error reported are those of reading them one by one. Many slices rather
        /// than one per core: records of one kind can be stored together, and kinds differ in
        /// cost, so equal halves left one core idle for a third of the read.
        mutating func read(_ records: [StateRecord], core: GatewayCore, clock: WallClock, sliceSize: Int)
            throws(RestoreError)
        {
            let slices = records.count / max(1, sliceSize)
            guard slices > 1, ProcessInfo.processInfo.activeProcessorCount > 1 else {
                try read(records[...], core: core, clock: clock)
                linked.sort { $0.0 < $1.0 }
                return
            }
            let parts = Mutex<[Int: Result<Decoded, RestoreError>]>([:])
            let skipUnreadable = skipUnreadable
            DispatchQueue.concurrentPerform(iterations: slices) { slice in
                var part = Decoded()
                part.skipUnreadable = skipUnreadable
                let range = slice * records.count / slices..<(slice + 1) * records.count / slices
                let result = Result { () throws(RestoreError) -> Decoded in
                    try part.read(records[range], core: core, clock: clock)
                    return part
                }
                parts.withLock { $0[slice] = result }
            }
            for slice in 0..<slices {
                guard let part = parts.withLock({ $0[slice] }) else { continue }
                merge(try part.get())
            }
            linked.sort { $0.0 < $1.0 }
        }

        private mutating func read(_ records: ArraySlice<StateRecord>, core: GatewayCore, clock: WallClock)
            throws(RestoreError)
        {
            let decoder = JSONDecoder()
            for record in records {
                do throws(RestoreError.Detail) {
                    try read(record, decoder: decoder, core: core, clock: clock)
                } catch {
                    let failure = RestoreError(kind: record.kind, key: record.key, detail: error.text)
                    guard skipUnreadable else { throw failure }
                    unreadable.append(failure)
                }
            }
        }

        /// Adds what a later slice of the records read.
        private mutating func merge(_ other: Decoded) {
            enterpriseWatches.merge(other.enterpriseWatches) { _, later in later }
            answered.formUnion(other.answered)
            omaLegs.merge(other.omaLegs) { _, later in later }
            omaLists.merge(other.omaLists) { _, later in later }
            omaWatches.merge(other.omaWatches) { _, later in later }
            enterpriseLegs.merge(other.enterpriseLegs) { _, later in later }
            linked += other.linked
            publications += other.publications
            servicePublishers.merge(other.servicePublishers) { _, later in later }
            pools.merge(other.pools) { _, later in later }
            batchRefused = batchRefused || other.batchRefused
            winfoWatches.merge(other.winfoWatches) { _, later in later }
            unreadable += other.unreadable
        }

        private mutating func read(
            _ record: StateRecord, decoder: JSONDecoder, core: GatewayCore,
            clock: WallClock
        ) throws(RestoreError.Detail) {
            func decode<R: Decodable>(_ type: R.Type) throws(RestoreError.Detail) -> R {
                do { return try decoder.decode(type, from: Data(record.body)) } catch {
                    throw RestoreError.Detail("unreadable: \(error)")
                }
            }
            func key() throws(RestoreError.Detail) -> Int {
                guard let key = Int(record.key) else { throw RestoreError.Detail("the key is not a number") }
                return key
            }
            func restored<T>(_ make: () throws(SIPStackError) -> T) throws(RestoreError.Detail) -> T {
                do { return try make() } catch { throw RestoreError.Detail(error.detail) }
            }
            guard let kind = RecordKind(rawValue: record.kind) else {
                throw RestoreError.Detail("unknown kind (written by a newer presence-gateway?)")
            }
            switch kind {
            case .enterpriseWatch:
                let r = try decode(EnterpriseWatchRecord.self)
                var watch = EnterpriseWatch(
                    watcher: try GatewayCore.watcher(r.watcher, r.network), pending: nil, peer: try core.peer(r.peer))
                let reserved = 2 * GatewayCore.sequenceBlock
                if var subscription = r.subscription {
                    subscription.subscription.contact =
                        core.contactText(.enterprise, for: watch.peer) ?? subscription.subscription.contact
                    watch.subscription = try restored { () throws(SIPStackError) in
                        try BatchCategorySubscription(record: subscription, clock: clock, reservedSequences: reserved)
                    }
                }
                if var document = r.document {
                    document.contact = core.contactText(.enterprise, for: watch.peer) ?? document.contact
                    watch.document = try restored { () throws(SIPStackError) in
                        try NotifierSubscription(record: document, clock: clock, reservedSequences: reserved)
                    }
                }
                watch.documentResource = r.documentResource
                for (resource, leg) in r.legs.sorted(by: { $0.key < $1.key }) { watch.legs[resource] = leg }
                watch.single = r.single
                watch.refused = Set(r.refused)
                watch.awaiting = Set(r.awaiting ?? [])
                let key = try key()
                if r.answered && (watch.subscription != nil || watch.document != nil) { answered.insert(key) }
                enterpriseWatches[key] = watch
            case .omaLeg:
                let r = try decode(OMALegRecord.self)
                guard let handling = SubHandling(token: r.handling) else {
                    throw RestoreError.Detail("unknown sub-handling \(r.handling)")
                }
                guard (r.subscription == nil) != (r.list == nil) else {
                    throw RestoreError.Detail("a leg needs a subscription or a list, not both")
                }
                let subscription = try r.subscription.map { record throws(RestoreError.Detail) in
                    try restored { () throws(SIPStackError) in
                        try SubscriberSubscription(record: core.withOMAContact(record), clock: clock)
                    }
                }
                var leg = OMALeg(
                    watch: r.watch, watcher: r.watcher, resource: r.resource, subscription: subscription, list: r.list,
                    categories: nil, handling: handling)
                leg.closing = r.closing
                leg.pending = r.pending
                leg.peer = try core.peer(r.peer)
                omaLegs[try key()] = leg
            case .omaList:
                let r = try decode(OMAListRecord.self)
                guard let from = try? SIPAddress(r.from) else {
                    throw RestoreError.Detail("from \(r.from) does not parse")
                }
                var list = OMAList(
                    watch: r.watch, watcher: r.watcher, from: from, domain: r.domain, uri: r.uri, document: r.document)
                for (resource, member) in r.members.sorted(by: { $0.value < $1.value }) {
                    list.members[resource] = member
                }
                list.subscription = try r.subscription.map { record throws(RestoreError.Detail) in
                    try restored { () throws(SIPStackError) in
                        try SubscriberSubscription(record: core.withOMAContact(record), clock: clock)
                    }
                }
                list.changed = r.changed
                list.closing = r.closing
                list.peer = try core.peer(r.peer)
                omaLists[try key()] = list
            case .omaWatch:
                let r = try decode(OMAWatchRecord.self)
                var watch = OMAWatch(
                    watcher: try GatewayCore.watcher(r.watcher, r.network), resource: r.resource, linked: r.linked,
                    peer: try core.peer(r.peer))
                if var subscription = r.subscription, r.answered {
                    subscription.contact = core.contactText(.oma, for: watch.peer) ?? subscription.contact
                    watch.subscription = try restored { () throws(SIPStackError) in
                        try NotifierSubscription(
                            record: subscription, clock: clock, reservedSequences: 2 * GatewayCore.sequenceBlock)
                    }
                }
                watch.leg = r.leg
                if let owner = r.listOwner { watch.role = .member(of: owner) }
                if let identity = r.mirrorOf { watch.role = .mirror(of: identity) }
                if let list = r.list {
                    // The version is written when it enters a new block, as the CSeq is: the next
                    // notification skips ahead of any sent since, which tells the watcher to
                    // refresh for full state (RFC 4662 §5.6.2); one repeated would be discarded.
                    // What each part said is not kept: the next change of each is sent.
                    watch.role = .list(
                        ResourceList(
                            members: list.members.map {
                                .init(uri: $0.uri, watch: $0.watch, ended: $0.ended, instance: $0.instance)
                            }, version: list.version &+ 2 * GatewayCore.sequenceBlock))
                }
                if let stored = r.filter, let terms = watch.subscription?.terms {
                    do {
                        watch.filter = try GatewayCore.watcherFilter(
                            body: stored.bytes, type: GatewayCore.simpleFilterType, resource: r.resource, terms: terms)
                    } catch { throw RestoreError.Detail("filter: \(error.reason)") }
                }
                if let version = r.partialVersion {
                    // Two blocks above the stored version, so above every one sent (as for CSeqs);
                    // nothing to diff against: the next document is full.
                    watch.partial = PartialNotifications(version: version &+ 2 * GatewayCore.sequenceBlock, last: nil)
                }
                omaWatches[try key()] = watch
            case .enterpriseLeg:
                var r = try decode(EnterpriseLegRecord.self)
                r.subscriber.subscription.contact = core.contactText(.enterprise) ?? r.subscriber.subscription.contact
                let subscriber = try restored { () throws(SIPStackError) in
                    try BatchCategorySubscriber(record: r.subscriber, clock: clock)
                }
                var watches: SmallMap<String, Int> = [:]
                for (resource, watch) in r.watches.sorted(by: { $0.key < $1.key }) { watches[resource] = watch }
                var leg = EnterpriseLeg(
                    watcher: r.watcher, pool: r.pool, single: r.single, subscriber: subscriber, watches: watches,
                    network: try GatewayCore.network(r.network), verified: r.verified)
                leg.established = r.established
                leg.closing = r.closing
                leg.peer = try core.peer(r.peer)
                enterpriseLegs[try key()] = leg
            case .linkedPublication:
                let r = try decode(LinkedPublicationRecord.self)
                let identity =
                    core.configuration.linkedIdentities.first { $0.oma == r.oma && $0.enterprise == r.enterprise }
                    ?? GatewayConfiguration.LinkedIdentity(
                        oma: r.oma, enterprise: r.enterprise, publishToEnterprise: false, publishToOMA: false)
                let client = try r.client.map { client throws(RestoreError.Detail) in
                    try restored { () throws(SIPStackError) in try PublicationClient(record: client, clock: clock) }
                }
                linked.append(
                    (
                        try key(),
                        LinkedPublication(
                            identity: identity, watch: r.watch, client: client, lastBody: r.lastBody?.bytes)
                    ))
            case .publication:
                publications.append(
                    EventStateCompositor.Publication(
                        record: try decode(EventStateCompositor.Publication.Record.self), clock: clock))
            case .servicePublisher:
                let r = try decode(CategoryPublisher.Record.self)
                servicePublishers[record.key] = try restored { () throws(SIPStackError) in
                    try CategoryPublisher(record: r)
                }
            case .pool:
                pools[record.key] = try decode(PoolRecord.self).pool
            case .winfoWatch:
                var r = try decode(WinfoWatchRecord.self)
                r.subscription.contact = core.contactText(.oma) ?? r.subscription.contact
                let subscription = try restored { () throws(SIPStackError) in
                    try NotifierSubscription(
                        record: r.subscription, clock: clock, reservedSequences: 2 * GatewayCore.sequenceBlock)
                }
                winfoWatches[try key()] = WinfoWatch(
                    presentity: r.presentity, subscription: subscription, version: r.version,
                    peer: try core.peer(r.peer), resync: true)
            case .flag:
                guard record.key == "batch-refused" else { throw RestoreError.Detail("unknown flag") }
                batchRefused = try decode(FlagRecord.self).value
            }
        }
    }

    /// `record` with the OMA side's Contact of this node (see ``contactText(_:for:)``).
    func withOMAContact(_ record: SubscriberSubscription.Record) -> SubscriberSubscription.Record {
        var record = record
        record.contact = contactText(.oma) ?? record.contact
        return record
    }

    /// This side's Contact as written in records, for restored dialogs: a node that takes over
    /// another's dialogs puts its own Contact in their next requests (a target refresh, RFC 6665
    /// §4.1.2.2, §4.2.2). A watcher's dialog gets the Contact of the transport its peer uses.
    func contactText(_ side: GatewayConfiguration.Side, for peer: DialogPeer? = nil) -> String? {
        (peer.flatMap { transportContacts[side]?[$0.transport] } ?? contacts[side])?.description
    }
}
