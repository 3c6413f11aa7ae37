import Foundation
import PresenceDocuments
import PresenceMapping
import Testing

/// What a server computes from a publisher's instances ([MS-PRES] §3.8.5), against the
/// specification's own outputs in Vectors/presence/computed (README there).
@Suite struct ServerComputationTests {
    static func document(_ path: String) throws -> CategoriesDocument {
        let url = GoldenVectorTests.vectors.appendingPathComponent(path)
        return try CategoriesDocument(bytes: Array(try Data(contentsOf: url)))
    }

    /// Each expected category has a computed one with its name, container and instance, with the
    /// same payload and expireType (the computation does not date or version what it makes).
    static func expectComputed(from input: CategoriesDocument, as expectedPath: String) throws {
        let computed = ServerComputation.categories(of: input).categories
        let expected = try document(expectedPath).categories
        #expect(!expected.isEmpty)
        for category in expected {
            let match = computed.first {
                $0.name == category.name && $0.container == category.container && $0.instance == category.instance
            }
            #expect(match?.payload == category.payload, "\(expectedPath): \(category.name) in \(category.container ?? 0)")
            #expect(match?.expireType == category.expireType, "\(expectedPath): \(category.name) expireType")
        }
    }

    @Test func workingHoursAreTakenFromCalendarDataInstanceZeroOfContainerOne() throws {
        // §4.3.3: the publish carries calendarData in containers 1, 100-400 and 32000, two
        // instances in container 1; only instance 0 of container 1 has WorkingHours to extract.
        let url = GoldenVectorTests.vectors.appendingPathComponent("computed/input-4.3.3-publish-calendarData.xml")
        let publish = try CategoryPublish(bytes: Array(try Data(contentsOf: url)))
        let input = CategoriesDocument(uri: publish.uri, categories: publish.publications.map(\.category))
        try Self.expectComputed(from: input, as: "computed/expected-4.3.3-workingHours.xml")
        #expect(ServerComputation.categories(of: input).categories.map(\.name) == [.workingHours])
    }

    @Test func servicesForSelfAndSubscribersAreTheExamplesOwn() throws {
        let input = try Self.document("aggregation/input/4.3.2.1-devices.xml")
        try Self.expectComputed(from: input, as: "computed/expected-4.3.2.1-services-self.xml")
        try Self.expectComputed(from: input, as: "computed/expected-4.3.2.1-services-subscribers.xml")
    }

    @Test func dndStateOfADoNotDisturbUserState() throws {
        try Self.expectComputed(
            from: try Self.document("aggregation/input/4.3.4-container2.xml"),
            as: "computed/expected-4.3.4-dndState-container2.xml")
    }

    @Test func aggregateMachineStateAsTheWalkthroughWritesIt() throws {
        try Self.expectComputed(
            from: try Self.document("aggregation/input/4.3.1.1-container2.xml"),
            as: "computed/expected-4.3.1.1-aggregateMachineState.xml")
    }

    @Test(
        arguments: [
            // (type, availability, dndState availability): §3.8.5.4's range 9000-11999 at its bounds.
            ("userState", 8999, nil), ("userState", 9000, 9500), ("userState", 11999, 9500), ("userState", 12000, nil),
            ("presentingState", 9500, 9500), ("calendarState", 9500, nil), ("machineState", 9500, nil),
        ] as [(String, UInt32, UInt32?)])
    func dndStateFollowsTheUserAndPresentingStates(type: String, availability: UInt32, dnd: UInt32?) {
        let instance = StateAggregation.Instance(
            state: MSState(type: StateType(rawValue: type), availability: availability))
        let state = StateAggregation.dndState(of: [instance])
        #expect(state.type == .userState)
        #expect(state.manual == true)
        #expect(state.availability == dnd)
    }

    @Test func eachContainerIsComputedFromItsOwnInstances() throws {
        // §4.3.1.1: container 2 gives 9000 and a dndState of 9500; container 3 gives 8400 and
        // none (its userState 6900 is outside 9000-11999).
        for (path, container, availability, dnd) in [
            ("aggregation/input/4.3.1.1-container2.xml", 2, 9000, 9500),
            ("aggregation/input/4.3.1.1-container3.xml", 3, 8400, nil),
        ] as [(String, UInt32, UInt32, UInt32?)] {
            let computed = ServerComputation.categories(of: try Self.document(path)).categories
            let aggregate = computed.first { $0.name == .state && $0.instance == 1 && $0.container == container }
            guard case .state(let state)? = aggregate?.payload else {
                Issue.record("\(path): no aggregateState in container \(container)")
                continue
            }
            #expect(state.type == .aggregateState)
            #expect(state.availability == availability)
            let dndState = computed.first { $0.name == .dndState && $0.container == container }
            guard case .state(let routing)? = dndState?.payload else {
                Issue.record("\(path): no dndState in container \(container)")
                continue
            }
            #expect(routing.availability == dnd)
        }
    }

    /// §3.8.5.1.2.7: the aggregateState is instance 1, expiring with the user, when machine
    /// states were published, and instance 0, static, when none were.
    @Test func theAggregateStateInstanceFollowsTheTableOfComputedInstances() {
        func aggregate(_ types: [StateType]) -> Category? {
            let categories = types.enumerated().map { n, type in
                Category(
                    name: .state, instance: UInt32(0x2000_0000 + n), container: 2,
                    expireType: type == .machineState ? .endpoint : .static,
                    payload: .state(MSState(type: type, availability: 3500)))
            }
            return ServerComputation.categories(of: CategoriesDocument(uri: "sip:a@b", categories: categories))
                .categories.first { $0.name == .state && ($0.instance ?? 0) < 0x1000_0000 }
        }
        let withMachine = aggregate([.machineState, .userState]), without = aggregate([.userState])
        #expect(withMachine?.instance == 1)
        #expect(withMachine?.expireType == .user)
        #expect(without?.instance == 0)
        #expect(without?.expireType == .static)
    }

    @Test func aDocumentWithNothingToComputeGivesNoCategories() {
        let note = Category(name: .note, instance: 0, container: 400, payload: .note(MSNote(bodies: [.init(text: "hi")])))
        #expect(ServerComputation.categories(of: CategoriesDocument(uri: "sip:a@b", categories: [note])).categories.isEmpty)
    }
}
