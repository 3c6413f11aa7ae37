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
