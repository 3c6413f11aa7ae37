import MSPresenceEvents
import PresenceDocuments
import SIPMessages
import SIPStack
import SIPTransport

/// The records the durable store keeps for the core's state (docs/state.md, "What is stored"):
/// one per watcher's subscription, per subscription the gateway holds on the other side, per
/// linked-identity publication, per publication received, per SERVICE publisher, per pool hint.
/// Each is JSON (`StateRecord.body`); what a NOTIFY relayed in an existing pair changes (the last
/// state seen, the body last sent, CSeqs within a block) is left out, see ``Journaled``.
extension GatewayCore {
    /// The kinds of record, as the store's `kind` column names them.
    enum RecordKind: String, CaseIterable {
        case enterpriseWatch = "enterprise-watch"
        case omaLeg = "oma-leg"
        case omaList = "oma-list"
        case omaWatch = "oma-watch"
        case enterpriseLeg = "enterprise-leg"
        case linkedPublication = "linked-publication"
        case publication
        case servicePublisher = "service-publisher"
        case winfoWatch = "winfo-watch"
        case pool
        case flag
    }

    /// NOTIFYs a watcher's dialog may send between two writes of its record: the CSeq is written
    /// when it enters a new block, and a restored dialog starts two blocks above the stored one,
    /// so above every CSeq it used (RFC 3261 §12.2.1.1).
    public static let sequenceBlock: UInt32 = 1024

    /// Who a dialog belongs to (``DialogPeer``), with the configured peer by name: the position
    /// it had may be another peer's after the configuration changed.
    struct PeerRecord: Codable, Hashable {
        var side: String
        var transport: String
        var host: String
        var port: UInt16
        var peer: String?
        var certificateNames: [String]
    }

    struct EnterpriseWatchRecord: Codable {
        var watcher: String
        var network: String
        /// False while its SUBSCRIBE waits for the first answer: no 200 was sent, so a restart
        /// ends it (the watcher tries again) and unsubscribes its legs.
        var answered: Bool
        var subscription: BatchCategorySubscription.Record?
        var document: NotifierSubscription.Record?
        var documentResource: String?
        var legs: [String: Int]
        var single: Bool
        var refused: [String]
        /// Absent in records written before resources could wait for their owner.
        var awaiting: [String]?
        var peer: PeerRecord?
    }

    struct OMALegRecord: Codable {
        var watch: Int
        var watcher: String
        var resource: String
        /// Absent for a list's member.
        var subscription: SubscriberSubscription.Record?
        /// The list a member belongs to; absent for other legs (and in older records).
        var list: Int?
        var handling: String
        var closing: Bool
        var pending: Bool
        var peer: PeerRecord?
    }

    /// A list subscription toward an OMA RLS (RFC 4662). The RLMI version is not kept.
    struct OMAListRecord: Codable {
        var watch: Int
        var watcher: String
        var from: String
        var domain: String
        var uri: String
        var document: String
        var members: [String: Int]
        var subscription: SubscriberSubscription.Record?
        var changed: Bool
        var closing: Bool
        var peer: PeerRecord?
    }

    struct OMAWatchRecord: Codable {
        var watcher: String
        var network: String
        var resource: String
        /// The dialog, once answered (a linked identity's own watch never has one).
        var subscription: NotifierSubscription.Record?
        var answered: Bool
        var leg: Int?
        var linked: Int?
        var peer: PeerRecord?
        /// Partial notifications (RFC 5263): the version last sent, written when it enters a new
        /// block as the CSeq is; absent for a watcher without them (and in older records).
        var partialVersion: UInt32?
        /// The watcher's event filter as it sent it (RFC 4660); absent without one.
        var filter: StoredBytes?
        /// A list subscription's members and version (RFC 4662); absent for other watches.
        var list: ResourceListRecord?
        /// The list watch a member's back-end watch serves; absent for other watches.
        var listOwner: Int?
        /// The linked OMA identity whose watcher a mirror stands in for; absent for other watches.
        var mirrorOf: String?
    }

    struct ResourceListRecord: Codable {
        struct Member: Codable {
            var uri: String
            var watch: Int?
            var ended: String?
            var instance: String
        }
        var members: [Member]
        var version: UInt32
    }

    struct EnterpriseLegRecord: Codable {
        var watcher: String
        var pool: String?
        var single: Bool
        var subscriber: BatchCategorySubscriber.Record
        var watches: [String: Int]
        var established: Bool
        var closing: Bool
        var peer: PeerRecord?
        var network: String
        var verified: Bool
    }

    struct LinkedPublicationRecord: Codable {
        var oma: String
        var enterprise: String
        var watch: Int?
        var client: PublicationClient.Record?
        var lastBody: StoredBytes?
    }

    /// A watcher information subscription (RFC 3857). The list last sent is not kept: a restored
    /// one is sent the full list at once, with the next version.
    struct WinfoWatchRecord: Codable {
        var presentity: String
        var subscription: NotifierSubscription.Record
        var version: UInt64
        var peer: PeerRecord?
    }

    struct PoolRecord: Codable {
        var pool: String
    }

    struct FlagRecord: Codable {
        var value: Bool
    }

    // MARK: - Values to records

    func peerRecord(_ peer: DialogPeer?) -> PeerRecord? {
        guard let peer else { return nil }
        let name = peer.peer.flatMap { Int($0) < configuration.peers.count ? configuration.peers[Int($0)].name : nil }
        return PeerRecord(
            side: peer.side.rawValue, transport: peer.transport.rawValue, host: peer.host, port: peer.port,
            peer: name, certificateNames: peer.certificateNames)
    }

    // MARK: - Records to values

    /// Why a record does not restore: its kind and key, and what is wrong.
    public struct RestoreError: Error, CustomStringConvertible {
        public var kind: String
        public var key: String
        public var detail: String
        public var description: String { "record \(kind) \(key): \(detail)" }
    }

    func peer(_ record: PeerRecord?) throws(RestoreError.Detail) -> DialogPeer? {
        guard let record else { return nil }
        guard let side = GatewayConfiguration.Side(rawValue: record.side),
            let transport = SIPTransportKind(rawValue: record.transport)
        else {
            throw RestoreError.Detail("peer \(record.side)/\(record.transport): unknown side or transport")
        }
        // A configured peer that is gone: the dialog stays with the address it was made with.
        let index = record.peer.flatMap { name in configuration.peers.firstIndex { $0.name == name } }
        let configured = index.map { configuration.peers[$0].certificateNames } ?? []
        return DialogPeer(
            side: side, transport: transport, host: record.host, port: record.port, peer: index.map(UInt16.init),
            certificateNames: configured.isEmpty ? record.certificateNames : configured)
    }

    static func network(_ text: String) throws(RestoreError.Detail) -> SourceNetwork {
        guard let network = SourceNetwork(rawValue: text) else { throw RestoreError.Detail("unknown network \(text)") }
        return network
    }

    static func watcher(_ uri: String, _ network: String) throws(RestoreError.Detail) -> WatcherIdentity {
        guard let watcher = WatcherIdentity(uri: uri, network: try Self.network(network)) else {
            throw RestoreError.Detail("watcher \(uri) is not an address of record")
        }
        return watcher
    }
}

extension GatewayCore.RestoreError {
    /// What is wrong, before the kind and key are known.
    struct Detail: Error {
        var text: String
        init(_ text: String) { self.text = text }
    }
}
