import PresenceDocuments
@testable import PresenceMapping
import Testing

/// The categories → PIDF report details built once per table row read as the rows say
/// (basic, activity and source; the availability class; the RPID a token row writes).
struct ReportDetailTests {
    @Test(arguments: RoundTripTests.samples)
    func detailsAreThoseOfTheTableRows(_ availability: UInt32) throws {
        let tables = SpecTableTests.mapper.tables
        for token in RoundTripTests.tokens {
            let (_, report) = SpecTableTests.mapper.pidf(
                from: SpecTableTests.categories(availability, token), dialect: .rfc, rpidExtensions: true)
            func detail(_ field: String) -> String? { report.mapped.first { $0.field == field }?.detail }
            let row = try #require(tables.availabilityPIDF.first { $0.range.contains(availability, token) })
            let rowDetail = "basic \(row.basic.rawValue)" + (row.rpidActivity.map { ", activity \($0)" } ?? "") + " (\(row.source))"
            #expect(detail("state/availability=\(availability)") == rowDetail)
            if let class_ = tables.availabilityDetail.first(where: { $0.range.contains(availability, nil) }) {
                let adds = [class_.activities.joined(separator: " "), class_.other ?? "", class_.userInput?.rawValue ?? ""]
                    .filter { !$0.isEmpty }
                // A class that adds nothing to the row gives no line (no "Busy: " with an empty detail).
                #expect(detail("state/availability class") == (adds.isEmpty ? nil : "\(class_.className): " + adds.joined(separator: ", ")))
            }
            if let token, case .equals(token) = row.range.activity {
                // The row names the token (On the phone): the row's own line says what it became.
                #expect(detail("state/activity/@token=\(token)") == rowDetail)
            } else if let token, let tokenRow = tables.activityTokens.first(where: { $0.token == token && $0.written }) {
                let written = [tokenRow.rpid, tokenRow.other.map { "other \"\($0)\"" }].compactMap { $0 }
                #expect(detail("state/activity/@token=\(token)") == "rpid activities " + written.joined(separator: " + "))
            }
            for entry in report.mapped + report.dropped { #expect(!entry.detail.isEmpty, "\(entry.field)") }
        }
    }

    /// The effective state is chosen from the states read in place as from an array of them:
    /// the first aggregateState, every other distinct state reported as dropped; without one,
    /// the aggregate of all of them ([MS-PRES] §3.8.5.1.2), over random mixes of states,
    /// duplicates and other categories.
    @Test func effectiveStateAsFromAnArrayOfStates() {
        let mapper = SpecTableTests.mapper
        let types: [StateType] = [.aggregateState, "machineState", "userState", "phoneState"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<400 {
            var categories: [Category] = []
            for _ in 0..<Int.random(in: 0...5, using: &generator) {
                if Int.random(in: 0..<4, using: &generator) == 0 {
                    categories.append(Category(name: .note, payload: .note(MSNote())))
                    continue
                }
                let state = MSState(
                    type: types.randomElement(using: &generator)!,
                    availability: Bool.random(using: &generator) ? UInt32.random(in: 3000...3002, using: &generator) : nil)
                categories.append(Category(name: .state, instance: 1, payload: .state(state)))
            }
            let doc = CategoriesDocument(uri: "sip:a@example.com", categories: categories)
            let states = categories.compactMap { if case .state(let s) = $0.payload { s } else { nil } }
            let server = states.first { $0.type == .aggregateState }
            let expected = server ?? (states.isEmpty ? nil : StateAggregation.aggregateState(of: states.map { .init(state: $0) }))
            var expectedDrops: [String] = []
            if let server { expectedDrops = states.filter { $0 != server }.map { "state[\($0.type)]" } }
            var report = MappingReport()
            let effective = mapper.effectiveState(doc, report: &report)
            #expect(effective.state == expected)
            #expect(effective.availability == expected?.availability)
            #expect(report.dropped.map(\.field) == expectedDrops)
        }
    }
}
