import MSPresenceEvents
import PresenceDocuments
import PresenceMapping
import SIPMessages
import SIPStack

/// What the gateway composes and publishes for a served identity (flow 4, OMA → enterprise):
/// the composition of several sources (RFC 3903 §6, RFC 4479), and the SERVICE publication's
/// instances, containers and endpoint (docs/flows.md, "What the gateway publishes for a linked
/// identity").
extension LinkedIdentityPublisher {
    /// Containers the gateway publishes a linked identity's state into: the aggregation input
    /// containers 2 and 3 that clients publish their state instances to ([MS-PRES] §3.8.5.1.1,
    /// §4.3.1; docs/flows.md, "Container catalogue"), from which the server computes what
    /// watchers see.
    static let stateContainers: [UInt32] = [2, 3]

    /// The instance of the `machineState` the gateway publishes for the linked OMA identity
    /// `oma` (docs/flows.md, "What the gateway publishes for a linked identity"): in the range of
    /// the machineState instances of the §4.3.1 examples (0x3xxxxxxx), its low 28 bits from the
    /// OMA URI (FNV-1a), so the same on every node and after a restart, and never the computed
    /// aggregateState's 0 or 1 (§3.8.5.1.2.7) nor a client's userState (0x20000000).
    static func machineStateInstance(for oma: String) -> UInt32 {
        0x3000_0000 | UInt32(truncatingIfNeeded: fnv1a(oma)) & 0x0FFF_FFFF
    }

    /// The endpoint id of that machineState (§2.2.2.1: the UUID of the publishing endpoint's
    /// `+sip.instance`; the gateway's SERVICE Contact carries it): a UUID made from the OMA URI,
    /// version 8 (RFC 9562 §5.8).
    static func endpointID(for oma: String) -> String {
        var bytes: [UInt8] = []
        for seed in ["gateway-endpoint:" + oma, oma + ":gateway-endpoint"] {
            let hash = fnv1a(seed)
            bytes += (0..<8).map { UInt8(truncatingIfNeeded: hash >> (56 - 8 * $0)) }
        }
        bytes[6] = bytes[6] & 0x0F | 0x80  // version 8
        bytes[8] = bytes[8] & 0x3F | 0x80  // variant 10
        let digits = Array("0123456789abcdef")
        var text = ""
        for (i, byte) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { text.append("-") }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return text
    }

    private static func fnv1a(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
    }
    /// Containers for the note, as in the §4.2.1 example (a personal note to 200, 300 and 400).
    static let noteContainers: [UInt32] = [200, 300, 400]

    /// The composed state of `resource` from its publications (oldest first), as categories.
    static func composedState(
        _ resource: String, publications: [EventStateCompositor.Publication], mapper: PresenceMapper
    ) -> CategoriesDocument? {
        let sources = publications.compactMap { try? PIDFDocument(bytes: $0.body) }
        guard let pidf = compose(sources, entity: resource) else { return nil }
        var categories = mapper.categoriesDocument(from: pidf)
        categories.uri = resource
        if let state = sourcesState(sources, mapper: mapper) {
            for i in categories.categories.indices where categories.categories[i].name == .state {
                categories.categories[i].payload = .state(state)
            }
        }
        return categories
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
    static func sourcesState(_ documents: [PIDFDocument], mapper: PresenceMapper) -> MSState? {
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

    /// `contact` with the `+sip.instance` whose UUID is `endpointID` (RFC 5626 §4.1; [MS-PRES]
    /// §3.2.5.5 ties an endpoint's instances to it).
    static func withInstance(_ contact: SIPAddress, _ endpointID: String) -> SIPAddress {
        var contact = contact
        contact.parameters.set("+sip.instance", "<urn:uuid:\(endpointID)>", quoted: true)
        return contact
    }

    /// The items of the SERVICE category publish of a linked identity's state ([MS-PRES]
    /// §2.2.2.2.1): its `state` as a `machineState` of an endpoint of the user's own into
    /// containers 2 and 3 (deleted while the OMA side is closed: a device that is off is no
    /// endpoint) and its note into 200/300/400, or their deletion when nothing is published any
    /// more. A machineState joins the user's other endpoints in aggregateMachineState, which takes
    /// the most active one (§3.8.5.1.2.1), so an idle or closed OMA device never outweighs the
    /// user's active client; a `userState` would have joined the highest-wins set of
    /// §3.8.5.1.2.2. docs/flows.md, "What the gateway publishes for a linked identity".
    static func serviceItems(for oma: String, state: CategoriesDocument?) -> [CategoryPublisher.Item] {
        let endpointID = endpointID(for: oma)
        var machineState: MSState?
        var note: MSNote?
        for category in state?.categories ?? [] {
            switch category.payload {
            case .state(let s) where machineState == nil:
                // Offline (18000 and up, the OMA side closed): nothing to publish.
                guard (s.availability ?? 18500) < 18000 else { continue }
                var published = s
                published.type = .machineState
                published.manual = false
                machineState = published
            case .note(let n) where note == nil:
                note = n
            default:
                break
            }
        }
        var items: [CategoryPublisher.Item] = []
        let instance = machineStateInstance(for: oma)
        for container in stateContainers {
            let key = CategoryPublisher.ItemKey(container: container, categoryName: .state, instance: instance)
            items.append(
                machineState.map { .publish(key, .state($0), expireType: .endpoint, endpointID: endpointID) }
                    ?? .delete(key, expireType: .endpoint))
            // What an earlier version published as a static userState at instance 0, the key of
            // the server's own computed aggregateState (§3.8.5.1.2.7): withdrawn when known.
            items.append(.delete(CategoryPublisher.ItemKey(container: container, categoryName: .state, instance: 0)))
        }
        for container in noteContainers {
            let key = CategoryPublisher.ItemKey(container: container, categoryName: .note, instance: 0)
            items.append(note.map { .publish(key, .note($0)) } ?? .delete(key))
        }
        return items
    }
}
