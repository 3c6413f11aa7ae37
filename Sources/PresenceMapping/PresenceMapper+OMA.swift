import PresenceDocuments
import XMLBridge

/// OMA Presence SIMPLE's PIDF extensions (namespace `urn:oma:xml:prs:pidf:oma-pres`) ⇄
/// enhanced presence, as `oma-extensions.tsv` decides (Mappings/README.md, "OMA presence
/// extensions"; docs/flows.md, "OMA's presence extensions").
extension PresenceMapper {
    /// PIDF → categories: raises the state the §3.7.5.4-reversed tables gave by the first read
    /// row whose element and basic the document carries and whose band holds the state; every
    /// OMA element is reported, mapped by that row or dropped with its row's reason.
    func omaReadRule<Report: MappingReporting>(
        _ facts: PIDFFacts, availability: UInt32?, activity: MSActivity?, report: inout Report
    ) -> (availability: UInt32?, activity: MSActivity?) {
        guard !facts.omaFacts.isEmpty else { return (availability, activity) }
        let rows = tables.omaExtensions
        func matches(_ row: MappingTables.OMARow, _ fact: PIDFFacts.OMAFact) -> Bool {
            row.direction == .read && row.element == fact.element && (row.value == nil || row.value == fact.basic)
        }
        // The applying row: the first whose band holds the state, for an element present.
        let applied = rows.indices.first { index in
            guard let range = rows[index].range, let current = availability,
                current >= range.min, current <= range.max
            else { return false }
            return facts.omaFacts.contains { matches(rows[index], $0) }
        }
        var result = (availability: availability, activity: activity)
        if let applied, let raised = rows[applied].availability {
            result.availability = raised
            if let token = rows[applied].setsToken, activity?.token == nil {
                var updated = activity ?? MSActivity(token: nil)
                updated.token = token
                result.activity = updated
            }
        }
        for fact in facts.omaFacts {
            guard let index = rows.firstIndex(where: { matches($0, fact) }) else {
                report.drop(fact.path, "no oma-extensions.tsv read row")
                continue
            }
            let row = rows[index]
            if index == applied {
                let token = result.activity?.token.map { ", token \($0)" } ?? ""
                report.map(fact.path, "state availability \(result.availability ?? 0)\(token) (\(row.source))")
            } else if let range = row.range {
                report.drop(fact.path, "the state is outside \(range.min)-\(range.max) and is kept (\(row.source))")
            } else {
                report.drop(fact.path, row.source)
            }
        }
        return result
    }

    /// Categories → PIDF (RFC dialect): the OMA elements of the write rows whose band (and
    /// token) hold the effective state, each where schema OMA-SUP-XSD_prs_pidf_omaPres puts
    /// it: overriding-willingness in the person, session-participation in the tuple's status.
    func omaWriteRule<Report: MappingReporting>(_ effective: EffectiveState, report: inout Report)
        -> (person: [XMLElement], status: [XMLElement])
    {
        var person: [XMLElement] = []
        var status: [XMLElement] = []
        guard let availability = effective.availability else { return (person, status) }
        for row in tables.omaExtensions where row.direction == .write {
            guard let range = row.range, let value = row.value, range.contains(availability, effective.token) else {
                continue
            }
            let element = Self.omaElement(row.element, basic: value)
            switch row.element {
            case .overridingWillingness: person.append(element)
            default: status.append(element)
            }
            report.map("state/availability=\(availability)", "oma:\(row.element.rawValue) \(value) (\(row.source))")
        }
        return (person, status)
    }

    /// `<op:ELEMENT><op:basic>VALUE</op:basic></op:ELEMENT>`.
    static func omaElement(_ element: MappingTables.OMAElement, basic: PIDFBasic) -> XMLElement {
        let basicElement = XMLElement(
            XMLName(NS.omaPres, "basic"), children: [.text(basic.rawValue)], prefix: "op")
        return XMLElement(
            XMLName(NS.omaPres, element.rawValue), children: [.element(basicElement)], prefix: "op")
    }
}
