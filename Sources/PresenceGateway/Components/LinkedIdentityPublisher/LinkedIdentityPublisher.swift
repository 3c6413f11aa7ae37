import Foundation
import GatewayState
import MSPresenceEvents
public import NIOCore
import PresenceDocuments
import PresenceMapping
import SIPMessages
import SIPStack

/// Flow 4, the linked identities (docs/flows.md): what the gateway publishes for a configured
/// pair of an enterprise and an OMA identity, each way.
///
/// - Enterprise → OMA (`publish-to-oma`): the enterprise identity's categories, brought by an OMA
///   watch of the coordinator's with the OMA identity in From, are PUBLISHed as PIDF (entity =
///   the OMA identity) to the OMA presence server (RFC 3903: SIP-ETag kept, refreshed before
///   expiry, modified on change, 412 answered by publishing afresh, removed on shutdown or when
///   the enterprise subscription ends, which is tried again a minute later).
/// - OMA → enterprise (`publish-to-enterprise`): the gateway is the presence server (RFC 3903
///   event state compositor) of the OMA identity: PUBLISHes are kept by entity-tag, several
///   sources composed, and the result published into the enterprise for the enterprise identity
///   as a SERVICE category publish ([MS-PRES] §2.2.2.2) with version handling and 409 retry
///   (`LinkedIdentityPublisher+Compositor`).
///
/// Its tables are its own; the coordinator (``GatewayCore``) hands it the mapper, the settings
/// and identifiers, and does what crosses into other flows: the OMA watch a link takes its
/// enterprise state from, and showing a served identity's state to enterprise watchers. Each
/// entry changes through ``modify(_:_:)``, which remembers it for the durable store
/// (`LinkedIdentityPublisher+Storage`).
struct LinkedIdentityPublisher: Sendable {
    /// A linked identity's publication toward the OMA presence server.
    struct Link: Sendable {
        var identity: GatewayConfiguration.LinkedIdentity
        /// The OMA watch (and so enterprise leg) that brings the enterprise state.
        var watch: Int?
        var client: PublicationClient?
        var lastBody: [UInt8]?
    }

    /// Links by key (a key of the coordinator's).
    private var links: [Int: Link] = [:]
    /// The event state compositor for the identities the gateway serves.
    private var compositor: EventStateCompositor {
        didSet { changes.publications = true }
    }
    /// Their composed state, as categories, by OMA identity.
    private var served: [String: CategoriesDocument] = [:]
    /// SERVICE category publishers by enterprise identity.
    private var publishers: [String: CategoryPublisher] = [:]
    /// What changed since the durable store last took the changes.
    private var changes = Changes()

    /// How long after its enterprise subscription ended a link subscribes again.
    static let retryDelay = TimeAmount.seconds(60)

    init(package: SIPEventPackage) {
        compositor = EventStateCompositor(package: package, acceptedBodyTypes: [SIPBodyType.pidf])
    }

    // MARK: - Entries

    subscript(key: Int) -> Link? { links[key] }

    var linkKeys: [Int] { links.keys.sorted() }

    /// Changes the link of `key`, if there is one, and remembers it for the store.
    @discardableResult
    mutating func modify<T>(_ key: Int, _ body: (inout Link) -> T) -> T? {
        guard let index = links.index(forKey: key) else { return nil }
        changes.note(link: key)
        return body(&links.values[index])
    }

    mutating func add(_ link: Link, key: Int) {
        links[key] = link
        changes.note(link: key)
    }

    // MARK: - Enterprise → OMA

    /// The configured identities publishing to the OMA side that have no link yet (those
    /// restored from the durable store go on where they were).
    func unlinked(_ identities: [GatewayConfiguration.LinkedIdentity]) -> [GatewayConfiguration.LinkedIdentity] {
        identities.filter { identity in identity.publishToOMA && !links.values.contains { $0.identity == identity } }
    }

    /// How many links have an OMA watch the coordinator holds (they are not watchers, for metrics).
    func watchCount(held: (Int) -> Bool) -> Int {
        links.values.count { link in link.watch.map(held) ?? false }
    }

    /// New enterprise state of a link: published when its PIDF changed.
    mutating func publish(
        _ key: Int, _ state: CategoriesDocument, mapper: PresenceMapper, settings: GatewayConfiguration,
        ids: inout IdentifierSource
    ) -> [GatewayCore.Action] {
        guard let link = links[key], let target = try? SIPURI(link.identity.oma) else { return [] }
        var document = state
        document.uri = link.identity.oma
        let body = mapper.pidfDocument(from: document, dialect: .rfc, rpidExtensions: settings.oma.rpidExtensions)
            .serialized()
        guard body != link.lastBody else { return [] }
        let actions = modify(key) { link -> [PublicationClient.Action] in
            link.lastBody = body
            if var client = link.client, client.status != .removed, !Self.failed(client.status) {
                defer { link.client = client }
                return client.modify(body: body, contentType: SIPBodyType.pidf)
            }
            let address = SIPAddress(uri: target)
            let configuration = PublicationClient.Configuration(
                target: target, from: address, to: address, expires: settings.subscriptions.defaultExpires)
            let (client, started) = PublicationClient.start(
                configuration, body: body, contentType: SIPBodyType.pidf, callID: ids.callID(), localTag: ids.tag())
            link.client = client
            return started
        }
        return Self.actions(actions ?? [], key: key)
    }

    /// Runs `step` on the link's publication client and turns its actions into the core's.
    mutating func withClient(_ key: Int, _ step: (inout PublicationClient) -> [PublicationClient.Action])
        -> [GatewayCore.Action]
    {
        guard links[key]?.client != nil else { return [] }
        let actions =
            modify(key) { link -> [PublicationClient.Action] in
                guard var client = link.client else { return [] }
                defer { link.client = client }
                return step(&client)
            } ?? []
        return Self.actions(actions, key: key)
    }

    /// The enterprise subscription of a link ended: its publication is removed (OMA watchers then
    /// see what the presence server shows for no publication) and the subscription is tried
    /// again later.
    mutating func sourceEnded(_ key: Int, now: NIODeadline) -> [GatewayCore.Action] {
        let actions = modify(key) { link -> [PublicationClient.Action] in
            link.watch = nil
            link.lastBody = nil
            guard var client = link.client else { return [] }
            defer { link.client = client }
            return client.remove()
        }
        guard let actions else { return [] }
        return Self.actions(actions, key: key) + [.schedule(.retry(.linkedPublication(key)), at: now + Self.retryDelay)]
    }

    /// Shutdown: every publication toward the OMA side is removed (RFC 3903 §4.5, Expires 0).
    mutating func removeAll() -> [GatewayCore.Action] {
        linkKeys.flatMap { key in withClient(key) { $0.remove() } }
    }

    static func actions(_ actions: [PublicationClient.Action], key: Int) -> [GatewayCore.Action] {
        actions.compactMap { action in
            switch action {
            case .send(let request): .send(request, to: .oma, context: .linkedPublication(key))
            case .scheduleRefresh(let at): .schedule(.refresh(.linkedPublication(key)), at: at)
            case .scheduleRetry(let at): .schedule(.retry(.linkedPublication(key)), at: at)
            case .published, .removed, .failed: nil
            }
        }
    }

    private static func failed(_ status: PublicationClient.Status) -> Bool {
        if case .failed = status { return true }
        return false
    }

    // MARK: - OMA → enterprise

    /// A PUBLISH for the served identity `resource` (RFC 3903 §6).
    mutating func receive(_ request: SIPRequest, resource: String, now: NIODeadline)
        -> [EventStateCompositor.Action]
    {
        compositor.receive(request, resource: resource, now: now, entropy: UInt64.random(in: 0...UInt64.max))
    }

    mutating func expire(_ entityTag: String, now: NIODeadline) -> [EventStateCompositor.Action] {
        compositor.expire(entityTag: entityTag, now: now)
    }

    /// The publications of `resource` composed into its categories (or none), kept as what the
    /// gateway serves for it, and returned.
    mutating func compose(
        _ resource: String, publications: [EventStateCompositor.Publication], mapper: PresenceMapper
    ) -> CategoriesDocument? {
        served[resource] = Self.composedState(resource, publications: publications, mapper: mapper)
        return served[resource]
    }

    /// The composed state of a served OMA identity, as categories.
    func served(_ uri: String) -> CategoriesDocument? { served[uri] }

    func hasServicePublisher(_ identity: String) -> Bool { publishers[identity] != nil }

    /// Publishes `items` with the SERVICE publisher of `identity` ([MS-PRES] §2.2.2.2), or `new`
    /// when there is none yet. Deletes of what was never published are left out.
    mutating func servicePublish(_ identity: String, items: [CategoryPublisher.Item], new: CategoryPublisher?)
        -> [GatewayCore.Action]
    {
        guard var publisher = publishers[identity] ?? new else { return [] }
        let items = items.filter { !$0.isDelete || publisher.versions[$0.key] != nil }
        let actions = publisher.publish(items)
        publishers[identity] = publisher
        changes.note(publisher: identity)
        return Self.serviceActions(actions, publisher: identity)
    }

    mutating func servicePublishResponse(_ identity: String, _ response: SIPResponse) -> [GatewayCore.Action] {
        guard var publisher = publishers[identity] else { return [] }
        let actions = publisher.receive(response)
        publishers[identity] = publisher
        changes.note(publisher: identity)
        return Self.serviceActions(actions, publisher: identity)
    }

    private static func serviceActions(_ actions: [CategoryPublisher.Action], publisher: String)
        -> [GatewayCore.Action]
    {
        actions.compactMap { action in
            if case .send(let request) = action {
                return .send(request, to: .enterprise, context: .servicePublish(publisher))
            }
            return nil
        }
    }

    // MARK: - Durable state

    /// What changed since the store last took the changes.
    struct Changes: Sendable {
        var enabled = false
        var links: Set<Int> = []
        var publishers: Set<String> = []
        var publications = false
        /// The entity-tags of the publications the store holds.
        var written: Set<String> = []

        mutating func note(link key: Int) { if enabled { links.insert(key) } }
        mutating func note(publisher identity: String) { if enabled { publishers.insert(identity) } }
    }
}

extension LinkedIdentityPublisher: DurableComponent {
    struct ChangedKeys: ChangedKeySet {
        var links: Set<Int>
        var publishers: Set<String>
        var publications: Set<String>

        var isEmpty: Bool { links.isEmpty && publishers.isEmpty && publications.isEmpty }
    }

    var journaling: Bool {
        get { changes.enabled }
        set { changes.enabled = newValue }
    }

    mutating func takeChangedKeys() -> ChangedKeys {
        var taken = ChangedKeys(links: changes.links, publishers: changes.publishers, publications: [])
        if changes.publications {
            // The publications that came or went since the store last took them.
            let current = Set(compositor.publications.keys)
            taken.publications = current.symmetricDifference(changes.written)
            changes.written = current
        }
        changes = Changes(enabled: changes.enabled, written: changes.written)
        return taken
    }

    func stateChanges(_ keys: ChangedKeys, coding: RecordCoding, encoder: JSONEncoder)
        -> [StateChange]
    {
        let links = Link.changes(keys.links.map(String.init), coding: coding, encoder: encoder) {
            Int($0).flatMap { self.links[$0] }
        }
        let publishers = CategoryPublisher.changes(keys.publishers, coding: coding, encoder: encoder) {
            self.publishers[$0]
        }
        let publications = EventStateCompositor.Publication.changes(
            keys.publications, coding: coding, encoder: encoder
        ) { compositor.publications[$0] }
        return links + publishers + publications
    }

    func dialogRecordIDs() -> [StateRecordID] {
        links.keys.map { StateRecordID(kind: Link.recordKind.rawValue, key: String($0)) }
    }

    /// A link another node took over is let go; publications and SERVICE publishers are not
    /// dialogs: what the other node writes of them wins, this node's copy is a cache.
    mutating func disown(_ id: StateRecordID) -> ComponentOutput {
        guard id.kind == Link.recordKind.rawValue, let key = Int(id.key), links.removeValue(forKey: key) != nil else {
            return ComponentOutput()
        }
        return ComponentOutput(actions: [
            .cancel(.refresh(.linkedPublication(key))), .cancel(.retry(.linkedPublication(key))),
        ])
    }

    func holds(_ context: GatewayCore.Context) -> Bool? {
        switch context {
        case .linkedPublication(let key): links[key] != nil
        case .servicePublish: true
        default: nil
        }
    }

    /// Takes back links, publications received and SERVICE publishers: each link continues (the
    /// PUBLISH under way again, or a refresh by expiry) or is removed when its identity is no
    /// longer configured; each publication's expiry is scheduled again.
    mutating func restore(_ entries: GatewayCore.StoredEntries, core: GatewayCore, now: NIODeadline)
        -> ComponentOutput
    {
        for (identity, publisher) in entries.entries(CategoryPublisher.self) { publishers[identity] = publisher }
        var out: [GatewayCore.Action] = []
        for (key, link) in entries.table(Link.self).sorted(by: { $0.key < $1.key }) {
            add(link, key: key)
            let configured = core.configuration.linkedIdentities.contains { $0 == link.identity }
            out += withClient(key) { configured ? $0.resume(now: now) : $0.remove() }
            modify(key) { link in
                // A watch of another link's, or none any more: subscribed again below.
                if !configured || link.watch.map({ core.linkedWatch($0) != key }) ?? false { link.watch = nil }
            }
            if configured, links[key]?.watch == nil { out.append(.schedule(.retry(.linkedPublication(key)), at: now)) }
        }
        let publications = entries.entries(EventStateCompositor.Publication.self).map(\.value)
        changes.written.formUnion(publications.map(\.entityTag))
        for action in compositor.restore(publications) {
            if case .scheduleExpiry(let tag, let at) = action { out.append(.schedule(.publicationExpiry(tag), at: at)) }
        }
        return ComponentOutput(actions: out)
    }

    func publications(of resource: String) -> [EventStateCompositor.Publication] {
        compositor.publications(of: resource)
    }
}
