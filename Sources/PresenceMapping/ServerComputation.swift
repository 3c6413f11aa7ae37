public import PresenceDocuments

/// What an enhanced presence server computes from a publisher's instances ([MS-PRES] §3.8.5),
/// as categories: for `presence-map aggregate`, to see what a server makes of a publication or a
/// self view.
///
/// Each result is given once, in the container whose instances it is computed from (the server
/// also copies them into the containers its tables list: §3.8.5.1.2.7, §3.8.5.2, §3.8.5.4):
/// - per container with `state` instances: the aggregateMachineState (container 2, instance
///   268435456, §3.8.5.1.2.1, when there are machine states), the aggregateState (§3.8.5.1.2;
///   instance 1 expiring with the user when the container has machine states, else instance 0,
///   static, as the table of §3.8.5.1.2.7 gives) and the dndState (instance 0, §3.8.5.4);
/// - with `device` instances: the services for self in their container and for subscribers in
///   container 100 (instance 0, §3.8.5.2);
/// - with a `WorkingHours` element in calendarData instance 0 of container 1: the workingHours
///   category, instance 0 of container 1 (§3.8.5.3).
public enum ServerComputation {
    /// The categories computed from `doc`'s instances, in the order listed above.
    public static func categories(of doc: CategoriesDocument) -> CategoriesDocument {
        var computed: [Category] = []
        let states = StateAggregation.instances(in: doc)
        var containers: [UInt32?] = []
        for state in states where !containers.contains(state.container) { containers.append(state.container) }
        for container in containers {
            let instances = states.filter { $0.container == container }.map(\.instance)
            let hasMachines = instances.contains { $0.state.type == .machineState }
            if container == 2, hasMachines {
                // As §4.3.1.1 shows it: the availability and the endpoint, in lower case.
                let machine = StateAggregation.aggregateMachineState(of: instances).state
                let written = MSState(
                    type: .aggregateMachineState, endpointID: machine.endpointID?.lowercased(),
                    availability: machine.availability)
                computed.append(
                    Category(
                        name: .state, instance: 268_435_456, container: container, expireType: .user,
                        payload: .state(written)))
            }
            computed.append(
                Category(
                    name: .state, instance: hasMachines ? 1 : 0, container: container,
                    expireType: hasMachines ? .user : .static,
                    payload: .state(StateAggregation.aggregateState(of: instances))))
            computed.append(
                Category(
                    name: .dndState, instance: 0, container: container, expireType: .static,
                    payload: .state(StateAggregation.dndState(of: instances))))
        }
        computed += services(of: doc)
        if let workingHours = workingHours(of: doc) { computed.append(workingHours) }
        return CategoriesDocument(uri: doc.uri, categories: computed)
    }

    /// §3.8.5.2: the services for self in the devices' container and for subscribers in
    /// container 100; none without devices.
    static func services(of doc: CategoriesDocument) -> [Category] {
        guard let (container, forSelf, forSubscribers) = ServicesAggregation.services(in: doc) else { return [] }
        return [
            Category(
                name: .services, instance: 0, container: container, expireType: .user, payload: .services(forSelf)),
            Category(
                name: .services, instance: 0, container: 100, expireType: .user, payload: .services(forSubscribers)),
        ]
    }

    /// §3.8.5.3: the `WorkingHours` of calendarData instance 0 in container 1, with its mailbox,
    /// as instance 0 of workingHours there; nil when there is none.
    static func workingHours(of doc: CategoriesDocument) -> Category? {
        for category in doc.categories where category.name == .calendarData {
            guard category.container == 1, category.instance == 0, case .calendarData(let calendar) = category.payload,
                let hours = calendar.workingHours
            else { continue }
            return Category(
                name: .workingHours, instance: 0, container: 1, expireType: .static,
                payload: .calendarData(CalendarData(mailboxID: calendar.mailboxID, workingHours: hours)))
        }
        return nil
    }
}
