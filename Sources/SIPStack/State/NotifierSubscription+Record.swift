public import NIOCore
public import SIPMessages

extension NotifierSubscription {
    /// A notifier-side subscription as the durable store keeps it (docs/state.md): its dialog, the
    /// terms granted (package, body type, duration, [MS-PRES] options), its status, when it expires
    /// (milliseconds since the Unix epoch) and this side's Contact.
    public struct Record: Codable, Sendable, Hashable {
        public var dialog: SIPDialog.Record
        public var terms: SubscriptionTerms
        public var status: Status
        public var expiresAt: Int64
        public var contact: String
    }

    public func record(clock: WallClock) -> Record {
        Record(
            dialog: dialog.record, terms: terms, status: status, expiresAt: clock.milliseconds(expiresAt),
            contact: contact.description)
    }

    /// The subscription a record describes. `reservedSequences` is added to the stored local CSeq:
    /// the store keeps it only every so many NOTIFYs, so the restored dialog goes on above every
    /// CSeq it may have used (RFC 3261 §12.2.1.1 asks only that it increase).
    public init(record: Record, clock: WallClock, reservedSequences: UInt32 = 0) throws(SIPStackError) {
        var dialog = try SIPDialog(record: record.dialog)
        if reservedSequences > 0 { dialog.localSequence = (dialog.localSequence ?? 0) &+ reservedSequences }
        self.init(
            dialog: dialog, terms: record.terms, status: record.status,
            expiresAt: clock.deadline(milliseconds: record.expiresAt),
            contact: try SIPDialog.restored(SIPAddress(record.contact), "contact"))
    }
}
