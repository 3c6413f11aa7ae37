import Foundation
import PresenceDocuments
import PresenceMapping
import Testing

/// The report names every OMA Presence SIMPLE extension element (`oma-extensions.tsv`): the one
/// that changed the state as mapped, the others as dropped with their row's reason, and none as
/// an "unknown extension" (RFC 3863 §4.4 is for elements nobody understands).
struct OMAExtensionReportTests {
    static let vectors = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors/presence/oma/input")

    static func report(_ name: String) throws -> MappingReport {
        let bytes = try Array(Data(contentsOf: vectors.appendingPathComponent(name)))
        return PresenceMapper(tables: try MappingTables.builtIn()).categories(from: try PIDFDocument(bytes: bytes)).1
    }

    @Test func theElementThatRaisedTheStateIsMappedAndTheOutrankedOneDropped() throws {
        let report = try Self.report("oma-session-and-overriding.xml")
        #expect(report.mapped.contains { $0.field == "person[p1]/oma:overriding-willingness" && $0.detail.hasPrefix("state availability 9500") })
        #expect(report.dropped.contains { $0.field == "tuple[a1]/status/oma:session-participation" && $0.detail.contains("outside 3000-7499") })
    }

    @Test func elementsWithoutCounterpartAreDroppedWithTheirReasonNotAsUnknown() throws {
        let report = try Self.report("oma-service-states.xml")
        for field in [
            "tuple[a1]/status/oma:registration-state", "tuple[a1]/status/oma:barring-state",
            "tuple[a1]/status/oma:willingness", "tuple[a1]/oma:service-description", "device[d1]/oma:network-availability",
        ] {
            #expect(report.dropped.contains { $0.field == field && $0.detail.contains("no counterpart") }, "\(field)")
        }
        #expect(!report.dropped.contains { $0.detail.contains("unknown") && $0.field.contains("oma-pres") })
        #expect(report.mapped.allSatisfy { !$0.field.contains("oma:") })
    }
}
