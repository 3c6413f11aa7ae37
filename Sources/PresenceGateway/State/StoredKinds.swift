import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack
import _GatewayInternals

/// How each kind of the core's state is written to the durable store and read back
/// (``StoredEntry``; docs/state.md, "What is stored"). What a NOTIFY relayed in an existing pair
/// changes (the last state seen, the body last sent, CSeqs within a block) is left out; a CSeq or
/// version is written when it enters a new block, and a restored dialog starts two blocks above.
extension GatewayCore.EnterpriseWatch: StoredEntry {
    /// A watch read back, and whether its SUBSCRIBE had been answered (one that was not is ended).
    struct Restored: Sendable {
        var watch: GatewayCore.EnterpriseWatch
        var answered: Bool
    }

    static var recordKind: GatewayCore.RecordKind { .enterpriseWatch }

    var storedDialog: StoredDialog {
        let notifier = subscription?.subscription ?? document
        return StoredDialog(notifier?.dialog.id, expiresAt: notifier?.expiresAt)
    }

    func record(in core: GatewayCore, clock: WallClock) -> GatewayCore.EnterpriseWatchRecord {
        .init(
            watcher: watcher.uri, network: watcher.network.rawValue, answered: pending == nil,
            subscription: subscription?.record(clock: clock), document: document?.record(clock: clock),
            documentResource: documentResource, legs: Dictionary(uniqueKeysWithValues: legs.map { ($0.key, $0.value) }),
            single: single, refused: refused.sorted(), awaiting: awaiting.isEmpty ? nil : awaiting.sorted(),
            peer: core.peerRecord(peer))
    }

    static func restored(
        from r: GatewayCore.EnterpriseWatchRecord, key: String, core: GatewayCore, clock: WallClock
    ) throws(GatewayCore.RestoreError.Detail) -> Restored {
        var watch = Self(
            watcher: try GatewayCore.watcher(r.watcher, r.network), pending: nil, peer: try core.peer(r.peer))
        let reserved = 2 * GatewayCore.sequenceBlock
        if var subscription = r.subscription {
            subscription.subscription.contact =
                core.contactText(.enterprise, for: watch.peer) ?? subscription.subscription.contact
            watch.subscription = try GatewayCore.restored { () throws(SIPStackError) in
                try BatchCategorySubscription(record: subscription, clock: clock, reservedSequences: reserved)
            }
        }
        if var document = r.document {
            document.contact = core.contactText(.enterprise, for: watch.peer) ?? document.contact
            watch.document = try GatewayCore.restored { () throws(SIPStackError) in
                try NotifierSubscription(record: document, clock: clock, reservedSequences: reserved)
            }
        }
        watch.documentResource = r.documentResource
        for (resource, leg) in r.legs.sorted(by: { $0.key < $1.key }) { watch.legs[resource] = leg }
        watch.single = r.single
        watch.refused = Set(r.refused)
        watch.awaiting = Set(r.awaiting ?? [])
        return Restored(watch: watch, answered: r.answered && (watch.subscription != nil || watch.document != nil))
    }
}

extension GatewayCore.OMALeg: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .omaLeg }

    var storedDialog: StoredDialog { StoredDialog(subscription) }

    func record(in core: GatewayCore, clock: WallClock) -> GatewayCore.OMALegRecord {
        .init(
            watch: watch, watcher: watcher, resource: resource, subscription: subscription?.record(clock: clock),
            list: list, handling: handling.token, closing: closing, pending: pending, peer: core.peerRecord(peer))
    }

    static func restored(from r: GatewayCore.OMALegRecord, key: String, core: GatewayCore, clock: WallClock)
        throws(GatewayCore.RestoreError.Detail) -> Self
    {
        guard let handling = SubHandling(token: r.handling) else {
            throw GatewayCore.RestoreError.Detail("unknown sub-handling \(r.handling)")
        }
        guard (r.subscription == nil) != (r.list == nil) else {
            throw GatewayCore.RestoreError.Detail("a leg needs a subscription or a list, not both")
        }
        var leg = Self(
            watch: r.watch, watcher: r.watcher, resource: r.resource,
            subscription: try core.restoredSubscriber(r.subscription, clock: clock), list: r.list, categories: nil,
            handling: handling)
        leg.closing = r.closing
        leg.pending = r.pending
        leg.peer = try core.peer(r.peer)
        return leg
    }
}

/// A list subscription toward an OMA RLS (RFC 4662). Its RLMI version is not written: a restored
/// list takes the next notification with full state.
extension GatewayCore.OMAList: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .omaList }

    var storedDialog: StoredDialog { StoredDialog(subscription) }

    func record(in core: GatewayCore, clock: WallClock) -> GatewayCore.OMAListRecord {
        .init(
            watch: watch, watcher: watcher, from: from.description, domain: domain, uri: uri, document: document,
            members: Dictionary(uniqueKeysWithValues: members.map { ($0.key, $0.value) }),
            subscription: subscription?.record(clock: clock), changed: changed, closing: closing,
            peer: core.peerRecord(peer))
    }

    static func restored(from r: GatewayCore.OMAListRecord, key: String, core: GatewayCore, clock: WallClock)
        throws(GatewayCore.RestoreError.Detail) -> Self
    {
        guard let from = try? SIPAddress(r.from) else {
            throw GatewayCore.RestoreError.Detail("from \(r.from) does not parse")
        }
        var list = Self(
            watch: r.watch, watcher: r.watcher, from: from, domain: r.domain, uri: r.uri, document: r.document)
        for (resource, member) in r.members.sorted(by: { $0.value < $1.value }) { list.members[resource] = member }
        list.subscription = try core.restoredSubscriber(r.subscription, clock: clock)
        list.changed = r.changed
        list.closing = r.closing
        list.peer = try core.peer(r.peer)
        return list
    }
}

/// An OMA watch as the store keeps it: the watch, and what the resource list server holds about
/// it (the list it subscribed to, or the list it serves as a member's back-end watch) and the
/// notifier's stand-in index (the linked OMA identity it stands in a watcher of).
extension GatewayCore {
    struct StoredOMAWatch: Sendable {
        var watch: OMAWatch
        var list: ResourceList?
        var listOwner: Int?
        var standsIn: String?
    }

    /// The OMA watch `key` with what other tables hold about it, for the store.
    func storedOMAWatch(_ key: Int) -> StoredOMAWatch? {
        notifier[key].map {
            StoredOMAWatch(
                watch: $0, list: lists[key], listOwner: lists.owner(of: key), standsIn: notifier.standsIn(key))
        }
    }
}

extension GatewayCore.StoredOMAWatch: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .omaWatch }

    var storedDialog: StoredDialog {
        StoredDialog(watch.subscription?.dialog.id, expiresAt: watch.subscription?.expiresAt)
    }

    func record(in core: GatewayCore, clock: WallClock) -> GatewayCore.OMAWatchRecord {
        .init(
            watcher: watch.watcher.uri, network: watch.watcher.network.rawValue, resource: watch.resource,
            subscription: watch.subscription?.record(clock: clock), answered: watch.pending == nil, leg: watch.leg,
            linked: watch.linked, peer: core.peerRecord(watch.peer),
            partialVersion: watch.partial.map { $0.version ?? 0 },
            filter: watch.filter.map { StoredBytes($0.document) },
            list: list.map { list in
                .init(
                    members: list.members.map {
                        .init(uri: $0.uri, watch: $0.watch, ended: $0.ended, instance: $0.instance)
                    }, version: list.version)
            }, listOwner: listOwner, mirrorOf: standsIn)
    }

    static func restored(from r: GatewayCore.OMAWatchRecord, key: String, core: GatewayCore, clock: WallClock)
        throws(GatewayCore.RestoreError.Detail) -> Self
    {
        var watch = GatewayCore.OMAWatch(
            watcher: try GatewayCore.watcher(r.watcher, r.network), resource: r.resource, linked: r.linked,
            peer: try core.peer(r.peer))
        if var subscription = r.subscription, r.answered {
            subscription.contact = core.contactText(.oma, for: watch.peer) ?? subscription.contact
            watch.subscription = try GatewayCore.restored { () throws(SIPStackError) in
                try NotifierSubscription(
                    record: subscription, clock: clock, reservedSequences: 2 * GatewayCore.sequenceBlock)
            }
        }
        watch.leg = r.leg
        if let stored = r.filter, let terms = watch.subscription?.terms {
            do {
                watch.filter = try OMAWatcherNotifier.watcherFilter(
                    body: stored.bytes, type: OMAWatcherNotifier.simpleFilterType, resource: r.resource, terms: terms)
            } catch { throw GatewayCore.RestoreError.Detail("filter: \(error.reason)") }
        }
        if let version = r.partialVersion {
            // Two blocks above the stored version, so above every one sent (as for CSeqs);
            // nothing to diff against: the next document is full.
            watch.partial = OMAWatcherNotifier.PartialNotifications(
                version: version &+ 2 * GatewayCore.sequenceBlock, last: nil)
        }
        // The version is written when it enters a new block, as the CSeq is: the next
        // notification skips ahead of any sent since, which tells the watcher to refresh for
        // full state (RFC 4662 §5.6.2); one repeated would be discarded. What each part said
        // is not kept: the next change of each is sent.
        let list = r.list.map { list in
            GatewayCore.ResourceList(
                members: list.members.map {
                    .init(uri: $0.uri, watch: $0.watch, ended: $0.ended, instance: $0.instance)
                },
                version: list.version &+ 2 * GatewayCore.sequenceBlock)
        }
        return Self(watch: watch, list: list, listOwner: r.listOwner, standsIn: r.mirrorOf)
    }
}

extension GatewayCore.EnterpriseLeg: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .enterpriseLeg }

    var storedDialog: StoredDialog { StoredDialog(subscriber.subscription) }

    func record(in core: GatewayCore, clock: WallClock) -> GatewayCore.EnterpriseLegRecord {
        .init(
            watcher: watcher, pool: pool, single: single, subscriber: subscriber.record(clock: clock),
            watches: Dictionary(uniqueKeysWithValues: watches.map { ($0.key, $0.value) }), established: established,
            closing: closing, peer: core.peerRecord(peer), network: network.rawValue, verified: verified)
    }

    static func restored(from r: GatewayCore.EnterpriseLegRecord, key: String, core: GatewayCore, clock: WallClock)
        throws(GatewayCore.RestoreError.Detail) -> Self
    {
        var stored = r.subscriber
        stored.subscription.contact = core.contactText(.enterprise) ?? stored.subscription.contact
        let subscriber = try GatewayCore.restored { () throws(SIPStackError) in
            try BatchCategorySubscriber(record: stored, clock: clock)
        }
        var watches: SmallMap<String, Int> = [:]
        for (resource, watch) in r.watches.sorted(by: { $0.key < $1.key }) { watches[resource] = watch }
        var leg = Self(
            watcher: r.watcher, pool: r.pool, single: r.single, subscriber: subscriber, watches: watches,
            network: try GatewayCore.network(r.network), verified: r.verified)
        leg.established = r.established
        leg.closing = r.closing
        leg.peer = try core.peer(r.peer)
        return leg
    }
}

extension GatewayCore {
    /// A value of the transaction layer read back; what is wrong with it, for the restore error.
    static func restored<T>(_ make: () throws(SIPStackError) -> T) throws(RestoreError.Detail) -> T {
        do { return try make() } catch { throw RestoreError.Detail(error.detail) }
    }

    /// A subscription toward the OMA side read back, with this node's Contact there.
    func restoredSubscriber(_ record: SubscriberSubscription.Record?, clock: WallClock)
        throws(RestoreError.Detail) -> SubscriberSubscription?
    {
        guard var record else { return nil }
        record.contact = contactText(.oma) ?? record.contact
        return try Self.restored { () throws(SIPStackError) in try SubscriberSubscription(record: record, clock: clock)
        }
    }
}
