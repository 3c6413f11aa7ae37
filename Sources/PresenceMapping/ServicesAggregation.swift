public import PresenceDocuments

/// The `services` instances an enhanced presence server computes from the `device` and
/// `machineState` instances of container 2 ([MS-PRES] §3.8.5.2): one service element per URI
/// the devices name, and per capability type of that URI the capability of one endpoint, the
/// winning capability, with the availability of its endpoint's machine state.
///
/// The mapper uses it for a document that carries the devices rather than the server's
/// `services` (a self view, a publication, a file given to `presence-map`): docs/flows.md,
/// "Services aggregation".
public enum ServicesAggregation {
    /// One `device` instance: its data and the endpoint it describes.
    public struct Device: Sendable {
        public var device: MSDevice
        /// The device's `endpointId`, else its category's.
        public var endpointID: String?

        public init(device: MSDevice, endpointID: String?) {
            self.device = device
            self.endpointID = endpointID
        }

        /// The category's device, nil when it holds none.
        public init?(_ category: Category) {
            guard case .device(let device) = category.payload else { return nil }
            self.init(device: device, endpointID: device.endpointID ?? category.endpointID)
        }
    }

    /// The devices of container 2 in `doc` (else of the first device's container) aggregated
    /// with that container's machine states, as ``services(of:machineStates:)``; nil when `doc`
    /// has no device.
    public static func services(in doc: CategoriesDocument)
        -> (container: UInt32?, forSelf: MSServices, forSubscribers: MSServices)?
    {
        let devices = doc.categories.filter { Device($0) != nil }
        guard let first = devices.first else { return nil }
        let container = devices.contains { $0.container == 2 } ? 2 : first.container
        let inputs = doc.categories.filter { $0.container == container }
        let (forSelf, forSubscribers) = services(
            of: inputs.compactMap(Device.init), machineStates: inputs.compactMap(StateAggregation.Instance.init))
        return (container, forSelf, forSubscribers)
    }

    /// The two instances of §3.8.5.2.2: for self (container 2: every winning capability, with
    /// `preferredEndpointId` and `deviceAvailability`) and for subscribers (containers 100 to
    /// 400: the winning capabilities that are not publish-only and carry render or capture, with
    /// `deviceAvailability`; services without such a capability are left out, as the
    /// specification's §4.3.2.1 output leaves them out).
    public static func services(of devices: [Device], machineStates: [StateAggregation.Instance])
        -> (forSelf: MSServices, forSubscribers: MSServices)
    {
        var forSelf: [MSServices.Service] = []
        var forSubscribers: [MSServices.Service] = []
        for uri in uriSet(devices) {
            var selfCapabilities: [MSCapability] = []
            var subscriberCapabilities: [MSCapability] = []
            for candidates in capabilityTypes(of: uri, in: devices, machineStates: machineStates) {
                let winner = winning(candidates)
                var capability = winner.capability
                if let availability = winner.machine?.state.availability {
                    capability.setAttribute("deviceAvailability", String(availability))
                }
                if !isTrue(capability, "publish"), capability.render != nil || capability.capture != nil {
                    var forSubscriber = capability
                    forSubscriber.removeAttribute("publish")
                    subscriberCapabilities.append(forSubscriber)
                }
                // The endpoint ids are GUIDs; §4.3.2.1 writes them in lower case.
                if let endpoint = winner.machine?.endpointID {
                    capability.setAttribute("preferredEndpointId", endpoint.lowercased())
                }
                selfCapabilities.append(capability)
            }
            forSelf.append(MSServices.Service(uri: uri, capabilities: selfCapabilities))
            if !subscriberCapabilities.isEmpty {
                forSubscribers.append(MSServices.Service(uri: uri, capabilities: subscriberCapabilities))
            }
        }
        return (MSServices(services: forSelf), MSServices(services: forSubscribers))
    }

    /// One endpoint's capability of a type, with that endpoint's machine state.
    struct Candidate {
        var capability: MSCapability
        var machine: StateAggregation.Instance?
    }

    /// The URIs of every device's capabilities, each once, in the order first named.
    static func uriSet(_ devices: [Device]) -> [String] {
        var uris: [String] = []
        for device in devices {
            for capabilities in device.device.capabilities {
                if let uri = capabilities.uri, !uris.contains(uri) { uris.append(uri) }
            }
        }
        return uris
    }

    /// The capabilities every device gives `uri`, grouped by type (element name) in the order
    /// each type is first seen, each with its endpoint's machine state.
    static func capabilityTypes(
        of uri: String, in devices: [Device], machineStates: [StateAggregation.Instance]
    ) -> [[Candidate]] {
        var types: [String] = []
        var groups: [[Candidate]] = []
        for device in devices {
            let machine = machineState(of: device.endpointID, in: machineStates)
            for capabilities in device.device.capabilities where capabilities.uri == uri {
                for capability in capabilities.items {
                    let candidate = Candidate(capability: capability, machine: machine)
                    if let index = types.firstIndex(of: capability.name) {
                        groups[index].append(candidate)
                    } else {
                        types.append(capability.name)
                        groups.append([candidate])
                    }
                }
            }
        }
        return groups
    }

    /// The endpoint's machine state: the most active when it published several.
    static func machineState(of endpoint: String?, in instances: [StateAggregation.Instance])
        -> StateAggregation.Instance?
    {
        guard let endpoint else { return nil }
        var found: StateAggregation.Instance?
        for instance in instances where instance.state.type == .machineState {
            guard instance.endpointID?.lowercased() == endpoint.lowercased() else { continue }
            if found.map({ isMoreActive(instance, than: $0) }) ?? true { found = instance }
        }
        return found
    }

    /// §3.8.5.2.2 step 3.1: the first candidate, replaced by a later one that is published
    /// (`publish="true"`) with a higher version, or one that is not published and follows a
    /// winner with render and capture false or runs on a more active machine.
    static func winning(_ candidates: [Candidate]) -> Candidate {
        var winner = candidates[0]
        for current in candidates.dropFirst() {
            let replaces: Bool
            if isTrue(current.capability, "publish") {
                replaces = version(current.capability) > version(winner.capability)
            } else {
                let silent = isFalse(winner.capability, "render") && isFalse(winner.capability, "capture")
                replaces = silent || isMoreActive(current.machine, than: winner.machine)
            }
            if replaces { winner = current }
        }
        return winner
    }

    /// More active: a lower availability, or the same and published later. No machine state
    /// counts as offline and never published.
    static func isMoreActive(_ a: StateAggregation.Instance?, than b: StateAggregation.Instance?) -> Bool {
        let (x, y) = (
            a?.state.availability ?? StateAggregation.offline, b?.state.availability ?? StateAggregation.offline
        )
        if x != y { return x < y }
        return (a?.published ?? Int64.min) > (b?.published ?? Int64.min)
    }

    private static func isTrue(_ capability: MSCapability, _ attribute: String) -> Bool {
        capability[attribute: attribute].flatMap(Bool.init(xsd:)) == true
    }

    private static func isFalse(_ capability: MSCapability, _ attribute: String) -> Bool {
        capability[attribute: attribute].flatMap(Bool.init(xsd:)) == false
    }

    private static func version(_ capability: MSCapability) -> UInt64 {
        capability[attribute: "version"].flatMap { UInt64($0.trimmingXMLWhitespace()) } ?? 0
    }
}
