public import SIPMessages

extension SubscriberSubscription {
    /// A subscriber-side subscription as the durable store keeps it (docs/state.md): what it was
    /// started with, its status, dialog, identifiers, expiry (milliseconds since the Unix epoch) and
    /// last CSeq. A SUBSCRIBE awaiting its response is not kept: its transaction ended with the
    /// process.
    public struct Record: Codable, Sendable, Hashable {
        public var target: String
        public var from: String
        public var to: String
        public var contact: String
        public var package: SIPEventPackage
        public var eventID: String?
        public var accept: [String]
        public var expires: UInt32
        public var supported: [String]
        /// Further headers as name and value pairs, in order.
        public var extraHeaders: [[String]]
        public var body: StoredBytes?
        public var bodyType: String?
        public var bodyGivenPerRequest: Bool
        /// RFC 6446 intervals asked for; absent in records written before they could be.
        public var minInterval: UInt32?
        public var maxInterval: UInt32?
        public var status: Status
        public var dialog: SIPDialog.Record?
        public var callID: String
        public var localTag: String
        public var expiresAt: Int64?
        public var cseq: UInt32
    }

    public func record(clock: WallClock) -> Record {
        let configuration = self.configuration
        return Record(
            target: configuration.target.description, from: configuration.from.description,
            to: configuration.to.description,
            contact: configuration.contact.description, package: configuration.package, eventID: configuration.eventID,
            accept: configuration.accept, expires: configuration.expires, supported: configuration.supported,
            extraHeaders: SIPDialog.storedHeaders(configuration.extraHeaders),
            body: configuration.body.isEmpty ? nil : StoredBytes(configuration.body), bodyType: configuration.bodyType,
            bodyGivenPerRequest: configuration.bodyGivenPerRequest, minInterval: configuration.minInterval,
            maxInterval: configuration.maxInterval, status: status, dialog: dialog?.record,
            callID: callID, localTag: localTag, expiresAt: expiresAt.map(clock.milliseconds), cseq: cseq)
    }

    /// The subscription a record describes, with no SUBSCRIBE outstanding.
    public init(record: Record, clock: WallClock) throws(SIPStackError) {
        let headers = try SIPDialog.restoredHeaders(record.extraHeaders)
        let configuration = Configuration(
            target: try SIPDialog.restored(SIPURI(record.target), "target"),
            from: try SIPDialog.restored(SIPAddress(record.from), "from"),
            to: try SIPDialog.restored(SIPAddress(record.to), "to"),
            contact: try SIPDialog.restored(SIPAddress(record.contact), "contact"),
            package: record.package, eventID: record.eventID, accept: record.accept, expires: record.expires,
            supported: record.supported, extraHeaders: headers, body: record.body?.bytes ?? [],
            bodyType: record.bodyType, bodyGivenPerRequest: record.bodyGivenPerRequest,
            minInterval: record.minInterval, maxInterval: record.maxInterval)
        let dialog = try record.dialog.map { dialog throws(SIPStackError) in try SIPDialog(record: dialog) }
        self.init(
            configuration: configuration, status: record.status, dialog: dialog, callID: record.callID,
            localTag: record.localTag)
        expiresAt = record.expiresAt.map { clock.deadline(milliseconds: $0) }
        cseq = record.cseq
    }
}

extension SubscriberSubscription {
    /// After a restart, for a subscription that was being unsubscribed: the unsubscribe again
    /// (RFC 6665 §4.1.2.3), as it may never have reached the notifier; a subscription without a
    /// dialog has nothing to unsubscribe and ends.
    public mutating func unsubscribeAgain() -> [Action] {
        guard status == .unsubscribing else { return unsubscribe() }
        guard let request = inDialogRequest(expires: 0) else {
            status = .terminated(reason: "unsubscribed")
            return [.ended(reason: "unsubscribed")]
        }
        return [.send(request)]
    }
}
