public import PresenceDocuments
public import SIPMessages
import XMLBridge

/// The client side of the [MS-PRES] category publish (§2.2.2.2.1): builds the SERVICE with the
/// versions it knows, learns the new versions from the 200 OK (§2.2.2.2.2), and on 409 Conflict
/// takes `curVersion` from the fault body (§2.2.2.2.3: "For a publish request to
/// be successful, it SHOULD be retried with this value") and sends the publish again, at most
/// ``Configuration/maxConflictRounds`` times.
///
/// One SERVICE at a time: a ``publish(_:)`` asked while one is in flight waits and goes out
/// after it (merged with other waiting items; a later item replaces an earlier one of the same
/// key).
public struct CategoryPublisher: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// The publisher: From, To and `publications/@uri` carry its URI (§2.2.2.2.1 line
        /// 1590: "The To and From header fields in a publish request MUST carry the same SIP
        /// URI").
        public var publisher: SIPAddress
        /// This endpoint's Contact, if any.
        public var contact: SIPAddress?
        /// 409 rounds before giving up. Default 3.
        public var maxConflictRounds: Int
        /// Further headers for every SERVICE.
        public var extraHeaders: SIPHeaders

        public init(
            publisher: SIPAddress, contact: SIPAddress? = nil, maxConflictRounds: Int = 3,
            extraHeaders: SIPHeaders = []
        ) {
            self.publisher = publisher
            self.contact = contact
            self.maxConflictRounds = maxConflictRounds
            self.extraHeaders = extraHeaders
        }
    }

    /// The identity of a publication within this publisher.
    public struct ItemKey: Sendable, Hashable {
        public var container: UInt32
        public var categoryName: CategoryName
        public var instance: UInt32
        public init(container: UInt32, categoryName: CategoryName, instance: UInt32) {
            self.container = container
            self.categoryName = categoryName
            self.instance = instance
        }
    }

    /// One publication to make: new data, or a delete (`expires="0"`, §4.2.2).
    public struct Item: Sendable, Hashable {
        public var key: ItemKey
        public var expireType: ExpireType
        /// Seconds for `time`; nil otherwise.
        public var expires: UInt32?
        public var endpointID: String?
        /// nil with ``isDelete``.
        public var payload: CategoryPayload?
        public var isDelete: Bool

        public static func publish(
            _ key: ItemKey, _ payload: CategoryPayload, expireType: ExpireType = .static,
            expires: UInt32? = nil, endpointID: String? = nil
        ) -> Item {
            Item(
                key: key, expireType: expireType, expires: expires, endpointID: endpointID, payload: payload,
                isDelete: false)
        }

        public static func delete(_ key: ItemKey, expireType: ExpireType = .static) -> Item {
            Item(key: key, expireType: expireType, expires: 0, endpointID: nil, payload: nil, isDelete: true)
        }
    }

    public enum Action: Sendable, Hashable {
        /// Send this SERVICE.
        case send(SIPRequest)
        /// The publish was committed; the 200 OK's categories document when it had one.
        case published(CategoriesDocument?)
        /// The publish failed for good: nothing of it was committed (§3.2.5.1.2).
        case failed(statusCode: Int?, reason: String)
    }

    public let configuration: Configuration
    public let callID: String
    public let localTag: String
    /// The server versions this side knows, from 200 OKs, faults and ``learn(_:)``.
    public internal(set) var versions: [ItemKey: UInt32] = [:]
    public private(set) var outstanding: SIPRequest?
    private var outstandingItems: [Item] = []
    private var queued: [Item] = []
    private var conflictRounds = 0
    var cseq: UInt32 = 0

    public init(_ configuration: Configuration, callID: String, localTag: String) {
        self.configuration = configuration
        self.callID = callID
        self.localTag = localTag
    }

    /// Publishes these items in one SERVICE (or after the one in flight).
    public mutating func publish(_ items: [Item]) -> [Action] {
        guard !items.isEmpty else { return [] }
        if outstanding != nil {
            queued = Self.merge(queued, items)
            return []
        }
        conflictRounds = 0
        outstandingItems = items
        return [.send(makeRequest())]
    }

    /// Versions seen elsewhere (a self-subscription's roamingData, [MS-PRES] §2.2.2.3.3).
    public mutating func learn(_ document: CategoriesDocument) {
        for category in document.categories {
            guard let container = category.container else { continue }
            let key = ItemKey(container: container, categoryName: category.name, instance: category.instance ?? 0)
            if let version = category.version { versions[key] = version }
        }
    }

    /// The final response to the SERVICE in flight (matched by CSeq; others are ignored).
    public mutating func receive(_ response: SIPResponse) -> [Action] {
        guard let request = outstanding, response.statusCode >= 200,
            let sent = try? request.headers.cseq, (try? response.headers.cseq) == sent
        else { return [] }
        outstanding = nil
        if (200..<300).contains(response.statusCode) {
            let document = Self.categories(inRoamingData: response.body)
            for item in outstandingItems {
                if item.isDelete {
                    versions[item.key] = nil
                } else {
                    versions[item.key] = (versions[item.key] ?? 0) &+ 1
                }
            }
            if let document { learn(document) }
            return [.published(document)] + next()
        }
        if response.statusCode == 409 {
            guard let fault = try? PublishFault(bytes: response.body), !fault.operations.isEmpty else {
                return fail(409, "409 without a readable msrtc-fault body")
            }
            conflictRounds += 1
            guard conflictRounds <= configuration.maxConflictRounds else {
                return fail(409, "version conflict after \(configuration.maxConflictRounds) rounds")
            }
            var learned = false
            for op in fault.operations {
                guard op.index >= 1, op.index <= outstandingItems.count, let current = op.currentVersion else {
                    continue
                }
                versions[outstandingItems[op.index - 1].key] = current
                learned = true
            }
            guard learned else { return fail(409, "409 naming no publication of the request") }
            return [.send(makeRequest())]
        }
        return fail(response.statusCode, response.reasonPhrase)
    }

    /// The SERVICE timed out or failed in transport (RFC 3261 §8.1.3.1: as 408). Not retried:
    /// the caller publishes again when it wants (a publish is not idempotent across versions).
    public mutating func transactionFailed() -> [Action] {
        guard outstanding != nil else { return [] }
        outstanding = nil
        return fail(408, "Request Timeout")
    }

    private mutating func fail(_ code: Int?, _ reason: String) -> [Action] {
        outstandingItems = []
        return [.failed(statusCode: code, reason: reason)] + next()
    }

    private mutating func next() -> [Action] {
        outstandingItems = []
        guard !queued.isEmpty else { return [] }
        outstandingItems = queued
        queued = []
        conflictRounds = 0
        return [.send(makeRequest())]
    }

    /// The publish document for the items in flight, with the versions known now.
    public func document(for items: [Item]) -> CategoryPublish {
        CategoryPublish(
            uri: configuration.publisher.uri.description,
            publications: items.map { item in
                CategoryPublish.Publication(
                    categoryName: item.key.categoryName, instance: item.key.instance, container: item.key.container,
                    version: versions[item.key] ?? 0, expireType: item.expireType, expires: item.expires,
                    endpointID: item.endpointID, payload: item.isDelete ? nil : item.payload)
            })
    }

    private mutating func makeRequest() -> SIPRequest {
        cseq += 1
        var h = SIPHeaders()
        var from = configuration.publisher
        from.tag = localTag
        var to = configuration.publisher
        to.tag = nil
        h.append(.maxForwards, "70")
        h.append(.from, from.description)
        h.append(.to, to.description)
        h.append(.callID, callID)
        h.append(.cseq, "\(cseq) SERVICE")
        if let contact = configuration.contact { h.append(.contact, contact.description) }
        for field in configuration.extraHeaders { h.fields.append(field) }
        h.append(.contentType, CategoryPublicationStore.BodyType.publish)
        let request = SIPRequest(
            method: .service, uri: configuration.publisher.uri, headers: h,
            body: document(for: outstandingItems).serialized())
        outstanding = request
        return request
    }

    private static func merge(_ a: [Item], _ b: [Item]) -> [Item] {
        var out = a
        for item in b {
            if let i = out.firstIndex(where: { $0.key == item.key }) { out[i] = item } else { out.append(item) }
        }
        return out
    }

    /// The categories document inside a `roamingData` 200 OK body (§2.2.2.2.2), nil when absent
    /// or unreadable.
    static func categories(inRoamingData body: [UInt8]) -> CategoriesDocument? {
        guard !body.isEmpty, let root = try? XMLParser.parse(body),
            root.name == XMLName(NS.roamingSelf, "roamingData"),
            let element = root.element(XMLName(NS.categories, "categories"))
        else { return nil }
        return try? CategoriesDocument(xml: element)
    }
}
