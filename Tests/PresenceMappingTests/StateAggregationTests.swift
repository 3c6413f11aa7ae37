import Foundation
import PresenceDocuments
import PresenceMapping
import Testing

/// [MS-PRES] §3.8.5.1.2 rule by rule; the mapped results of whole documents are the golden
/// vectors in Vectors/presence/aggregation.
@Suite struct StateAggregationTests {
    typealias Instance = StateAggregation.Instance

    static func machine(_ availability: UInt32, at time: String = "2026-11-25T10:00:00.000") -> Instance {
        Instance(
            state: MSState(type: .machineState, availability: availability), published: XSDTime.milliseconds(from: time),
            expireType: .endpoint, endpointID: "E-\(availability)")
    }

    static func user(
        _ availability: UInt32, manual: Bool? = nil, at time: String = "2026-11-25T10:00:00.000",
        _ activities: [MSActivity] = []
    )
        -> Instance
    {
        Instance(
            state: MSState(type: .userState, manual: manual, availability: availability, activities: activities),
            published: XSDTime.milliseconds(from: time), expireType: .static)
    }

    @Test func theMostActiveMachineStateBecomesTheAggregateMachineState() throws {
        let url = GoldenVectorTests.vectors.appendingPathComponent("aggregation/input/4.3.1.1-container2.xml")
        let document = try CategoriesDocument(bytes: Array(try Data(contentsOf: url)))
        let machine = StateAggregation.aggregateMachineState(of: document.categories.compactMap(Instance.init))
        // [MS-PRES] §4.3.1.1: the computed aggregateMachineState of container 2.
        #expect(machine.state.type == .aggregateMachineState)
        #expect(machine.state.availability == 5000)
        #expect(machine.state.endpointID?.lowercased() == "221ef77e-3a68-5570-86ed-6ea5bd4b7ff8")
        #expect(machine.state.manual == nil)
        #expect(machine.expireType == .user)
    }

    @Test func noMachineStatePerEndpointIsOffline() {
        var notPerEndpoint = Self.machine(3500)
        notPerEndpoint.expireType = .user
        #expect(StateAggregation.aggregateMachineState(of: [notPerEndpoint]).state.availability == 18500)
        #expect(StateAggregation.aggregateMachineState(of: []).state.availability == 18500)
    }

    @Test(
        arguments: [
            // (busy availability, machine availability, aggregated): §3.8.5.1.2.2's BusyIdle rule at its bounds.
            (6000, 4500, 7500), (7499, 5999, 8999), (6000, 6000, 6000), (5999, 4500, 5999), (7500, 5000, 7500),
            (6500, 4499, 6500),
        ] as [(UInt32, UInt32, UInt32)])
    func busyOnAnIdleMachineIsBusyIdle(busy: UInt32, machine: UInt32, aggregated: UInt32) {
        let state = StateAggregation.aggregateState(of: [Self.user(busy), Self.machine(machine)])
        #expect(state.availability == aggregated)
    }

    @Test func theNewestManualStateHidesOlderOnesButNotTheMachine() {
        let instances = [
            Self.user(9000, at: "2026-11-25T09:00:00.000"),
            Self.user(3500, manual: true, at: "2026-11-25T09:30:00.000"),
            Self.user(6500, at: "2026-11-25T09:45:00.000"),
            Self.machine(15500, at: "2026-11-25T08:00:00.000"),
        ]
        // 9000 is older than the manual state and goes; 6500 is newer and stays; the machine stays.
        #expect(StateAggregation.aggregateState(of: instances).availability == 15500)
        #expect(StateAggregation.aggregateState(of: Array(instances.prefix(3))).availability == 6500)
    }

    @Test func startTimeRatherThanPublishTimeDatesAState() {
        var calendar = Self.user(9000, at: "2026-11-25T09:40:00.000")
        calendar.state.type = .calendarState
        calendar.state.startTime = "2026-11-25T09:00:00Z"
        let manual = Self.user(3500, manual: true, at: "2026-11-25T09:30:00.000")
        // Published after the manual state, but started before it: removed.
        #expect(StateAggregation.aggregateState(of: [calendar, manual]).availability == 3500)
    }

    @Test func anActivityNeedsATokenOrTextAndAWindowHoldingTheAvailability() {
        let activities = [
            MSActivity(minAvailability: 6000, maxAvailability: 7499),
            MSActivity(token: "on-the-phone", minAvailability: 7000, maxAvailability: 7499),
        ]
        let state = StateAggregation.aggregateState(of: [Self.user(6500, activities)])
        #expect(state.availability == 6500)
        #expect(state.activities.isEmpty)
        let custom = StateAggregation.aggregateState(
            of: [Self.user(6500, [MSActivity(minAvailability: 6000, custom: [.init("Interviewing")])])])
        #expect(custom.activities.first?.custom.map(\.text) == ["Interviewing"])
        #expect(custom.activities.first?.minAvailability == nil)
    }

    @Test func aDocumentWithoutMachineStatesKeepsItsOwnAvailability() {
        // A publication carries no endpoint's state: not made offline (docs/flows.md, "State aggregation").
        #expect(StateAggregation.aggregateState(of: [Self.user(6500)]).availability == 6500)
    }
}
