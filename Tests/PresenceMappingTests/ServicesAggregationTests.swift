import Foundation
import PresenceDocuments
import PresenceMapping
import Testing

/// [MS-PRES] §3.8.5.2, the services a server computes from devices and machine states: the
/// specification's own §4.3.2.1 example, then each rule of the winning capability alone.
@Suite struct ServicesAggregationTests {
    typealias Device = ServicesAggregation.Device

    static func capability(_ name: String, _ attributes: [String: String]) -> MSCapability {
        MSCapability(name: name, attributes: attributes)
    }

    static func device(_ endpoint: String, uri: String = "sip:bob@example.com", _ items: [MSCapability]) -> Device {
        Device(device: MSDevice(endpointID: endpoint, capabilities: [.init(uri: uri, items: items)]), endpointID: endpoint)
    }

    static func machine(_ endpoint: String, _ availability: UInt32, at time: String = "2026-11-25T10:00:00.000")
        -> StateAggregation.Instance
    {
        StateAggregation.Instance(
            state: MSState(type: .machineState, availability: availability), published: XSDTime.milliseconds(from: time),
            expireType: .endpoint, endpointID: endpoint)
    }

    /// The winning capability of `name` for subscribers (nil when subscribers get none).
    static func forSubscribers(_ devices: [Device], _ machines: [StateAggregation.Instance], _ name: String = "text")
        -> MSCapability?
    {
        let services = ServicesAggregation.services(of: devices, machineStates: machines).forSubscribers
        return services.services.first?.capabilities.first { $0.name == name }
    }

    @Test func theSpecificationsExampleGivesItsSelfAndSubscriberInstances() throws {
        let url = GoldenVectorTests.vectors.appendingPathComponent("aggregation/input/4.3.2.1-devices.xml")
        let document = try CategoriesDocument(bytes: Array(try Data(contentsOf: url)))
        let (forSelf, forSubscribers) = ServicesAggregation.services(
            of: document.categories.compactMap(Device.init),
            machineStates: document.categories.compactMap(StateAggregation.Instance.init))
        // [MS-PRES] §4.3.2.1, "services instance for self": both machine states are 3500 and the
        // second endpoint's is the newer, so it wins the capabilities both endpoints publish.
        let second = "2cd4f7ca-b1d1-5eda-8d79-79ee4298414d"
        let first = "a8f9a3a8-ee61-56d7-b306-c67b08fb28d8"
        func mine(_ name: String, _ render: String, _ capture: String, _ publish: String, _ endpoint: String) -> MSCapability {
            Self.capability(name, [
                "render": render, "capture": capture, "publish": publish, "preferredEndpointId": endpoint,
                "deviceAvailability": "3500",
            ])
        }
        var calendar = mine("calendar", "false", "false", "true", second)
        calendar.setAttribute("version", "655616")
        #expect(forSelf == MSServices(services: [
            .init(uri: "sip:bob@contoso.com", capabilities: [
                mine("text", "true", "true", "false", second), mine("gifInk", "true", "false", "false", second),
                mine("isfInk", "true", "false", "false", second),
            ]),
            .init(uri: "tel:+11234567890;ext=67890", capabilities: [
                mine("remoteCallControl", "false", "false", "true", first),
            ]),
            .init(uri: "bob@exchange.contoso.com", capabilities: [calendar]),
        ]))
        // "services instance for subscribers": the capabilities that are not publish-only, with
        // render, capture and deviceAvailability only; no service for the other two URIs.
        func theirs(_ name: String, _ render: String, _ capture: String) -> MSCapability {
            Self.capability(name, ["render": render, "capture": capture, "deviceAvailability": "3500"])
        }
        #expect(forSubscribers == MSServices(services: [
            .init(uri: "sip:bob@contoso.com", capabilities: [
                theirs("text", "true", "true"), theirs("gifInk", "true", "false"), theirs("isfInk", "true", "false"),
            ])
        ]))
    }

    @Test func aMoreActiveMachineWinsAnUnpublishedCapability() {
        let devices = [
            Self.device("A", [Self.capability("text", ["render": "true", "capture": "true"])]),
            Self.device("B", [Self.capability("text", ["render": "true", "capture": "false"])]),
        ]
        // B's machine is more active (lower availability): its capability wins.
        let b = Self.forSubscribers(devices, [Self.machine("A", 15500), Self.machine("B", 3500)])
        #expect(b?[attribute: "capture"] == "false")
        #expect(b?[attribute: "deviceAvailability"] == "3500")
        // A's is: the first one stays.
        let a = Self.forSubscribers(devices, [Self.machine("A", 3500), Self.machine("B", 15500)])
        #expect(a?[attribute: "capture"] == "true")
        #expect(a?[attribute: "deviceAvailability"] == "3500")
        // Equal availability: the one published later.
        let later = Self.forSubscribers(
            devices, [Self.machine("A", 3500, at: "2026-11-25T10:00:01.000"), Self.machine("B", 3500)])
        #expect(later?[attribute: "capture"] == "true")
    }

    @Test func aSilentWinnerIsReplacedByAnyUnpublishedCapability() {
        // The first has render and capture false: the second replaces it though its machine is less active.
        let devices = [
            Self.device("A", [Self.capability("voice", ["render": "false", "capture": "false"])]),
            Self.device("B", [Self.capability("voice", ["render": "true", "capture": "true"])]),
        ]
        let voice = Self.forSubscribers(devices, [Self.machine("A", 3500), Self.machine("B", 15500)], "voice")
        #expect(voice?[attribute: "render"] == "true")
        #expect(voice?[attribute: "deviceAvailability"] == "15500")
    }

    @Test func aPublishedCapabilityWinsOnlyWithAHigherVersionAndStaysFromSubscribers() {
        let devices = [
            Self.device("A", [Self.capability("calendar", ["render": "false", "publish": "true", "version": "7"])]),
            Self.device("B", [Self.capability("calendar", ["render": "false", "publish": "true", "version": "12"])]),
            Self.device("C", [Self.capability("calendar", ["render": "false", "publish": "true", "version": "9"])]),
        ]
        let machines = [Self.machine("A", 3500), Self.machine("B", 15500), Self.machine("C", 3000)]
        let (forSelf, forSubscribers) = ServicesAggregation.services(of: devices, machineStates: machines)
        let calendar = forSelf.services.first?.capabilities.first
        #expect(calendar?[attribute: "version"] == "12")
        #expect(calendar?[attribute: "preferredEndpointId"] == "b")
        #expect(calendar?[attribute: "deviceAvailability"] == "15500")
        // Publish-only: nothing for subscribers, not even an empty service.
        #expect(forSubscribers.services.isEmpty)
    }

    @Test func anEndpointWithoutAMachineStateCountsAsOffline() {
        let devices = [
            Self.device("A", [Self.capability("text", ["render": "true", "capture": "false"])]),
            Self.device("B", [Self.capability("text", ["render": "true", "capture": "true"])]),
        ]
        // A has no machine state: B's (18000, just below offline) is more active.
        let text = Self.forSubscribers(devices, [Self.machine("B", 18000)])
        #expect(text?[attribute: "capture"] == "true")
        // Neither has one: the first stays, with no deviceAvailability.
        let first = Self.forSubscribers(devices, [])
        #expect(first?[attribute: "capture"] == "false")
        #expect(first?[attribute: "deviceAvailability"] == nil)
    }

    @Test func aCapabilityWithNeitherRenderNorCaptureIsForSelfOnly() {
        let devices = [Self.device("A", [Self.capability("ucs", ["publish": "false"])])]
        let (forSelf, forSubscribers) = ServicesAggregation.services(of: devices, machineStates: [Self.machine("A", 3500)])
        #expect(forSelf.services.first?.capabilities.map(\.name) == ["ucs"])
        #expect(forSubscribers.services.isEmpty)
    }

    @Test func aDocumentWithServicesIsNotAggregatedAgain() throws {
        let mapper = try #require(GoldenVectorTests.mapper)
        // The server's services say video only; the device says text: the services are converted.
        let document = CategoriesDocument(uri: "sip:bob@example.com", categories: [
            Category(
                name: .services, instance: 0, container: 2,
                payload: .services(MSServices(services: [
                    .init(uri: "sip:bob@example.com", capabilities: [Self.capability("video", ["render": "true"])])
                ]))),
            Category(
                name: .device, instance: 1, container: 2, endpointID: "A",
                payload: .device(Self.device("A", [Self.capability("text", ["render": "true"])]).device)),
        ])
        let (pidf, report) = mapper.pidf(from: document)
        #expect(pidf.tuples.first?.status.capabilities?.flags.map(\.name) == ["video"])
        #expect(report.dropped.contains { $0.field == "device" && $0.detail.contains("3.8.5.2") })
        // Without the services category, the device's text is message.
        let devicesOnly = CategoriesDocument(uri: document.uri, categories: [document.categories[1]])
        #expect(mapper.pidfDocument(from: devicesOnly).tuples.first?.status.capabilities?.flags.map(\.name) == ["message"])
    }
}
