public import NIOCore
public import PresenceDocuments
public import SIPMessages
public import XMLBridge

/// The server side of the [MS-PRES] category publish: every publisher's category instances,
/// keyed by (publisher URI, container, category name, instance) ([MS-PRES] §1.3.1.1:
/// "The combination of publisher identity, container number, category name, and
/// instance number uniquely identifies a publication in the server").
///
/// A state machine that returns actions, like the RFC 3903 ``EventStateCompositor`` of SIPStack:
/// time comes in as `now` (for `time` expiry) and `utcSeconds` (the wall clock stamped into
/// `publishTime`), both from the driver.
///
/// Versions ([MS-PRES] §1.3.1.6, and §3.2.5.1.2):
/// - create: the publication carries version 0; the store keeps version 1 (§1.3.1.6.1: "the
///   publisher provides a version number equal to zero ... The server creates the instance and
///   set its version number to one"; §4.2.1: sent `version="0"`, the 200 OK shows
///   `version="1"`);
/// - update and delete (`expires="0"`): only with the current version, which an update
///   increments (§1.3.1.6.2, §1.3.1.6.3);
/// - anything else is a version conflict: 409 Conflict with an `application/msrtc-fault+xml`
///   body listing, for each failing publication, its 1-based index, the version sent, the
///   current version and the current data ([MS-PRES] §2.2.2.2.3;
///   example §4.2.1).
///
/// A publish is all or nothing ([MS-PRES] §3.2.5.1.2: "The server MUST NOT commit any
/// change until all publication elements in the publish request have been processed, cancelling
/// pending changes if any operation fails").
public struct CategoryPublicationStore: Sendable {
    /// The identity of one publication.
    public struct Key: Sendable, Hashable, Comparable {
        /// The publisher's URI, normalized (``CategoryPublicationStore/publisherKey(_:)``).
        public var publisher: String
        public var container: UInt32
        public var categoryName: CategoryName
        public var instance: UInt32

        public init(publisher: String, container: UInt32, categoryName: CategoryName, instance: UInt32) {
            self.publisher = publisher
            self.container = container
            self.categoryName = categoryName
            self.instance = instance
        }

        /// Publisher, container, category name, instance: the order of the §4.2.1 200 OK
        /// (containers 200, 300, 400 although the request listed 300, 400, 200).
        public static func < (a: Key, b: Key) -> Bool {
            (a.publisher, a.container, a.categoryName.rawValue, a.instance)
                < (b.publisher, b.container, b.categoryName.rawValue, b.instance)
        }
    }

    /// One stored category instance ([MS-PRES] §3.2.1 ContainerCategoryEntry).
    public struct Entry: Sendable, Hashable {
        public var key: Key
        /// Server-kept version, 1 after creation ([MS-PRES] §1.3.1.6.1).
        public var version: UInt32
        public var expireType: ExpireType
        /// Seconds, for `time` ([MS-PRES] §2.2.2.1).
        public var expires: UInt32?
        public var expiresAt: NIODeadline?
        /// The publishing endpoint, for `endpoint` ([MS-PRES] §2.2.2.1).
        public var endpointID: String?
        public var payload: CategoryPayload?
        /// `publishTime`, stamped by the store ([MS-PRES] §3.2.5.1.2: "The server MUST
        /// set the publishTime of the category instance to the current time in UTC").
        public var publishTime: String

        /// The `category` element for self views and the 200 OK (every attribute with a value,
        /// §3.2.5.1.2).
        public var category: Category {
            Category(
                name: key.categoryName, instance: key.instance, container: key.container, version: version,
                publishTime: publishTime, expireType: expireType, expires: expires, endpointID: endpointID,
                payload: payload)
        }
    }

    /// A (publisher, container, category) whose instances changed: the gateway re-resolves and
    /// notifies that category's subscribers ([MS-PRES] §1.3.1.6.1: "notifications of all instances
    /// of this category are sent to all subscribers").
    public struct Change: Sendable, Hashable, Comparable {
        public var publisher: String
        public var container: UInt32
        public var categoryName: CategoryName

        public init(publisher: String, container: UInt32, categoryName: CategoryName) {
            self.publisher = publisher
            self.container = container
            self.categoryName = categoryName
        }

        public static func < (a: Change, b: Change) -> Bool {
            (a.publisher, a.container, a.categoryName.rawValue) < (b.publisher, b.container, b.categoryName.rawValue)
        }
    }

    /// Bounds; every default is documented. Beyond the publication counts a publish is refused
    /// whole with 503 Service Unavailable, reason "Publication Limit Reached".
    public struct Limits: Sendable, Hashable {
        /// Publications in one SERVICE body; more → 413 Request Entity Too Large. Default 256
        /// (the §4.3.3 example publishes 6, a Lync sign-in about 30).
        public var maxPublicationsPerRequest: Int
        /// Category instances one publisher may hold. Default 1,000.
        public var maxPublicationsPerPublisher: Int
        /// Category instances over all publishers. Default 1,000,000.
        public var maxPublications: Int
        /// Largest SERVICE body, in bytes; larger → 413. Default 256 KiB ([MS-PRES] §3.2.5.1.2
        /// §3.2.5.1.2: "The server SHOULD limit the size of data").
        public var maxBodyBytes: Int

        public init(
            maxPublicationsPerRequest: Int = 256, maxPublicationsPerPublisher: Int = 1_000,
            maxPublications: Int = 1_000_000, maxBodyBytes: Int = 262_144
        ) {
            self.maxPublicationsPerRequest = maxPublicationsPerRequest
            self.maxPublicationsPerPublisher = maxPublicationsPerPublisher
            self.maxPublications = maxPublications
            self.maxBodyBytes = maxBodyBytes
        }

        public static let `default` = Limits()
    }

    /// A category that clients may not publish into a container ([MS-PRES] §3.2.5.1.2:
    /// "The server MUST NOT allow publications for a category to go to a container whose name has
    /// been marked as read-only"; `userProperties` in container 1, §3.2.6.2: "userProperties in container 1 MUST be registered as a read-only category").
    public struct ReadOnly: Sendable, Hashable {
        public var container: UInt32
        public var categoryName: CategoryName
        public init(container: UInt32, categoryName: CategoryName) {
            self.container = container
            self.categoryName = categoryName
        }
    }

    /// The result of applying one publish document.
    public enum Outcome: Sendable, Hashable {
        /// Committed. `document` is the §2.2.2.2.2 categories document for the 200 OK: every
        /// instance of each (container, category) the publish touched, an empty `category`
        /// element where none is left (§4.2.2).
        case committed(document: CategoriesDocument, changes: [Change], expiries: [Key: NIODeadline])
        /// A version check failed: nothing was committed (§3.2.5.1.2).
        case conflict(PublishFault)
        /// Refused before any version check.
        case rejected(status: Int, reason: String)
    }

    /// What the driver must do.
    public enum Action: Sendable, Hashable {
        /// Send this final response to the SERVICE.
        case respond(SIPResponse)
        /// Call ``expire(_:now:)`` for this `time` publication at this deadline.
        case scheduleExpiry(Key, at: NIODeadline)
        /// These categories changed: notify their subscribers (and the publisher's self
        /// subscriptions, [MS-PRES] §3.2.5.2).
        case changed([Change])
    }

    /// Content types of the publish exchange.
    public enum BodyType {
        /// [MS-PRES] §2.2.2.2.1.
        public static let publish = "application/msrtc-category-publish+xml"
        /// [MS-PRES] §2.2.2.2.2.
        public static let roamingSelf = "application/vnd-microsoft-roaming-self+xml"
        /// [MS-PRES] §2.2.2.2.3.
        public static let fault = "application/msrtc-fault+xml"
    }

    public let limits: Limits
    public let readOnly: Set<ReadOnly>
    /// Every instance, by publisher: a publish works on its publisher's dictionary only.
    private var byPublisher: [String: [Key: Entry]] = [:]
    /// Instances over all publishers.
    public private(set) var count = 0

    /// `readOnly` defaults to `userProperties` in container 1 ([MS-PRES] §3.2.6.2: "userProperties in container 1 MUST be registered as a read-only category").
    public init(
        limits: Limits = .default,
        readOnly: Set<ReadOnly> = [ReadOnly(container: 1, categoryName: .userProperties)]
    ) {
        self.limits = limits
        self.readOnly = readOnly
    }

    /// The publisher's instances, in ``Key`` order.
    public func entries(of publisher: String) -> [Entry] {
        (byPublisher[publisher] ?? [:]).values.sorted { $0.key < $1.key }
    }

    /// Every instance of every publisher (for inspection; O(n)).
    public var entries: [Key: Entry] {
        byPublisher.values.reduce(into: [:]) { all, own in all.merge(own) { a, _ in a } }
    }

    /// A publisher URI as a key: scheme, user and host (lower-cased), without port or parameters
    /// ([MS-PRES] §2.2.2.2.1: the `uri` "MUST exactly match the To-URI and the From-URI").
    public static func publisherKey(_ uri: SIPURI) -> String {
        "\(uri.scheme):\(uri.user.map { $0 + "@" } ?? "")\(uri.host.lowercased())"
    }

    /// Handles a publish SERVICE ([MS-PRES] §3.2.5.1.2). `endpointID` is the publishing
    /// endpoint's id (the `+sip.instance` UUID of its registration, or its epid) for `endpoint`
    /// publications that carry no `endpointId`; `toTag` goes into the response's To.
    ///
    /// - not `application/msrtc-category-publish+xml`: 415 with Accept;
    /// - a body that does not parse, a `time` publication without `expires`, a nonzero `expires`
    ///   on another type (§2.2.2.2.1), an `endpoint` publication with no endpoint:
    ///   400;
    /// - To, From and `publications/@uri` not the same URI (§3.2.5.1.2; §2.2.2.2.1): 403;
    /// - a read-only (container, category): 403;
    /// - too large: 413; over the store limits: 503;
    /// - a version conflict: 409 with the fault body (and ms-diagnostics 2044, as §4.2.1);
    /// - else 200 OK with the roamingData body of §2.2.2.2.2 and the changes.
    public mutating func receive(
        _ request: SIPRequest, endpointID: String?, now: NIODeadline, utcSeconds: Int64,
        toTag: String
    ) -> [Action] {
        func respond(_ code: Int, _ reason: String, _ headers: SIPHeaders = [], body: [UInt8] = []) -> [Action] {
            [
                .respond(
                    SIPResponse(
                        replyingTo: request, statusCode: code, reasonPhrase: reason, toTag: toTag,
                        headers: headers, body: body))
            ]
        }
        let type = (try? request.headers.contentType)?.mediaType.lowercased()
        guard type == BodyType.publish else {
            var accept = SIPHeaders()
            accept.append(.accept, BodyType.publish)
            return respond(415, "Unsupported Media Type", accept)
        }
        guard request.body.count <= limits.maxBodyBytes else { return respond(413, "Request Entity Too Large") }
        let document: CategoryPublish
        do { document = try CategoryPublish(bytes: request.body) } catch {
            return respond(400, "Bad Publish Body")
        }
        guard let from = try? request.headers.from, let to = try? request.headers.to,
            let listed = try? SIPURI(document.uri)
        else {
            return respond(400, "Bad Publisher Identity")
        }
        let publisher = Self.publisherKey(listed)
        guard Self.publisherKey(from.uri) == publisher, Self.publisherKey(to.uri) == publisher else {
            return respond(403, "Publisher Mismatch")
        }
        switch apply(document, publisher: publisher, endpointID: endpointID, now: now, utcSeconds: utcSeconds) {
        case .rejected(let status, let reason):
            return respond(status, reason)
        case .conflict(let fault):
            var headers = SIPHeaders()
            headers.append("ms-diagnostics", "2044;reason=\"Publication version out of date\"")
            headers.append(.contentType, BodyType.fault)
            return respond(409, "Conflict", headers, body: fault.serialized())
        case .committed(let categories, let changes, let expiries):
            var headers = SIPHeaders()
            headers.append(.contentType, BodyType.roamingSelf)
            let body = categories.serializedInRoamingData()
            var actions = respond(200, "OK", headers, body: body)
            for (key, at) in expiries.sorted(by: { $0.key < $1.key }) { actions.append(.scheduleExpiry(key, at: at)) }
            if !changes.isEmpty { actions.append(.changed(changes)) }
            return actions
        }
    }

    /// Applies a publish document for `publisher` (already checked against To and From): the
    /// version checks and actions of §3.2.5.1.2, on a copy that is committed only when every
    /// publication passed.
    public mutating func apply(
        _ publish: CategoryPublish, publisher: String, endpointID: String?,
        now: NIODeadline, utcSeconds: Int64
    ) -> Outcome {
        guard publish.publications.count <= limits.maxPublicationsPerRequest else {
            return .rejected(status: 413, reason: "Too Many Publications")
        }
        var working = byPublisher[publisher] ?? [:]
        var count = working.count
        var total = self.count
        var faults: [PublishFault.Operation] = []
        var touched = Set<Change>()
        var changed = Set<Change>()
        var expiries: [Key: NIODeadline] = [:]
        let publishTime = XSDTime.string(fromSeconds: utcSeconds)
        for (offset, p) in publish.publications.enumerated() {
            let isDelete = p.expires == 0
            // §2.2.2.2.1 and §3.2.5.1.2: expires is required for time,
            // and a nonzero expires only for time.
            if p.expireType == .time && p.expires == nil {
                return .rejected(status: 400, reason: "Time Publication Without Expires")
            }
            if let e = p.expires, e != 0, p.expireType != .time {
                return .rejected(status: 400, reason: "Expires Only For Time Publications")
            }
            if readOnly.contains(ReadOnly(container: p.container, categoryName: p.categoryName)) {
                return .rejected(status: 403, reason: "Read-Only Container")
            }
            let endpoint = p.endpointID ?? endpointID
            if p.expireType == .endpoint && endpoint == nil && !isDelete {
                return .rejected(status: 400, reason: "Endpoint Publication Without Endpoint")
            }
            let key = Key(
                publisher: publisher, container: p.container, categoryName: p.categoryName, instance: p.instance)
            let change = Change(publisher: publisher, container: p.container, categoryName: p.categoryName)
            touched.insert(change)
            // The version check, §3.2.5.1.2 steps 1-4.
            let current = working[key]
            guard p.version == (current?.version ?? 0) else {
                faults.append(
                    PublishFault.Operation(
                        index: offset + 1, version: p.version, currentVersion: current?.version ?? 0,
                        data: current?.payload))
                continue
            }
            if isDelete {
                // "If the category instance does not exist, the server moves on" (§3.2.5.1.2).
                if current != nil {
                    working[key] = nil
                    expiries[key] = nil
                    count -= 1
                    total -= 1
                    changed.insert(change)
                }
                continue
            }
            if current == nil {
                count += 1
                total += 1
            }
            let expiresAt = p.expireType == .time ? p.expires.map { now + .seconds(Int64($0)) } : nil
            working[key] = Entry(
                key: key, version: p.version &+ 1, expireType: p.expireType,
                expires: p.expireType == .time ? p.expires : nil, expiresAt: expiresAt,
                endpointID: p.expireType == .endpoint ? endpoint : p.endpointID, payload: p.payload,
                publishTime: publishTime)
            expiries[key] = expiresAt
            changed.insert(change)
        }
        if !faults.isEmpty { return .conflict(PublishFault(operations: faults)) }
        if count > limits.maxPublicationsPerPublisher || total > limits.maxPublications {
            return .rejected(status: 503, reason: "Publication Limit Reached")
        }
        byPublisher[publisher] = working.isEmpty ? nil : working
        self.count = total
        return .committed(
            document: categoriesDocument(publisher: publisher, for: touched),
            changes: changed.sorted(), expiries: expiries)
    }

    /// The expiry timer of a `time` publication fired ([MS-PRES] §1.3.1.1: "the
    /// server automatically deletes it after the expiration time is reached"). Ignored when the
    /// publication is gone or was updated with a later expiry (a stale timer).
    public mutating func expire(_ key: Key, now: NIODeadline) -> [Action] {
        guard let entry = byPublisher[key.publisher]?[key], let at = entry.expiresAt, now >= at else { return [] }
        remove([key])
        return [.changed([Change(publisher: key.publisher, container: key.container, categoryName: key.categoryName)])]
    }

    /// The endpoint's registration (or its last subscription) ended: its `endpoint` publications
    /// go ([MS-PRES] §2.2.2.1: "lives as long as the publishing endpoint is registered").
    public mutating func endpointEnded(publisher: String, endpointID: String) -> [Action] {
        removeMatching(publisher) { $0.expireType == .endpoint && $0.endpointID == endpointID }
    }

    /// The user has no registered endpoint left: the `user` publications go (§2.2.2.1: "lives as
    /// long as the publishing user has at least one registered endpoint"), and with them every
    /// `endpoint` one.
    public mutating func userEnded(publisher: String) -> [Action] {
        removeMatching(publisher) { $0.expireType == .user || $0.expireType == .endpoint }
    }

    private mutating func removeMatching(_ publisher: String, _ predicate: (Entry) -> Bool) -> [Action] {
        let keys = (byPublisher[publisher] ?? [:]).values.filter(predicate).map(\.key)
        guard !keys.isEmpty else { return [] }
        remove(keys)
        let changes = Set(
            keys.map { Change(publisher: $0.publisher, container: $0.container, categoryName: $0.categoryName) })
        return [.changed(changes.sorted())]
    }

    private mutating func remove(_ keys: [Key]) {
        for key in keys where byPublisher[key.publisher]?.removeValue(forKey: key) != nil {
            count -= 1
            if byPublisher[key.publisher]?.isEmpty == true { byPublisher[key.publisher] = nil }
        }
    }

    /// §3.2.5.1.2: the complete set of instances of each (container, category)
    /// touched, with publishTime and version; an empty element where none is left (§4.2.2).
    func categoriesDocument(publisher: String, for touched: Set<Change>) -> CategoriesDocument {
        var categories: [Category] = []
        for change in touched.sorted() {
            let instances = (byPublisher[publisher] ?? [:]).values
                .filter {
                    $0.key.container == change.container
                        && $0.key.categoryName == change.categoryName
                }
                .sorted { $0.key < $1.key }
            if instances.isEmpty {
                categories.append(Category(name: change.categoryName, container: change.container))
            } else {
                categories.append(contentsOf: instances.map(\.category))
            }
        }
        return CategoriesDocument(uri: publisher, categories: categories)
    }

}
