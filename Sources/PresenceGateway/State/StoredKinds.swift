import Foundation
import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack
import _GatewayInternals

/// How each kind of the core's dialogs is written to the durable store and read back
/// (``StoredEntry``; docs/state.md, "What is stored"): the entry's own `Codable` conformance.
/// What a NOTIFY relayed in an existing pair changes (the last state seen, the body last sent,
/// CSeqs within a block) is not kept (``Transient``, ``DialogState``); a CSeq or version is written
/// when it enters a new block, and a restored dialog starts two blocks above.
extension GatewayCore.EnterpriseWatch: StoredEntry, Codable {
    static var recordKind: GatewayCore.RecordKind { .enterpriseWatch }

    var storedDialog: StoredDialog {
        let notifier = subscription?.subscription ?? document
        return StoredDialog(notifier?.dialog.id, expiresAt: notifier?.expiresAt)
    }

    private enum CodingKeys: String, CodingKey {
        case watcher, network, answered, subscription, document, documentResource, legs, single, refused, awaiting
        case peer
    }

    /// A watch never answered (no 200 was sent) comes back without its dialog: the restore ends
    /// it (the watcher tries again) and unsubscribes its legs.
    init(from decoder: any Decoder) throws {
        let coding = try RecordCoding.of(decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            watcher: try c.decodeWatcher(.watcher, .network), pending: nil,
            peer: try c.decodeIfPresent(DialogPeer.self, forKey: .peer))
        let contact = coding.contact(.enterprise, for: peer)?.description
        if try c.decode(Bool.self, forKey: .answered) {
            if var record = try c.decodeIfPresent(BatchCategorySubscription.Record.self, forKey: .subscription) {
                record.subscription.contact = contact ?? record.subscription.contact
                subscription = try BatchCategorySubscription.read(record, coding)
            }
            if var record = try c.decodeIfPresent(NotifierSubscription.Record.self, forKey: .document) {
                record.contact = contact ?? record.contact
                document = try NotifierSubscription.read(record, coding)
            }
        }
        documentResource = try c.decodeIfPresent(String.self, forKey: .documentResource)
        legs = try c.decode(SmallMap<String, Int>.self, forKey: .legs)
        single = try c.decode(Bool.self, forKey: .single)
        refused = try c.decode(Set<String>.self, forKey: .refused)
        awaiting = try c.decodeIfPresent(Set<String>.self, forKey: .awaiting) ?? []
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(watcher.uri, forKey: .watcher)
        try c.encode(watcher.network, forKey: .network)
        try c.encode(pending == nil, forKey: .answered)
        try c.encodeIfPresent(subscription.map { DialogState(wrappedValue: $0) }, forKey: .subscription)
        try c.encodeIfPresent(document.map { DialogState(wrappedValue: $0) }, forKey: .document)
        try c.encodeIfPresent(documentResource, forKey: .documentResource)
        try c.encode(legs, forKey: .legs)
        try c.encode(single, forKey: .single)
        try c.encode(refused.sorted(), forKey: .refused)
        try c.encodeIfPresent(awaiting.isEmpty ? nil : awaiting.sorted(), forKey: .awaiting)
        try c.encodeIfPresent(peer, forKey: .peer)
    }
}

extension GatewayCore.OMALeg: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .omaLeg }

    var storedDialog: StoredDialog { StoredDialog(subscription) }

    static func restored(from leg: Self, key: String, coding: RecordCoding) throws(GatewayCore.RestoreError.Detail)
        -> Self
    {
        guard (leg.subscription == nil) != (leg.list == nil) else {
            throw GatewayCore.RestoreError.Detail("a leg needs a subscription or a list, not both")
        }
        return leg
    }
}

/// A list subscription toward an OMA RLS (RFC 4662). Its RLMI version is not written: a restored
/// list takes the next notification with full state.
extension GatewayCore.OMAList: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .omaList }

    var storedDialog: StoredDialog { StoredDialog(subscription) }

    /// Its members back in the order they joined (their legs' keys).
    static func restored(from list: Self, key: String, coding: RecordCoding) -> Self {
        var list = list
        var members: SmallMap<String, Int> = [:]
        for (resource, member) in list.members.sorted(by: { $0.value < $1.value }) { members[resource] = member }
        list.members = members
        return list
    }
}

extension GatewayCore.EnterpriseLeg: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .enterpriseLeg }

    var storedDialog: StoredDialog { StoredDialog(subscriber.subscription) }
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

extension GatewayCore.StoredOMAWatch: StoredEntry, Codable {
    static var recordKind: GatewayCore.RecordKind { .omaWatch }

    var storedDialog: StoredDialog {
        StoredDialog(watch.subscription?.dialog.id, expiresAt: watch.subscription?.expiresAt)
    }

    private enum CodingKeys: String, CodingKey {
        case watcher, network, resource, subscription, answered, leg, linked, peer, partialVersion, filter, list
        case listOwner
        case standsIn = "mirrorOf"
    }

    /// Partial notifications (RFC 5263) come back two blocks above the version written, so above
    /// every one sent, with nothing to diff against: the next document is full. A watch never
    /// answered comes back without its dialog, and the restore ends it.
    init(from decoder: any Decoder) throws {
        let coding = try RecordCoding.of(decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let resource = try c.decode(String.self, forKey: .resource)
        var watch = GatewayCore.OMAWatch(
            watcher: try c.decodeWatcher(.watcher, .network), resource: resource,
            linked: try c.decodeIfPresent(Int.self, forKey: .linked),
            peer: try c.decodeIfPresent(DialogPeer.self, forKey: .peer))
        if var record = try c.decodeIfPresent(NotifierSubscription.Record.self, forKey: .subscription),
            try c.decode(Bool.self, forKey: .answered)
        {
            record.contact = coding.contact(.oma, for: watch.peer)?.description ?? record.contact
            watch.subscription = try NotifierSubscription.read(record, coding)
        }
        watch.leg = try c.decodeIfPresent(Int.self, forKey: .leg)
        if let stored = try c.decodeIfPresent(StoredBytes.self, forKey: .filter), let terms = watch.subscription?.terms
        {
            do {
                watch.filter = try OMAWatcherNotifier.watcherFilter(
                    body: stored.bytes, type: OMAWatcherNotifier.simpleFilterType, resource: resource, terms: terms)
            } catch { throw GatewayCore.RestoreError.Detail("filter: \(error.reason)") }
        }
        if let version = try c.decodeIfPresent(UInt32.self, forKey: .partialVersion) {
            watch.partial = OMAWatcherNotifier.PartialNotifications(
                version: version &+ 2 * GatewayCore.sequenceBlock, last: nil)
        }
        self.init(
            watch: watch, list: try c.decodeIfPresent(GatewayCore.ResourceList.self, forKey: .list),
            listOwner: try c.decodeIfPresent(Int.self, forKey: .listOwner),
            standsIn: try c.decodeIfPresent(String.self, forKey: .standsIn))
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(watch.watcher.uri, forKey: .watcher)
        try c.encode(watch.watcher.network, forKey: .network)
        try c.encode(watch.resource, forKey: .resource)
        try c.encodeIfPresent(watch.subscription.map { DialogState(wrappedValue: $0) }, forKey: .subscription)
        try c.encode(watch.pending == nil, forKey: .answered)
        try c.encodeIfPresent(watch.leg, forKey: .leg)
        try c.encodeIfPresent(watch.linked, forKey: .linked)
        try c.encodeIfPresent(watch.peer, forKey: .peer)
        try c.encodeIfPresent(watch.partial.map { $0.version ?? 0 }, forKey: .partialVersion)
        try c.encodeIfPresent(watch.filter.map { StoredBytes($0.document) }, forKey: .filter)
        try c.encodeIfPresent(list, forKey: .list)
        try c.encodeIfPresent(listOwner, forKey: .listOwner)
        try c.encodeIfPresent(standsIn, forKey: .standsIn)
    }
}

extension KeyedDecodingContainer {
    /// A watcher's address of record and network, as two fields of a record.
    func decodeWatcher(_ uri: Key, _ network: Key) throws -> WatcherIdentity {
        let text = try decode(String.self, forKey: uri)
        guard let watcher = WatcherIdentity(uri: text, network: try decode(SourceNetwork.self, forKey: network)) else {
            throw GatewayCore.RestoreError.Detail("watcher \(text) is not an address of record")
        }
        return watcher
    }
}
