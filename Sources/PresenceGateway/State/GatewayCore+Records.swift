import MSPresenceEvents
import PresenceDocuments
import SIPMessages
import SIPStack
import SIPTransport

/// The records the durable store keeps for the core's state (docs/state.md, "What is stored"):
/// one per watcher's subscription, per subscription the gateway holds on the other side, per
/// linked-identity publication, per publication received, per SERVICE publisher, per pool hint.
/// Each is its entry's JSON (`StateRecord.body`, ``StoredEntry``); what a NOTIFY relayed in an
/// existing pair changes (the last state seen, the body last sent, CSeqs within a block) is left
/// out, see ``Journaled``.
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
        case upnpRegistration = "upnp-registration"
        case upnpUser = "upnp-user"
    }

    /// NOTIFYs a watcher's dialog may send between two writes of its record: the CSeq is written
    /// when it enters a new block, and a restored dialog starts two blocks above the stored one,
    /// so above every CSeq it used (RFC 3261 §12.2.1.1).
    public static let sequenceBlock: UInt32 = 1024

    /// Why a record does not restore: its kind and key, and what is wrong.
    public struct RestoreError: Error, CustomStringConvertible {
        public var kind: String
        public var key: String
        public var detail: String
        public var description: String { "record \(kind) \(key): \(detail)" }
    }
}

extension GatewayCore.RestoreError {
    /// What is wrong, before the kind and key are known.
    struct Detail: Error {
        var text: String
        init(_ text: String) { self.text = text }
    }
}

extension GatewayCore {
    /// A value of the transaction layer read back; what is wrong with it, for the restore error.
    static func restored<T>(_ make: () throws(SIPStackError) -> T) throws(RestoreError.Detail) -> T {
        do { return try make() } catch { throw RestoreError.Detail(error.detail) }
    }
}
