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
            let (_, report) = SpecTableTests.mapper.pidf(from: SpecTableTests.categories(availability, token), dialect: .rfc)
            func detail(_ field: String) -> String? { report.mapped.first { $0.field == field }?.detail }
            let row = try #require(tables.availabilityPIDF.first { $0.range.contains(availability, token) })
            #expect(detail("state/availability=\(availability)")
                == "basic \(row.basic.rawValue)" + (row.rpidActivity.map { ", activity \($0)" } ?? "") + " (\(row.source))")
            if let class_ = tables.availabilityDetail.first(where: { $0.range.contains(availability, nil) }) {
                let adds = [class_.activities.joined(separator: " "), class_.other ?? "", class_.userInput?.rawValue ?? ""]
                #expect(detail("state/availability class") == "\(class_.className): " + adds.filter { !$0.isEmpty }.joined(separator: ", "))
            }
            if let token, let tokenRow = tables.activityTokens.first(where: { $0.token == token && $0.written }) {
                let written = [tokenRow.rpid, tokenRow.other.map { "other \"\($0)\"" }].compactMap { $0 }
                #expect(detail("state/activity/@token=\(token)") == "rpid activities " + written.joined(separator: " + "))
            }
        }
    }
}
