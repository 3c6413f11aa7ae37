import Foundation
import GatewayState
import NIOCore
import SIPStack

/// How the notifier keeps its watches in the durable store (docs/state.md, "What is stored";
/// docs/architecture.md, "Persistence"), and takes them back or lets them go. One record per OMA
/// watch holds the watch and what the notifier holds of it in its other tables: the stand-in
/// index (the linked OMA identity it stands in a watcher of) and its ``ResourceListServer``'s
/// part (the list it subscribed to, or the list it serves as a member's back-end watch). They
/// are facets of one watch, so they are one record, as the store has always kept them.
extension OMAWatcherNotifier {
    struct StoredWatch: Sendable {
        var watch: GatewayCore.OMAWatch
        var list: GatewayCore.ResourceList?
        var listOwner: Int?
        var standsIn: String?
    }
}

extension OMAWatcherNotifier.StoredWatch: StoredEntry, Codable {
    static var recordKind: GatewayCore.RecordKind { .omaWatch }

    var storedDialog: StoredDialog {
        StoredDialog(watch.subscription?.dialog.id, expiresAt: watch.subscription?.expiresAt)
    }

    /// The keys of the other tables' facets, beside the watch's own.
    private enum CodingKeys: String, CodingKey {
        case list, listOwner
        case standsIn = "mirrorOf"
    }

    init(from decoder: any Decoder) throws {
        let watch = try GatewayCore.OMAWatch(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            watch: watch, list: try c.decodeIfPresent(GatewayCore.ResourceList.self, forKey: .list),
            listOwner: try c.decodeIfPresent(Int.self, forKey: .listOwner),
            standsIn: try c.decodeIfPresent(String.self, forKey: .standsIn))
    }

    func encode(to encoder: any Encoder) throws {
        try watch.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(list, forKey: .list)
        try c.encodeIfPresent(listOwner, forKey: .listOwner)
        try c.encodeIfPresent(standsIn, forKey: .standsIn)
    }
}

/// An OMA watch's own fields in its record. Its watcher is written as two keys and its pending
/// SUBSCRIBE as `answered`, so it writes its own coding.
extension GatewayCore.OMAWatch: Codable {
    private enum CodingKeys: String, CodingKey {
        case watcher, network, resource, subscription, answered, leg, linked, peer, partialVersion, filter
    }

    /// Partial notifications (RFC 5263) come back two blocks above the version written, so above
    /// every one sent, with nothing to diff against: the next document is full. A watch never
    /// answered comes back without its dialog, and the restore ends it.
    init(from decoder: any Decoder) throws {
        let coding = try RecordCoding.of(decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        resource = try c.decode(String.self, forKey: .resource)
        watcher = try c.decodeWatcher(.watcher, .network)
        linked = try c.decodeIfPresent(Int.self, forKey: .linked)
        peer = try c.decodeIfPresent(DialogPeer.self, forKey: .peer)
        if var record = try c.decodeIfPresent(NotifierSubscription.Record.self, forKey: .subscription),
            try c.decode(Bool.self, forKey: .answered)
        {
            record.contact = coding.contact(.oma, for: peer)?.description ?? record.contact
            subscription = try NotifierSubscription.read(record, coding)
        }
        leg = try c.decodeIfPresent(Int.self, forKey: .leg)
        if let stored = try c.decodeIfPresent(StoredBytes.self, forKey: .filter), let terms = subscription?.terms {
            do {
                filter = try OMAWatcherNotifier.watcherFilter(
                    body: stored.bytes, type: OMAWatcherNotifier.simpleFilterType, resource: resource, terms: terms)
            } catch { throw GatewayCore.RestoreError.Detail("filter: \(error.reason)") }
        }
        if let version = try c.decodeIfPresent(UInt32.self, forKey: .partialVersion) {
            partial = OMAWatcherNotifier.PartialNotifications(
                version: version &+ 2 * GatewayCore.sequenceBlock, last: nil)
        }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(watcher.uri, forKey: .watcher)
        try c.encode(watcher.network, forKey: .network)
        try c.encode(resource, forKey: .resource)
        try c.encodeIfPresent(subscription.map { DialogState(wrappedValue: $0) }, forKey: .subscription)
        try c.encode(pending == nil, forKey: .answered)
        try c.encodeIfPresent(leg, forKey: .leg)
        try c.encodeIfPresent(linked, forKey: .linked)
        try c.encodeIfPresent(peer, forKey: .peer)
        try c.encodeIfPresent(partial.map { $0.version ?? 0 }, forKey: .partialVersion)
        try c.encodeIfPresent(filter.map { StoredBytes($0.document) }, forKey: .filter)
    }
}
