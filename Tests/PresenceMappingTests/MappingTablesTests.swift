import Foundation
import PresenceMapping
import Testing

struct MappingTablesTests {
    static let mappingsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Mappings").path

    /// The files of Mappings/, with one file's text changed.
    static func load(replacing name: String? = nil, _ edit: (String) -> String = { $0 }) throws(MappingError) -> MappingTables {
        try MappingTables { file in
            guard let text = try? String(contentsOfFile: mappingsDirectory + "/" + file, encoding: .utf8) else { return nil }
            return file == name ? edit(text) : text
        }
    }

    @Test func builtInTablesAreTheFilesInMappings() throws {
        let builtIn = try MappingTables.builtIn()
        let fromDisk = try MappingTables.load(directory: Self.mappingsDirectory)
        #expect(builtIn.availabilityPIDF == fromDisk.availabilityPIDF)
        #expect(builtIn.availabilityMSRTC == fromDisk.availabilityMSRTC)
        #expect(builtIn.pidfAvailability == fromDisk.pidfAvailability)
        #expect(builtIn.activityTokens == fromDisk.activityTokens)
        // §3.7.5.4 has ten rows, §3.7.5.5 ten rows.
        #expect(builtIn.availabilityPIDF.count == 10)
        #expect(builtIn.availabilityMSRTC.count == 10)
    }

    @Test func aGapInAvailabilityRangesIsRejectedWithItsLine() {
        // Remove the 4500-5999 row: 4500-5999 is left uncovered.
        #expect {
            _ = try Self.load(replacing: "availability-pidf.tsv") { text in
                text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("4500\t") }.joined(separator: "\n")
            }
        } throws: { error in
            guard let e = error as? MappingError else { return false }
            return e.code == .coverage && e.file == "availability-pidf.tsv" && e.message.contains("4500-5999") && e.line > 0
        }
    }

    @Test func overlappingRangesAreRejected() {
        #expect {
            _ = try Self.load(replacing: "availability-msrtc.tsv") { $0.replacingOccurrences(of: "7500\t8999", with: "7400\t8999") }
        } throws: { ($0 as? MappingError)?.code == .coverage }
    }

    @Test func rowsSharingARangeMustSplitItByATokenAndItsNegation() {
        #expect {
            _ = try Self.load(replacing: "availability-pidf.tsv") { $0.replacingOccurrences(of: "!on-the-phone", with: "*") }
        } throws: { ($0 as? MappingError)?.code == .coverage }
    }

    @Test func anRPIDTokenOutsideRFC4480IsRejectedAtItsColumn() {
        #expect {
            _ = try Self.load(replacing: "availability-pidf.tsv") { $0.replacingOccurrences(of: "open\tbusy", with: "open\tbusyish") }
        } throws: { error in
            guard let e = error as? MappingError else { return false }
            return e.code == .unknownToken && e.line > 0 && e.column > 1 && e.message.contains("busyish")
        }
    }

    @Test func anUnknownEnhancedPresenceTokenIsRejected() {
        #expect {
            _ = try Self.load(replacing: "activity-tokens.tsv") { $0.replacingOccurrences(of: "off-work\t-\toff-work", with: "off-duty\t-\toff-work") }
        } throws: { ($0 as? MappingError)?.code == .unknownToken }
    }

    @Test func aMissingFileAndARaggedRowAreErrors() {
        #expect { _ = try MappingTables { _ in nil } } throws: { ($0 as? MappingError)?.code == .missingTable }
        #expect {
            _ = try Self.load(replacing: "msrtc-states.tsv") { $0 + "busy\n" }
        } throws: { ($0 as? MappingError)?.code == .malformedRow }
    }

    /// `oma-extensions.tsv`: an element outside OMA's schema, and a basic on an element that
    /// has none (registration-state is active/terminated), are errors at their line and column.
    @Test func anUnknownOMAElementOrABasicWhereThereIsNoneIsRejected() {
        #expect {
            _ = try Self.load(replacing: "oma-extensions.tsv") {
                $0.replacingOccurrences(of: "read\tbarring-state", with: "read\tbarred-state")
            }
        } throws: { error in
            guard let e = error as? MappingError else { return false }
            return e.code == .unknownToken && e.file == "oma-extensions.tsv" && e.line > 0 && e.column == 6
        }
        #expect {
            _ = try Self.load(replacing: "oma-extensions.tsv") {
                $0.replacingOccurrences(of: "read\tregistration-state\t*", with: "read\tregistration-state\tclosed")
            }
        } throws: { error in
            guard let e = error as? MappingError else { return false }
            return e.code == .malformedRow && e.message.contains("registration-state has no basic")
        }
    }

    /// Every OMA element has a read row: dropping network-availability's is a coverage error.
    @Test func everyOMAElementNeedsAReadRow() throws {
        let tables = try MappingTables.builtIn()
        #expect(Set(tables.omaExtensions.filter { $0.direction == .read }.map(\.element)).count
            == MappingTables.OMAElement.allCases.count)
        #expect {
            _ = try Self.load(replacing: "oma-extensions.tsv") { text in
                text.split(separator: "\n", omittingEmptySubsequences: false)
                    .filter { !$0.hasPrefix("read\tnetwork-availability") }.joined(separator: "\n")
            }
        } throws: { ($0 as? MappingError)?.code == .coverage }
    }
}
