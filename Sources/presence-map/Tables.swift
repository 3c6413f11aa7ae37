import ArgumentParser
import PresenceDocuments
import PresenceMapping

struct Tables: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Validate the mapping tables and print them.")

    @OptionGroup var mappings: MappingsOption

    func run() throws {
        let t = try mappings.tables()
        func range(_ r: MappingTables.Range) -> String {
            let condition: String
            switch r.activity {
            case .any: condition = "any token"
            case .equals(let token): condition = "token \(token)"
            case .differs(let token): condition = "token not \(token)"
            }
            return "\(r.min)-\(r.max) \(condition)"
        }
        print("availability -> PIDF (MS-PRES 3.7.5.4):")
        for row in t.availabilityPIDF {
            print("  \(range(row.range)): basic \(row.basic.rawValue), activity \(row.rpidActivity ?? "none")")
        }
        print("availability class detail (RFC dialect):")
        for row in t.availabilityDetail {
            print(
                "  \(range(row.range)): \(row.className) activities [\(row.activities.joined(separator: " "))] other \(row.other ?? "-") user-input \(row.userInput?.rawValue ?? "-")"
            )
        }
        print("availability -> msrtc.pidf (MS-PRES 3.7.5.5):")
        for row in t.availabilityMSRTC {
            let state = row.stateFromToken ? "token, else \(row.stateText)" : row.stateText
            print(
                "  \(range(row.range)): avail \(row.avail), state \(state), aggregates \(row.availabilityAggregate)/\(row.activityAggregate)"
            )
        }
        print("PIDF -> availability (first match wins):")
        for row in t.pidfAvailability {
            print(
                "  basic \(row.basic) activity \(row.activity) user-input \(row.userInput?.rawValue ?? "*") -> \(row.availability)"
            )
        }
        print("activity tokens:")
        for row in t.activityTokens {
            print("  \(row.token) \(row.written ? "<->" : "<-") rpid \(row.rpid ?? "-") other \(row.other ?? "-")")
        }
        print("capabilities:")
        for row in t.capabilities { print("  \(row.ms) <-> caps:\(row.caps)") }
        print("availability -> UPnP payload band (MS-PRES 2.2.2.7.1):")
        for row in t.upnpBands { print("  \(range(row.range)): band \(row.band ?? "none")") }
        print("tables valid: \(MappingTables.fileNames.count) files")
    }
}
