import Foundation
public import GatewayState
import MSPresenceEvents
public import SIPStack

/// What the core hands the durable store after each step (docs/state.md, "What is written
/// when"): the records of every piece of state that changed, and the removal of every piece that
/// ended. A NOTIFY relayed in an existing pair writes nothing unless a subscription's status,
/// dialog or CSeq block moved (``Journaled``).
extension GatewayCore {
    /// Whether changes are remembered for a durable store; off (the default) keeps nothing.
    public var journaling: Bool {
        get { enterpriseWatches.journaling }
        set {
            enterpriseWatches.journaling = newValue
            omaLegs.journaling = newValue
            omaLists.journaling = newValue
            omaWatches.journaling = newValue
            enterpriseLegs.journaling = newValue
            journal.enabled = newValue
        }
    }

    /// The changes since the last call, as records for the store; `clock` turns the deadlines
    /// they hold into wall-clock times.
    public mutating func takeStateChanges(clock: WallClock) -> [StateChange] {
        guard journaling else { return [] }
        let watchKeys = enterpriseWatches.takeChanged()
        let omaLegKeys = omaLegs.takeChanged()
        let omaListKeys = omaLists.takeChanged()
        let omaWatchKeys = omaWatches.takeChanged()
        let enterpriseLegKeys = enterpriseLegs.takeChanged()
        guard
            !watchKeys.isEmpty || !omaLegKeys.isEmpty || !omaListKeys.isEmpty || !omaWatchKeys.isEmpty
                || !enterpriseLegKeys.isEmpty || journal.hasChanges
        else { return [] }
        var changes: [StateChange] = []
        let encoder = JSONEncoder()
        func put<R: Encodable>(
            _ kind: RecordKind, _ key: String, _ record: R, dialog: SIPDialog.ID? = nil,
            callID: String? = nil, localTag: String? = nil, expires: Int64? = nil
        ) {
            // The records are plain values: encoding them cannot fail.
            guard let body = try? encoder.encode(record) else { return }
            changes.append(
                .put(
                    StateRecord(
                        kind: kind.rawValue, key: key, callID: dialog?.callID ?? callID,
                        localTag: dialog?.localTag ?? localTag, expires: expires, body: Array(body))))
        }
        func delete(_ kind: RecordKind, _ key: String) { changes.append(.delete(kind: kind.rawValue, key: key)) }

        for key in watchKeys.sorted() {
            guard let watch = enterpriseWatches[key] else {
                delete(.enterpriseWatch, String(key))
                continue
            }
            let notifier = watch.subscription?.subscription ?? watch.document
            put(
                .enterpriseWatch, String(key), record(watch, clock: clock), dialog: notifier?.dialog.id,
                expires: notifier.map { clock.milliseconds($0.expiresAt) })
        }
        for key in omaLegKeys.sorted() {
            guard let leg = omaLegs[key] else {
                delete(.omaLeg, String(key))
                continue
            }
            put(
                .omaLeg, String(key), record(leg, clock: clock), callID: leg.subscription?.callID,
                localTag: leg.subscription?.localTag, expires: leg.subscription?.expiresAt.map(clock.milliseconds))
        }
        for key in omaListKeys.sorted() {
            guard let list = omaLists[key] else {
                delete(.omaList, String(key))
                continue
            }
            put(
                .omaList, String(key), record(list, clock: clock), callID: list.subscription?.callID,
                localTag: list.subscription?.localTag, expires: list.subscription?.expiresAt.map(clock.milliseconds))
        }
        for key in omaWatchKeys.sorted() {
            guard let watch = omaWatches[key] else {
                delete(.omaWatch, String(key))
                continue
            }
            put(
                .omaWatch, String(key), record(watch, clock: clock), dialog: watch.subscription?.dialog.id,
                expires: watch.subscription.map { clock.milliseconds($0.expiresAt) })
        }
        for key in enterpriseLegKeys.sorted() {
            guard let leg = enterpriseLegs[key] else {
                delete(.enterpriseLeg, String(key))
                continue
            }
            let subscription = leg.subscriber.subscription
            put(
                .enterpriseLeg, String(key), record(leg, clock: clock), callID: subscription.callID,
                localTag: subscription.localTag, expires: subscription.expiresAt.map(clock.milliseconds))
        }
        for key in journal.takeLinks().sorted() {
            guard let link = linked[key] else {
                delete(.linkedPublication, String(key))
                continue
            }
            put(
                .linkedPublication, String(key), record(link, clock: clock), callID: link.client?.callID,
                localTag: link.client?.localTag, expires: link.client?.expiresAt.map(clock.milliseconds))
        }
        for resource in journal.takePools().sorted() {
            if let pool = pools[resource] {
                put(.pool, resource, PoolRecord(pool: pool))
            } else {
                delete(.pool, resource)
            }
        }
        if journal.takeBatchRefused() { put(.flag, "batch-refused", FlagRecord(value: batchRefused)) }
        for identity in journal.takePublishers().sorted() {
            if let publisher = servicePublishers[identity] {
                put(
                    .servicePublisher, identity, publisher.record, callID: publisher.callID,
                    localTag: publisher.localTag)
            } else {
                delete(.servicePublisher, identity)
            }
        }
        for key in journal.takeWinfo().sorted() {
            guard let watch = winfoWatches[key] else {
                delete(.winfoWatch, String(key))
                continue
            }
            put(
                .winfoWatch, String(key), record(watch, clock: clock), dialog: watch.subscription.dialog.id,
                expires: clock.milliseconds(watch.subscription.expiresAt))
        }
        if journal.takePublications() {
            let current = Set(compositor.publications.keys)
            for tag in journal.writtenPublications.subtracting(current).sorted() { delete(.publication, tag) }
            for tag in current.subtracting(journal.writtenPublications).sorted() {
                guard let publication = compositor.publications[tag] else { continue }
                put(
                    .publication, tag, publication.record(clock: clock),
                    expires: clock.milliseconds(publication.expiresAt))
            }
            journal.writtenPublications = current
        }
        return changes
    }

    /// Runs a NOTIFY's relay in an existing pair (``inDialog``) with the watches' and legs' writes
    /// remembered only when they change what the store keeps.
    mutating func quietly(_ body: (inout GatewayCore) -> [Action]) -> [Action] {
        guard journaling else { return body(&self) }
        enterpriseWatches.beginQuiet()
        omaLegs.beginQuiet()
        omaWatches.beginQuiet()
        enterpriseLegs.beginQuiet()
        let actions = body(&self)
        enterpriseWatches.endQuiet()
        omaLegs.endQuiet()
        omaWatches.endQuiet()
        enterpriseLegs.endQuiet()
        return actions
    }

    /// The parts of the state kept outside the journaled tables (few, or keyed by text), and what
    /// of them changed since the store last took the changes.
    struct Journal: Sendable {
        var enabled = false
        private var links: Set<Int> = []
        private var pools: Set<String> = []
        private var batchRefused = false
        private var publishers: Set<String> = []
        private var publications = false
        private var winfo: Set<Int> = []
        /// The entity-tags of the publications the store holds.
        var writtenPublications: Set<String> = []

        mutating func link(_ key: Int) { if enabled { links.insert(key) } }
        mutating func pool(_ resource: String) { if enabled { pools.insert(resource) } }
        mutating func batchRefusedChanged() { if enabled { batchRefused = true } }
        mutating func publisher(_ identity: String) { if enabled { publishers.insert(identity) } }
        mutating func publicationsChanged() { if enabled { publications = true } }
        mutating func winfo(_ key: Int) { if enabled { winfo.insert(key) } }

        var hasChanges: Bool {
            !links.isEmpty || !pools.isEmpty || batchRefused || !publishers.isEmpty || publications || !winfo.isEmpty
        }

        mutating func takeLinks() -> Set<Int> {
            defer { links = [] }
            return links
        }
        mutating func takePools() -> Set<String> {
            defer { pools = [] }
            return pools
        }
        mutating func takeBatchRefused() -> Bool {
            defer { batchRefused = false }
            return batchRefused
        }
        mutating func takePublishers() -> Set<String> {
            defer { publishers = [] }
            return publishers
        }
        mutating func takePublications() -> Bool {
            defer { publications = false }
            return publications
        }
        mutating func takeWinfo() -> Set<Int> {
            defer { winfo = [] }
            return winfo
        }
    }
}

extension GatewayCore.EnterpriseWatch: Journaled {
    struct Signature: Equatable, Sendable {
        var answered: Bool
        var status: NotifierSubscription.Status?
        var dialog: SIPDialog?
        var block: UInt32
        var resources: Int
        var legs: Int
        var refused: Int
    }

    var durableSignature: Signature {
        let notifier = subscription?.subscription ?? document
        return Signature(
            answered: pending == nil, status: notifier?.status, dialog: notifier?.dialog.withoutSequences,
            block: (notifier?.dialog.localSequence ?? 0) / GatewayCore.sequenceBlock,
            resources: subscription?.resources.count ?? 0, legs: legs.count, refused: refused.count)
    }
}

extension GatewayCore.OMALeg: Journaled {
    struct Signature: Equatable, Sendable {
        var status: SubscriberSubscription.Status?
        var dialog: SIPDialog?
        var pending: Bool
        var closing: Bool
        var handling: SubHandling
        var watch: Int
        var peer: DialogPeer?
    }

    var durableSignature: Signature {
        Signature(
            status: subscription?.status, dialog: subscription?.dialog?.withoutSequences, pending: pending,
            closing: closing,
            handling: handling, watch: watch, peer: peer)
    }
}

/// A list's version is not written: a restored list takes the next notification with full state.
extension GatewayCore.OMAList: Journaled {
    struct Signature: Equatable, Sendable {
        var status: SubscriberSubscription.Status?
        var dialog: SIPDialog?
        var members: Int
        var changed: Bool
        var closing: Bool
        var peer: DialogPeer?
    }

    var durableSignature: Signature {
        Signature(
            status: subscription?.status, dialog: subscription?.dialog?.withoutSequences, members: members.count,
            changed: changed, closing: closing, peer: peer)
    }
}

extension GatewayCore.OMAWatch: Journaled {
    struct Signature: Equatable, Sendable {
        var answered: Bool
        var status: NotifierSubscription.Status?
        var dialog: SIPDialog?
        var block: UInt32
        var leg: Int?
        var linked: Int?
        var partialBlock: UInt32?
        /// A list's RLMI version block and how many of its members ended (RFC 4662).
        var listBlock: UInt32?
        var listEnded: Int
    }

    var durableSignature: Signature {
        Signature(
            answered: pending == nil, status: subscription?.status, dialog: subscription?.dialog.withoutSequences,
            block: (subscription?.dialog.localSequence ?? 0) / GatewayCore.sequenceBlock, leg: leg, linked: linked,
            partialBlock: partial.map { ($0.version ?? 0) / GatewayCore.sequenceBlock },
            listBlock: resourceList.map { $0.version / GatewayCore.sequenceBlock },
            listEnded: resourceList?.members.count { $0.watch == nil } ?? 0)
    }
}

extension GatewayCore.EnterpriseLeg: Journaled {
    struct Signature: Equatable, Sendable {
        var status: SubscriberSubscription.Status
        var dialog: SIPDialog?
        var resources: Int
        var watches: Int
        var established: Bool
        var closing: Bool
        var pool: String?
        var peer: DialogPeer?
    }

    var durableSignature: Signature {
        Signature(
            status: subscriber.subscription.status, dialog: subscriber.subscription.dialog?.withoutSequences,
            resources: subscriber.resources.count, watches: watches.count, established: established, closing: closing,
            pool: pool, peer: peer)
    }
}
