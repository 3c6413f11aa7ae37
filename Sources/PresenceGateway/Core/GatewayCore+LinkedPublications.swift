public import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// Flow 4, enterprise → OMA: for each configured linked identity with
/// `publish-to-oma`, the gateway watches the enterprise identity's categories (a category
/// subscription like an OMA watcher's, with the OMA identity in From) and PUBLISHes the mapped
/// PIDF (entity = the OMA identity) to the OMA presence server (RFC 3903: SIP-ETag kept, refreshed
/// before expiry, modified on change, 412 answered by publishing afresh, removed on shutdown or
/// when the enterprise subscription ends; the subscription is tried again a minute later).
extension GatewayCore {
    struct LinkedPublication: Sendable {
        var identity: GatewayConfiguration.LinkedIdentity
        /// The watch (and so enterprise leg) that brings the enterprise state.
        var watch: Int?
        var client: PublicationClient?
        var lastBody: [UInt8]?
    }

    /// How long after its enterprise subscription ended a linked identity subscribes again.
    static let linkRetryDelay = TimeAmount.seconds(60)

    /// Starts what runs without a request: the linked identities' enterprise subscriptions, the
    /// `xcap-diff` subscriptions for XCAP pres-rules (`GatewayCore+XCAPDiff`) and the watcher
    /// information subscriptions of identities whose watchers are mirrored
    /// (`GatewayCore+WatcherMirror`).
    public mutating func start(now: NIODeadline) -> [Action] {
        var out = watchXCAPDocuments(now: now) + watchWatcherLists(now: now)
        // Identities restored from the durable store go on where they were.
        for identity in configuration.linkedIdentities
        where identity.publishToOMA && !linked.values.contains(where: { $0.identity == identity }) {
            let key = takeKey()
            linked[key] = LinkedPublication(identity: identity)
            journal.link(key)
            out += watchLinked(key, now: now)
        }
        return out
    }

    private mutating func watchLinked(_ key: Int, now: NIODeadline) -> [Action] {
        guard var link = linked[key], let watcher = WatcherIdentity(uri: link.identity.oma, network: .federated) else {
            return []
        }
        let watchKey = takeKey()
        omaWatches[watchKey] = OMAWatch(watcher: watcher, resource: link.identity.enterprise, linked: key)
        link.watch = watchKey
        linked[key] = link
        journal.link(key)
        return attach(watchKey, now: now)
    }

    /// New enterprise state of a linked identity: published when its PIDF changed.
    mutating func publishLinked(_ key: Int, _ state: CategoriesDocument, now: NIODeadline) -> [Action] {
        guard var link = linked[key], let target = try? SIPURI(link.identity.oma) else { return [] }
        var document = state
        document.uri = link.identity.oma
        let body = mapper.pidfDocument(from: document, dialect: .rfc, rpidExtensions: configuration.oma.rpidExtensions)
            .serialized()
        guard body != link.lastBody else { return [] }
        link.lastBody = body
        let actions: [PublicationClient.Action]
        if var client = link.client, client.status != .removed, !Self.failed(client.status) {
            actions = client.modify(body: body, contentType: SIPBodyType.pidf)
            link.client = client
        } else {
            let address = SIPAddress(uri: target)
            let configuration = PublicationClient.Configuration(
                target: target, from: address, to: address,
                expires: self.configuration.subscriptions.defaultExpires)
            let (client, started) = PublicationClient.start(
                configuration, body: body, contentType: SIPBodyType.pidf,
                callID: ids.callID(), localTag: ids.tag())
            link.client = client
            actions = started
        }
        linked[key] = link
        journal.link(key)
        return publicationActions(actions, key: key)
    }

    mutating func linkedPublicationResponse(_ key: Int, _ response: SIPResponse, now: NIODeadline) -> [Action] {
        let jitter = ids.jitter()
        return withClient(key) { $0.receive(response, now: now, jitter: jitter) }
    }

    mutating func refreshLinked(_ key: Int, now: NIODeadline) -> [Action] {
        withClient(key) { $0.refresh(now: now) }
    }

    /// A publication retry, or (with no enterprise subscription) subscribing again.
    mutating func retryLinked(_ key: Int, now: NIODeadline) -> [Action] {
        if let link = linked[key], link.watch == nil { return watchLinked(key, now: now) }
        return withClient(key) { $0.retry(now: now) }
    }

    /// Runs `step` on the linked identity's publication client, keeps the client, and turns its
    /// actions into the core's.
    private mutating func withClient(_ key: Int, _ step: (inout PublicationClient) -> [PublicationClient.Action])
        -> [Action]
    {
        guard var link = linked[key], var client = link.client else { return [] }
        let actions = step(&client)
        link.client = client
        linked[key] = link
        journal.link(key)
        return publicationActions(actions, key: key)
    }

    /// The enterprise subscription of a linked identity ended: its publication is removed (OMA
    /// watchers then see what the presence server shows for no publication) and the subscription
    /// is tried again later.
    mutating func linkedSourceEnded(_ key: Int, now: NIODeadline) -> [Action] {
        guard var link = linked[key] else { return [] }
        link.watch = nil
        link.lastBody = nil
        var out: [Action] = []
        if var client = link.client {
            out += publicationActions(client.remove(), key: key)
            link.client = client
        }
        linked[key] = link
        journal.link(key)
        return out + [.schedule(.retry(.linkedPublication(key)), at: now + Self.linkRetryDelay)]
    }

    /// Shutdown: every linked publication is removed (RFC 3903 §4.5, Expires 0).
    mutating func removeLinkedPublications() -> [Action] {
        var out: [Action] = []
        for key in linked.keys.sorted() {
            guard var link = linked[key], var client = link.client else { continue }
            out += publicationActions(client.remove(), key: key)
            link.client = client
            linked[key] = link
            journal.link(key)
        }
        return out
    }

    func publicationActions(_ actions: [PublicationClient.Action], key: Int) -> [Action] {
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
}
