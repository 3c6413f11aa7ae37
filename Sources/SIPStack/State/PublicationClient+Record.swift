public import NIOCore
public import SIPMessages

extension PublicationClient {
    /// A publication as the durable store keeps it (docs/state.md): what it publishes and where,
    /// its status, entity-tag (RFC 3903 §4.1) and expiry (milliseconds since the Unix epoch), and
    /// the PUBLISH that was under way or waiting, to be sent again after a restart.
    public struct Record: Codable, Sendable, Hashable {
        public var target: String
        public var from: String
        public var to: String
        public var package: SIPEventPackage
        public var expires: UInt32
        public var extraHeaders: [[String]]
        public var retryIntervalMilliseconds: Int64
        public var maxRetries: Int
        public var status: Status
        public var entityTag: String?
        public var expiresAt: Int64?
        public var body: StoredBytes
        public var contentType: String
        public var callID: String
        public var localTag: String
        public var cseq: UInt32
        /// `initial`, `refresh`, `modify` or `remove`: the PUBLISH in flight or queued, if any.
        public var operation: String?
    }

    public func record(clock: WallClock) -> Record {
        Record(
            target: configuration.target.description, from: configuration.from.description,
            to: configuration.to.description, package: configuration.package, expires: configuration.expires,
            extraHeaders: SIPDialog.storedHeaders(configuration.extraHeaders),
            retryIntervalMilliseconds: configuration.retryInterval.nanoseconds / 1_000_000,
            maxRetries: configuration.maxRetries, status: status, entityTag: entityTag,
            expiresAt: expiresAt.map(clock.milliseconds), body: StoredBytes(body), contentType: contentType,
            callID: callID, localTag: localTag, cseq: cseq, operation: (queued ?? outstandingOperation)?.rawValue)
    }

    public init(record: Record, clock: WallClock) throws(SIPStackError) {
        let headers = try SIPDialog.restoredHeaders(record.extraHeaders)
        let configuration = Configuration(
            target: try SIPDialog.restored(SIPURI(record.target), "target"),
            from: try SIPDialog.restored(SIPAddress(record.from), "from"),
            to: try SIPDialog.restored(SIPAddress(record.to), "to"),
            package: record.package, expires: record.expires, extraHeaders: headers,
            retryInterval: .milliseconds(record.retryIntervalMilliseconds), maxRetries: record.maxRetries)
        self.init(
            configuration: configuration, body: record.body.bytes, contentType: record.contentType,
            callID: record.callID, localTag: record.localTag)
        var operation: Operation?
        if let name = record.operation {
            guard let known = Operation(rawValue: name) else {
                throw SIPStackError(.invalidRecord, "operation \(name): not initial, refresh, modify or remove")
            }
            operation = known
        }
        status = record.status
        entityTag = record.entityTag
        expiresAt = record.expiresAt.map { clock.deadline(milliseconds: $0) }
        cseq = record.cseq
        outstandingOperation = operation
    }

    /// What a restored publication does first: the PUBLISH that was interrupted, again (a new
    /// transaction with a new CSeq, as after a timeout); else, while published, a refresh due by
    /// its expiry (at once when that is less than 10 s away; RFC 3903 §4.3).
    public mutating func resume(now: NIODeadline) -> [Action] {
        if outstandingOperation != nil { return retry(now: now) }
        guard status == .published, let expiresAt else { return [] }
        let due = expiresAt - .seconds(10)
        return due <= now ? refresh(now: now) : [.scheduleRefresh(due)]
    }
}
