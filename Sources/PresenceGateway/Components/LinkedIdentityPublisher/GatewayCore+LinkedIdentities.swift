import MSPresenceEvents
public import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// Flow 4 as the coordinator composes it: the ``LinkedIdentityPublisher`` keeps the links, the
/// compositor and the SERVICE publishers; here is what crosses into the other flows: the OMA
/// watch each link takes its enterprise state from (flow 2's legs), and a served identity's
/// composed state shown to enterprise watchers (flow 1) and lists.
extension GatewayCore {
    /// Starts what runs without a request: the linked identities' enterprise subscriptions, the
    /// `xcap-diff` subscriptions for XCAP pres-rules (`GatewayCore+XCAPDiff`) and the watcher
    /// information subscriptions of identities whose watchers are mirrored
    /// (`GatewayCore+WatcherMirror`). Of several shards, the first one's core alone starts them
    /// (``runsNodeWideWork``).
    public mutating func start(now: NIODeadline) -> [Action] {
        followWatcherInfoSubscribers()
        var out = watchXCAPDocuments(now: now) + watchWatcherLists(now: now)
        for identity in linkedIdentities.unlinked(runsNodeWideWork ? configuration.linkedIdentities : []) {
            let key = takeKey()
            linkedIdentities.add(LinkedIdentityPublisher.Link(identity: identity), key: key)
            out += watchLinked(key, now: now)
        }
        return out
    }

    /// A link's enterprise subscription: an OMA watch of the enterprise identity with the OMA
    /// identity as watcher, attached to an enterprise leg like any other.
    private mutating func watchLinked(_ key: Int, now: NIODeadline) -> [Action] {
        guard let identity = linkedIdentities[key]?.identity,
            let watcher = WatcherIdentity(uri: identity.oma, network: .federated)
        else { return [] }
        let watchKey = takeKey()
        notifier.open(watchKey, OMAWatch(watcher: watcher, resource: identity.enterprise, linked: key))
        linkedIdentities.modify(key) { $0.watch = watchKey }
        return attach(watchKey, now: now)
    }

    /// The link an OMA watch brings enterprise state for, if it is one's.
    func linkedWatch(_ watch: Int) -> Int? { notifier[watch]?.linked }

    mutating func publishLinked(_ key: Int, _ state: CategoriesDocument, now: NIODeadline) -> [Action] {
        linkedIdentities.publish(key, state, mapper: mapper, settings: configuration, ids: &ids)
    }

    mutating func linkedPublicationResponse(_ key: Int, _ response: SIPResponse, now: NIODeadline) -> [Action] {
        let jitter = ids.jitter()
        return linkedIdentities.withClient(key) { $0.receive(response, now: now, jitter: jitter) }
    }

    mutating func refreshLinked(_ key: Int, now: NIODeadline) -> [Action] {
        linkedIdentities.withClient(key) { $0.refresh(now: now) }
    }

    /// A publication retry, or (with no enterprise subscription) subscribing again.
    mutating func retryLinked(_ key: Int, now: NIODeadline) -> [Action] {
        if let link = linkedIdentities[key], link.watch == nil { return watchLinked(key, now: now) }
        return linkedIdentities.withClient(key) { $0.retry(now: now) }
    }

    mutating func linkedSourceEnded(_ key: Int, now: NIODeadline) -> [Action] {
        linkedIdentities.sourceEnded(key, now: now)
    }

    // MARK: - Served identities (OMA → enterprise)

    /// The normalized OMA URI when `resource` is a linked identity the gateway serves itself.
    func servedLocally(_ resource: String) -> String? { Self.servedLocally(resource, in: configuration) }

    /// ``servedLocally(_:)`` under `configuration`.
    static func servedLocally(_ resource: String, in configuration: GatewayConfiguration) -> String? {
        guard let uri = WatcherIdentity.addressOfRecord(resource) else { return nil }
        return configuration.linkedIdentities.contains { $0.publishToEnterprise && $0.oma == uri } ? uri : nil
    }

    /// A PUBLISH from the OMA side for a served linked identity (the router let only those in).
    mutating func receivePublish(_ request: SIPRequest, id: ServerRequestID, now: NIODeadline) -> [Action] {
        guard let resource = servedLocally(request.uri.description) else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 404, toTag: ids.tag()))]
        }
        return compositorActions(linkedIdentities.receive(request, resource: resource, now: now), id: id, now: now)
    }

    mutating func expirePublication(_ entityTag: String, now: NIODeadline) -> [Action] {
        compositorActions(linkedIdentities.expire(entityTag, now: now), id: nil, now: now)
    }

    private mutating func compositorActions(
        _ actions: [EventStateCompositor.Action], id: ServerRequestID?, now: NIODeadline
    ) -> [Action] {
        var out: [Action] = []
        for action in actions {
            switch action {
            case .respond(let response):
                if let id { out.append(.respond(id, response)) }
            case .scheduleExpiry(let tag, let at):
                out.append(.schedule(.publicationExpiry(tag), at: at))
            case .cancelExpiry(let tag):
                out.append(.cancel(.publicationExpiry(tag)))
            case .changed(let resource, let publications):
                out += composedStateChanged(resource, publications: publications, now: now)
            }
        }
        return out
    }

    /// A served identity's publications changed: its composed state is shown to its enterprise
    /// watchers (flow 1, notified when their view changed) and document watchers, and published
    /// into the enterprise for the linked enterprise identity.
    mutating func composedStateChanged(
        _ resource: String, publications: [EventStateCompositor.Publication], now: NIODeadline
    ) -> [Action] {
        let state = linkedIdentities.compose(resource, publications: publications, mapper: mapper)
        var out: [Action] = []
        for key in bridge.watchKeys.sorted() { out += viewChanged(of: resource, leg: nil, watch: key, now: now) }
        out += apply(bridge.servedDocumentChanged(resource, views, now: now))
        if let identity = configuration.linkedIdentities.first(where: { $0.publishToEnterprise && $0.oma == resource })
        {
            out += servicePublish(identity, state: state)
        }
        return out
    }

    /// The SERVICE category publish of a linked identity's state
    /// (``LinkedIdentityPublisher/serviceItems(for:state:)``), from an endpoint of the gateway's
    /// whose Contact carries the identity's `+sip.instance`.
    private mutating func servicePublish(_ identity: GatewayConfiguration.LinkedIdentity, state: CategoriesDocument?)
        -> [Action]
    {
        guard let enterpriseURI = try? SIPURI(identity.enterprise) else { return [] }
        let endpointID = LinkedIdentityPublisher.endpointID(for: identity.oma)
        let contact = contacts[.enterprise].map { LinkedIdentityPublisher.withInstance($0, endpointID) }
        let made =
            linkedIdentities.hasServicePublisher(identity.enterprise)
            ? nil
            : CategoryPublisher(
                CategoryPublisher.Configuration(publisher: SIPAddress(uri: enterpriseURI), contact: contact),
                callID: ids.callID(), localTag: ids.tag())
        return linkedIdentities.servicePublish(
            identity.enterprise, items: LinkedIdentityPublisher.serviceItems(for: identity.oma, state: state),
            new: made)
    }

    /// Withdraws every SERVICE publication of the linked identities (`shutdown: terminate`).
    mutating func withdrawServicePublications() -> [Action] {
        configuration.linkedIdentities.filter(\.publishToEnterprise).flatMap { servicePublish($0, state: nil) }
    }

    mutating func servicePublishResponse(_ publisherURI: String, _ response: SIPResponse) -> [Action] {
        linkedIdentities.servicePublishResponse(publisherURI, response)
    }
}
