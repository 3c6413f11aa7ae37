public import PresenceDocuments

extension MappingTables {
    /// The OMA Presence SIMPLE PIDF extension elements the gateway knows (namespace
    /// `urn:oma:xml:prs:pidf:oma-pres`, schema OMA-SUP-XSD_prs_pidf_omaPres).
    public enum OMAElement: String, Sendable, Hashable, CaseIterable {
        /// In `dm:person`: the person's willingness, over every service's.
        case overridingWillingness = "overriding-willingness"
        /// In a tuple's `<status>`: whether the user takes part in a session of that service.
        case sessionParticipation = "session-participation"
        /// In a tuple's `<status>`: the service's registration state (active, terminated).
        case registrationState = "registration-state"
        /// In a tuple's `<status>`: whether the service is barred (active, terminated).
        case barringState = "barring-state"
        /// In `dm:device`: the device's access networks and whether each is active.
        case networkAvailability = "network-availability"
        /// In a tuple's `<status>`: the willingness for that service.
        case willingness
        /// In a tuple: the service's id and version.
        case serviceDescription = "service-description"

        /// Whether the element carries an OMA `<basic>` open/closed the gateway reads and writes.
        var hasBasic: Bool { self == .overridingWillingness || self == .sessionParticipation || self == .willingness }
    }

    /// A row of `oma-extensions.tsv`.
    public struct OMARow: Sendable, Hashable {
        public enum Direction: String, Sendable, Hashable { case read, write }
        public var direction: Direction
        public var element: OMAElement
        /// The element's basic; nil = any (`*`).
        public var value: PIDFBasic?
        /// Read: the band the state must be in for the row to change it (nil: it never does).
        /// Write: the band whose users get the element.
        public var range: Range?
        /// Read: the availability the state is raised to.
        public var availability: UInt32?
        /// Read: the token set when the state has none.
        public var setsToken: MSActivityToken?
        public var source: String
    }

    /// The rows of `oma-extensions.tsv`, checked: known elements and tokens, a basic only
    /// where the element has one, a read row for every element, write rows only for the
    /// elements with a basic and with a band.
    static func omaRows(_ table: TSVTable, known: Set<MSActivityToken>) throws(MappingError) -> [OMARow] {
        var rows: [OMARow] = []
        for row in table.rows { rows.append(try omaRow(row, known: known)) }
        let read = Set(rows.filter { $0.direction == .read }.map(\.element))
        for element in OMAElement.allCases where !read.contains(element) {
            throw MappingError(.coverage, "no read row for OMA element \(element.rawValue)", file: table.file)
        }
        return rows
    }

    private static func omaRow(_ row: TSVTable.Row, known: Set<MSActivityToken>) throws(MappingError) -> OMARow {
        guard let direction = OMARow.Direction(rawValue: row.string("direction")) else {
            throw row.error("direction", "must be read or write")
        }
        guard let element = OMAElement(rawValue: row.string("element")) else {
            throw row.error("element", "\"\(row.string("element"))\" is not a known OMA element", code: .unknownToken)
        }
        let valueText = row.string("value")
        let value = PIDFBasic(rawValue: valueText)
        guard value != nil || valueText == "*" else { throw row.error("value", "must be open, closed or *") }
        guard value == nil || element.hasBasic else {
            throw row.error("value", "\(element.rawValue) has no basic: the value must be *")
        }
        func token(_ column: String) throws(MappingError) -> MSActivityToken? {
            guard let text = row.optional(column), text != "*" else { return nil }
            guard known.contains(MSActivityToken(text)) else {
                throw row.error(column, "\"\(text)\" is not a known activity token", code: .unknownToken)
            }
            return MSActivityToken(text)
        }
        var range: Range?
        if row.optional("min") != nil || row.optional("max") != nil {
            let min = try row.uint32("min")
            let max = try row.uint32("max")
            guard min <= max else { throw row.error("max", "max \(max) is below min \(min)") }
            let condition = try token("activity").map { TokenCondition.equals($0) } ?? .any
            range = Range(min: min, max: max, activity: condition)
        }
        var availability: UInt32?
        if row.optional("availability") != nil { availability = try row.uint32("availability") }
        let setsToken = try token("sets_token")
        switch direction {
        case .read:
            guard (range == nil) == (availability == nil) else {
                throw row.error("availability", "a read row has a band and an availability, or neither")
            }
            guard range?.activity ?? .any == .any else { throw row.error("activity", "a read row's activity is *") }
        case .write:
            guard range != nil, value != nil, availability == nil, setsToken == nil else {
                throw row.error("min", "a write row has a band and a value, and no availability or sets_token")
            }
        }
        return OMARow(
            direction: direction, element: element, value: value, range: range, availability: availability,
            setsToken: setsToken, source: row.string("source"))
    }
}
