public import PresenceDocuments

/// The user's overall state computed from the `state` instances of one container, as an enhanced
/// presence server computes its `aggregateState` ([MS-PRES] §3.8.5.1.2): the most active machine,
/// the highest availability of the rest (a manual state hiding older ones), Busy on an idle
/// machine shown as BusyIdle, the activity valid at that availability, the meeting of the one
/// calendar state, and where the machine is when the user is not offline.
///
/// The mapper uses it for a document that carries the inputs rather than the server's result (a
/// self view, a publication, a file given to `presence-map`): docs/flows.md, "State aggregation".
public enum StateAggregation {
    /// One `state` instance with what the computation reads of its category.
    public struct Instance: Sendable {
        public var state: MSState
        /// When it was published, what orders instances: the category's publishTime in
        /// milliseconds since 1970.
        public var published: Int64?
        public var expireType: ExpireType?
        public var endpointID: String?

        public init(state: MSState, published: Int64? = nil, expireType: ExpireType? = nil, endpointID: String? = nil) {
            self.state = state
            self.published = published
            self.expireType = expireType
            self.endpointID = endpointID
        }

        /// The category's state, nil when it holds none or is not a `state` category (a
        /// `dndState` holds a state document too, §2.2.2.7.10, computed from these, §3.8.5.4).
        public init?(_ category: Category) {
            guard category.name == .state, case .state(let state) = category.payload else { return nil }
            self.init(
                state: state, published: category.publishTime.flatMap(XSDTime.milliseconds(from:)),
                expireType: category.expireType, endpointID: category.endpointID)
        }

        /// Its age as §3.8.5.1.2.2 and §3.8.5.1.2.3 read it: `startTime` when present, else the
        /// publication time.
        var started: Int64? { state.startTime.flatMap(XSDTime.milliseconds(from:)) ?? published }
    }

    /// The `state` instances of `doc`, each with its category's container, in document order.
    public static func instances(in doc: CategoriesDocument) -> [(container: UInt32?, instance: Instance)] {
        doc.categories.compactMap { category in Instance(category).map { (category.container, $0) } }
    }

    /// Offline ([MS-PRES] §3.8.5.1.2.1: the machine state of a user with no endpoint).
    public static let offline: UInt32 = 18500

    /// The `aggregateState` of `instances` (the state instances of one container).
    ///
    /// One departure, for documents rather than a server's container: when `instances` hold no
    /// `machineState` at all, the document does not carry the endpoints' states, and the
    /// machine's term (offline, §3.8.5.1.2.1) is left out rather than making every such
    /// publication offline. Instances of machineState that are not per endpoint still count as
    /// none, as §3.8.5.1.2.1 says.
    public static func aggregateState(of instances: [Instance]) -> MSState {
        let hasMachines = instances.contains { $0.state.type == .machineState }
        let machine = hasMachines ? aggregateMachineState(of: instances) : nil
        let inputs = Self.inputs(instances, machine: machine)
        let availability = Self.availability(of: inputs, machine: machine?.state)
        var state = MSState(type: .aggregateState, availability: availability)
        if let availability, let activity = activity(of: inputs, at: availability) { state.activities = [activity] }
        let meeting = meeting(of: instances)
        state.meetingSubject = meeting?.subject
        state.meetingLocation = meeting?.location
        // §3.8.5.1.2.6: where the machine is, unless the user is offline.
        if let machine = machine?.state, (availability ?? offline) < 12000 {
            state.endpointLocation = machine.endpointLocation
            state.timeZoneBias = machine.timeZoneBias
            state.timeZoneName = machine.timeZoneName
            state.timeZoneAbbreviation = machine.timeZoneAbbreviation
            state.device = machine.device
        }
        return state
    }

    /// The `dndState` a server computes for call routing from the `userState` and
    /// `presentingState` instances of one container ([MS-PRES] §3.8.5.4, §2.2.2.7.10): a manual
    /// userState of 9500 when any of them is in the Do Not Disturb range (9000 to 11999), else
    /// one without availability.
    public static func dndState(of instances: [Instance]) -> MSState {
        let doNotDisturb = instances.contains {
            ($0.state.type == .userState || $0.state.type == .presentingState)
                && (9000...11999).contains($0.state.availability ?? 0)
        }
        return MSState(type: .userState, manual: true, availability: doNotDisturb ? 9500 : nil)
    }

    /// §3.8.5.1.2.1: the most active `machineState` per endpoint (the lowest availability; the
    /// most recently published of equals) as an `aggregateMachineState`, offline when there is
    /// none.
    public static func aggregateMachineState(of instances: [Instance]) -> Instance {
        let machines = instances.filter {
            $0.state.type == .machineState && $0.expireType == .endpoint && $0.state.availability != nil
        }
        let most = machines.min { a, b in
            let (x, y) = (a.state.availability ?? offline, b.state.availability ?? offline)
            return x != y ? x < y : (a.published ?? .min) > (b.published ?? .min)
        }
        guard let most else {
            return Instance(state: MSState(type: .aggregateMachineState, availability: offline))
        }
        var state = most.state
        state.type = .aggregateMachineState
        state.manual = nil
        state.endpointID = state.endpointID ?? most.endpointID
        return Instance(state: state, published: most.published, expireType: .user, endpointID: most.endpointID)
    }

    /// §3.8.5.1.2.2, first half: every state but the machine's and the computed ones, with the
    /// aggregated machine state added; when one is manual, those older than the newest manual
    /// one are removed (the machine's is not).
    static func inputs(_ instances: [Instance], machine: Instance?) -> [Instance] {
        let computed: Set<StateType> = [.machineState, .aggregateState, .aggregateMachineState]
        var set = instances.filter { !computed.contains($0.state.type) }
        let manualSince = set.filter { $0.state.manual == true }.compactMap(\.started).max()
        if let manualSince {
            set.removeAll { ($0.started ?? manualSince) < manualSince }
        }
        if let machine { set.append(machine) }
        return set
    }

    /// §3.8.5.1.2.2, second half: the highest availability; Busy (6000–7499) on an idle machine
    /// (4500–5999) becomes BusyIdle (+1500).
    static func availability(of inputs: [Instance], machine: MSState?) -> UInt32? {
        guard let highest = inputs.compactMap(\.state.availability).max() else { return nil }
        if let idle = machine?.availability, (4500...5999).contains(idle), (6000...7499).contains(highest) {
            return highest + 1500
        }
        return highest
    }

    /// §3.8.5.1.2.3: of the activities with a token or a custom text whose window holds the
    /// availability, the one with the highest `minAvailability`; of equals, that of the most
    /// recent state (its start time first). Its token and text, without the window.
    static func activity(of inputs: [Instance], at availability: UInt32) -> MSActivity? {
        var best: (activity: MSActivity, since: Int64)?
        for input in inputs {
            for activity in input.state.activities
            where activity.token != nil || activity.custom.contains(where: { !$0.text.isEmpty }) {
                guard (activity.minAvailability ?? 0) <= availability,
                    availability <= (activity.maxAvailability ?? .max)
                else { continue }
                let since = input.started ?? .min
                if let current = best {
                    let (a, b) = (activity.minAvailability ?? 0, current.activity.minAvailability ?? 0)
                    guard a > b || (a == b && since > current.since) else { continue }
                }
                best = (activity, since)
            }
        }
        return best.map { MSActivity(token: $0.activity.token, custom: $0.activity.custom) }
    }

    /// §3.8.5.1.2.5: the meeting of the one `calendarState` that names one; empty when several do.
    static func meeting(of instances: [Instance]) -> (subject: String?, location: String?)? {
        let calendars = instances.filter {
            $0.state.type == .calendarState && ($0.state.meetingSubject != nil || $0.state.meetingLocation != nil)
        }
        guard let calendar = calendars.first else { return nil }
        guard calendars.count == 1 else { return ("", "") }
        return (calendar.state.meetingSubject, calendar.state.meetingLocation)
    }
}
