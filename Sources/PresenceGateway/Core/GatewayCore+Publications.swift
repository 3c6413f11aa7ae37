import MSPresenceEvents
import NIOCore
import PresenceDocuments
import PresenceMapping
import SIPMessages
import SIPStack

/// Flow 4, OMA → enterprise: the gateway is the presence server (RFC 3903 event
/// state compositor) of the linked identities configured with `publish-to-enterprise`. OMA
/// PUBLISHes for them are kept by entity-tag, several sources composed per presentity, exposed to
/// enterprise watchers of the OMA identity as categories (flow 1 serves them from here instead of
/// subscribing to the OMA side), and published into the enterprise for the enterprise identity as
/// a SERVICE category publish ([MS-PRES] §2.2.2.2) with version handling and 409 retry.
extension GatewayCore {
    /// Containers the gateway publishes a linked identity's state into: the aggregation input
    /// containers 2 and 3 that clients publish `userState` to ([MS-PRES] §4.3.1; docs/flows.md,
    /// "Container catalogue"), from which the server computes what watchers see.
    static let stateContainers: [UInt32] = [2, 3]
    /// Containers for the note, as in the §4.2.1 example (a personal note to 200, 300 and 400).
    static let noteContainers: [UInt32] = [200, 300, 400]

    /// The normalized OMA URI when `resource` is a linked identity the gateway serves itself.
    func servedLocally(_ resource: String) -> String? {
        guard let uri = WatcherIdentity.addressOfRecord(resource) else { return nil }
        return configuration.linkedIdentities.contains { $0.publishToEnterprise && $0.oma == uri } ? uri : nil
    }

    /// A PUBLISH from the OMA side for a served linked identity (the router let only those in).
    mutating func receivePublish(_ request: SIPRequest, id: ServerRequestID, now: NIODeadline) -> [Action] {
        guard let resource = servedLocally(request.uri.description) else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 404, toTag: ids.tag()))]
        }
        let actions = compositor.receive(
            request, resource: resource, now: now, entropy: UInt64.random(in: 0...UInt64.max))
        return compositorActions(actions, id: id, now: now)
    }

    mutating func expirePublication(_ entityTag: String, now: NIODeadline) -> [Action] {
        compositorActions(compositor.expire(entityTag: entityTag, now: now), id: nil, now: now)
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

    /// RFC 3903 §6 leaves composition to the package: here the newest publication gives the
    /// person-level data and every publication's tuples are kept (ids made unique), which is
    /// RFC 4479's view of several devices/services of one person; the state of several sources
    /// is then aggregated (``sourcesState(_:)``).
    static func compose(_ sources: [PIDFDocument], entity: String) -> PIDFDocument? {
        var documents = sources
        guard var composed = documents.popLast() else { return nil }
        composed.entity = entity
        var ids = Set(composed.tuples.map(\.id))
        for document in documents.reversed() {
            for var tuple in document.tuples {
                while ids.contains(tuple.id) { tuple.id += "-" + String(ids.count) }
                ids.insert(tuple.id)
                composed.tuples.append(tuple)
            }
        }
        return composed
    }

    /// The state of several sources, aggregated as [MS-PRES] §3.8.5.1.2 aggregates a user's
    /// endpoints: each publication is one endpoint, whose basic status and user input give its
    /// machineState and whose activities, where they change that, a userState (a calendarState
    /// when they name a meeting). So one source in a meeting makes the user busy, and one active
    /// source makes the user active (docs/flows.md, "State aggregation"). nil for one source,
    /// whose state is its own.
    func sourcesState(_ documents: [PIDFDocument]) -> MSState? {
        guard documents.count > 1 else { return nil }
        var instances: [StateAggregation.Instance] = []
        // Oldest first: the index orders them as publish times would.
        for (order, document) in documents.enumerated() {
            var bare = document
            for i in bare.persons.indices { bare.persons[i].rpid.activities = [] }
            for i in bare.tuples.indices {
                bare.tuples[i].status.rpid.activities = []
                bare.tuples[i].status.rpid.legacyActivities = []
            }
            var machine = mapper.state(from: bare)
            var user = mapper.state(from: document)
            machine.type = .machineState
            instances.append(.init(state: machine, published: Int64(order), expireType: .endpoint))
            guard user.availability != machine.availability || !user.activities.isEmpty else { continue }
            user.type = user.meetingSubject != nil || user.meetingLocation != nil ? .calendarState : .userState
            instances.append(.init(state: user, published: Int64(order), expireType: .user))
        }
        return StateAggregation.aggregateState(of: instances)
    }

    mutating func composedStateChanged(
        _ resource: String, publications: [EventStateCompositor.Publication],
        now: NIODeadline
    ) -> [Action] {
        var out: [Action] = []
        // The sources in the compositor's order, oldest first.
        let sources = publications.compactMap { try? PIDFDocument(bytes: $0.body) }
        if let pidf = Self.compose(sources, entity: resource) {
            var categories = mapper.categoriesDocument(from: pidf)
            categories.uri = resource
            if let state = sourcesState(sources) {
                for i in categories.categories.indices where categories.categories[i].name == .state {
                    categories.categories[i].payload = .state(state)
                }
            }
            served[resource] = categories
        } else {
            served[resource] = nil
        }
        // Enterprise watchers of this OMA identity (flow 1), notified when their view changed.
        for key in enterpriseWatches.keys.sorted() {
            guard var watch = enterpriseWatches[key], var subscription = watch.subscription,
                let wanted = subscription.resources[resource]
            else { continue }
            let body = view(of: resource, leg: nil, watcher: watch.watcher, categories: wanted).serialized()
            let digest = BodyDigest(body)
            guard watch.lastSent[resource] != digest else { continue }
            watch.lastSent[resource] = digest
            let updates = subscription.resourceChanged(resource, serialized: body, now: now)
            watch.subscription = subscription
            enterpriseWatches[key] = watch
            out += apply(updates, context: .enterpriseWatch(key), now: now)
        }
        out += servedDocumentChanged(resource, now: now)
        // And into the enterprise, for the linked enterprise identity.
        if let identity = configuration.linkedIdentities.first(where: { $0.publishToEnterprise && $0.oma == resource })
        {
            out += servicePublish(identity, state: served[resource])
        }
        return out
    }

    /// The SERVICE category publish of a linked identity's state ([MS-PRES] §2.2.2.2.1): its
    /// `state` as a `userState` into containers 2 and 3 and its note into 200/300/400, or their
    /// deletion when nothing is published any more.
    private mutating func servicePublish(_ identity: GatewayConfiguration.LinkedIdentity, state: CategoriesDocument?)
        -> [Action]
    {
        guard let enterpriseURI = try? SIPURI(identity.enterprise) else { return [] }
        var publisher =
            servicePublishers[identity.enterprise]
            ?? CategoryPublisher(
                CategoryPublisher.Configuration(
                    publisher: SIPAddress(uri: enterpriseURI), contact: contacts[.enterprise]),
                callID: ids.callID(), localTag: ids.tag())
        var items: [CategoryPublisher.Item] = []
        var userState: MSState?
        var note: MSNote?
        for category in state?.categories ?? [] {
            switch category.payload {
            case .state(let s) where userState == nil:
                var published = s
                published.type = .userState
                userState = published
            case .note(let n) where note == nil:
                note = n
            default:
                break
            }
        }
        for container in Self.stateContainers {
            let key = CategoryPublisher.ItemKey(container: container, categoryName: .state, instance: 0)
            items.append(userState.map { .publish(key, .state($0)) } ?? .delete(key))
        }
        for container in Self.noteContainers {
            let key = CategoryPublisher.ItemKey(container: container, categoryName: .note, instance: 0)
            items.append(note.map { .publish(key, .note($0)) } ?? .delete(key))
        }
        // Deleting what was never published is pointless: drop deletes of unknown versions.
        items.removeAll { $0.isDelete && publisher.versions[$0.key] == nil }
        let actions = publisher.publish(items)
        servicePublishers[identity.enterprise] = publisher
        journal.publisher(identity.enterprise)
        return serviceActions(actions, publisher: identity.enterprise)
    }

    mutating func servicePublishResponse(_ publisherURI: String, _ response: SIPResponse) -> [Action] {
        guard var publisher = servicePublishers[publisherURI] else { return [] }
        let actions = publisher.receive(response)
        servicePublishers[publisherURI] = publisher
        journal.publisher(publisherURI)
        return serviceActions(actions, publisher: publisherURI)
    }

    private func serviceActions(_ actions: [CategoryPublisher.Action], publisher: String) -> [Action] {
        actions.compactMap { action in
            if case .send(let request) = action {
                return .send(request, to: .enterprise, context: .servicePublish(publisher))
            }
            return nil
        }
    }
}
