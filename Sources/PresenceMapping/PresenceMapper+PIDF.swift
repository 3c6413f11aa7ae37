public import PresenceDocuments
import XMLBridge

extension PresenceMapper {
    /// Categories → PIDF/RPID/CIPID.
    ///
    /// basic and the RPID activities follow [MS-PRES] §3.7.5.4 (`availability-pidf.tsv`)
    /// exactly: each availability band gives its row's basic and its row's activity, and
    /// an activity token only where a row names it (On the phone, 6000-to-7499). The RFC
    /// dialect adds, outside the activities, what Microsoft's own server leaves out: note,
    /// meeting location, endpoint location, time zone, contact card (display name, photo,
    /// home page) and capabilities. The Microsoft dialect writes what Microsoft's server
    /// writes (§2.2.2.8.1): basic, the table's activity in `rpid-status`, and the display name.
    ///
    /// `rpidExtensions` (RFC dialect only) adds the signals beyond the §3.7.5.4 row, for
    /// peers known to handle them and for categories → PIDF → categories through this
    /// gateway (`Mappings/README.md`, "RPID extensions"): the class signals of
    /// `availability-pidf-detail.tsv`, the token's activities (`activity-tokens.tsv`), the
    /// custom activity, free/busy and out-of-office activities.
    public func pidf(
        from doc: CategoriesDocument, dialect: PIDFDialect = .rfc, rpidExtensions: Bool = false
    ) -> (PIDFDocument, MappingReport) {
        var report = MappingReport()
        // Room for what a typical document reports (state, note, card, calendar, services),
        // not an array grown entry by entry.
        report.mapped.reserveCapacity(16)
        report.dropped.reserveCapacity(4)
        let output = pidf(from: doc, dialect: dialect, rpidExtensions: rpidExtensions, report: &report)
        return (output, report)
    }

    /// Categories → PIDF/RPID/CIPID as ``pidf(from:dialect:rpidExtensions:)`` converts them,
    /// without the report: for callers that discard it (the gateway's watchers), no report
    /// text is built.
    public func pidfDocument(
        from doc: CategoriesDocument, dialect: PIDFDialect = .rfc, rpidExtensions: Bool = false
    ) -> PIDFDocument {
        var none = NoMappingReport()
        return pidf(from: doc, dialect: dialect, rpidExtensions: rpidExtensions, report: &none)
    }

    /// The conversion, noting what it does in `report`: the state's facts ([MS-PRES] §3.7.5.4),
    /// then one rule per part of the tuple and person. The categories that add to the person
    /// (notes, contact cards, calendars, services) are read in document order.
    private func pidf<Report: MappingReporting>(
        from doc: CategoriesDocument, dialect: PIDFDialect, rpidExtensions extended: Bool, report: inout Report
    ) -> PIDFDocument {
        let doc = onePublicationPerInstance(doc, report: &report)
        let effective = effectiveState(doc, report: &report)
        reportPublicationAttributes(doc, uriTo: "presence/@entity", report: &report)
        let row = basicRule(effective, report: &report)
        if dialect == .microsoft { return microsoftPIDF(doc, effective, row, report: &report) }

        let activity = activityRule(effective, row, extended: extended, report: &report)
        let details = stateDetailsRule(effective.state, hasActivity: !activity.values.isEmpty, report: &report)
        var activities = activityElements(activity.values, note: details.meetingSubject)
        var notes: [PIDFNote] = []
        // The CIPID parts, made into one CIPID at the end (each part set on a CIPID made a new box).
        let displayName = firstContactDisplayName(doc)
        var icon: String?
        var homepage: String?
        var capabilities: ServiceCapabilities?
        var hasServices = false
        // By index: a `for category in` loop copies each category whole (callgrind).
        for index in doc.categories.indices {
            switch doc.categories[index].payload {
            case .note(let note):
                noteRule(note, extended: extended, notes: &notes, activities: &activities, report: &report)
            case .contactCard(let card):
                contactCardRule(card, icon: &icon, homepage: &homepage, report: &report)
            case .calendarData(let calendar):
                activities += calendarRule(
                    calendar, instance: doc.categories[index].instance ?? 0, extended: extended, report: &report)
            case .services(let services):
                hasServices = true
                if let caps = capabilitiesRule(services, report: &report) { capabilities = caps }
            default:
                break
            }
        }
        if !hasServices, let services = aggregatedServices(doc, report: &report) {
            capabilities = capabilitiesRule(services, report: &report)
        }
        reportUnmappedCategories(doc, dialect: dialect, report: &report)
        let oma = omaWriteRule(effective, report: &report)

        let person = PIDFPerson(
            id: "p0",
            rpid: RPID(
                activities: activities, placeType: details.placeType, placeIs: details.placeIs,
                timeOffsets: details.timeOffsets, userInput: activity.userInput),
            cipid: CIPID(displayNames: displayName.map { [PIDFNote($0)] } ?? [], homepage: homepage, icon: icon),
            notes: notes, extensions: oma.person)
        let tuple = PIDFTuple(
            id: "t0", status: PIDFStatus(basic: row.basic, capabilities: capabilities, extensions: oma.status),
            contact: PIDFContact(uri: doc.uri))
        return PIDFDocument(entity: doc.uri, tuples: [tuple], persons: person.isEmpty ? [] : [person])
    }

    // MARK: - Rules

    /// What the `availability-pidf.tsv` row ([MS-PRES] §3.7.5.4) gives: basic, the RPID
    /// activity, and whether the row names the token (row 5, On the phone).
    struct TableRow {
        var basic: PIDFBasic
        var activity: String?
        var namesToken = false
    }

    /// basic and activity from the §3.7.5.4 row of the availability and token; closed with
    /// no activity when nothing is published (offline).
    func basicRule<Report: MappingReporting>(_ effective: EffectiveState, report: inout Report) -> TableRow {
        guard let availability = effective.availability, let index = pidfRow(availability, effective.token) else {
            report.map("state (absent)", "basic closed, no activity: nothing published is shown as offline")
            return TableRow(basic: .closed)
        }
        let row = tables.availabilityPIDF[index]
        var result = TableRow(basic: row.basic, activity: row.rpidActivity)
        if case .equals(let named) = row.range.activity { result.namesToken = named == effective.token }
        report.map("state/availability=\(availability)", pidfRowDetails[index])
        if result.namesToken, let token = effective.token {
            report.map("state/activity/@token=\(token)", pidfRowDetails[index])
        }
        return result
    }

    /// The person's activity values (RFC 4480 §3.2): the row's activity; with the RPID
    /// extensions also the class signals (`availability-pidf-detail.tsv`), the token
    /// (`activity-tokens.tsv`, else its text as other) and the custom activity. Tokens
    /// first, then other texts, each once.
    func activityRule<Report: MappingReporting>(
        _ effective: EffectiveState, _ row: TableRow, extended: Bool, report: inout Report
    ) -> (values: [RPIDValue], userInput: RPIDUserInput?) {
        var tokens: [String] = []
        var others: [String] = []
        var userInput: RPIDUserInput?
        func add(_ token: String?, other: String? = nil) {
            if let token, !tokens.contains(token) { tokens.append(token) }
            if let other, !others.contains(other) { others.append(other) }
        }
        add(row.activity)
        if extended, let availability = effective.availability, let index = detailRow(availability) {
            let detail = tables.availabilityDetail[index]
            for token in detail.activities { add(token) }
            add(nil, other: detail.other)
            userInput = detail.userInput.map { RPIDUserInput($0) }
            // A class whose row adds nothing (the table's activity already says it) is not reported.
            if let text = detailRowDetails[index] { report.map("state/availability class", text) }
        }
        if let token = effective.token, !row.namesToken {
            if !extended {
                report.drop("state/activity/@token=\(token)", Self.beyondTheRow)
            } else if let index = tables.activityTokens.firstIndex(where: { $0.token == token && $0.written }) {
                add(tables.activityTokens[index].rpid, other: tables.activityTokens[index].other)
                report.map("state/activity/@token=\(token)", writtenTokenDetails[index])
            } else {
                add(nil, other: token.rawValue)
                report.map("state/activity/@token=\(token)", "rpid other \"\(token)\" (no table row)")
            }
        }
        if let custom = effective.custom {
            if extended {
                add(nil, other: custom)
                report.map("state/activity/custom", "rpid other \"\(custom)\"")
            } else {
                report.drop("state/activity/custom", Self.beyondTheRow)
            }
        }
        var values: [RPIDValue] = []
        values.reserveCapacity(tokens.count + others.count)
        for token in tokens { values.append(.token(token)) }
        for other in others { values.append(.other(other)) }
        return (values, userInput)
    }

    /// The person's activities elements: the values with the meeting subject as their note.
    /// RFC 4480 §3.2 (and its schema): `<unknown/>` stands alone in its `<activities>`, so
    /// the Unknown class marker and any other value travel in two elements.
    func activityElements(_ values: [RPIDValue], note: String?) -> [RPIDTokens] {
        guard !values.isEmpty else { return [] }
        let notes = note.map { [PIDFNote($0)] } ?? []
        let unknown = RPIDValue.token("unknown")
        guard values.count > 1, let marker = values.firstIndex(of: unknown) else {
            return [RPIDTokens(notes: notes, values: values)]
        }
        var rest = values
        rest.remove(at: marker)
        return [RPIDTokens(values: [unknown]), RPIDTokens(notes: notes, values: rest)]
    }

    /// The state's RPID beside the activities: meeting subject, meeting location, endpoint
    /// location and time zone ([MS-PRES] §2.2.2.7.1 → RFC 4480 §3.2, §3.8, §3.7, §3.14).
    struct StateDetails {
        var meetingSubject: String?
        var placeType: RPIDTokens?
        var placeIs: RPIDPlaceIs?
        var timeOffsets: [RPIDTimeOffset] = []
    }

    /// The state's details as RPID; the meeting subject only when an activity carries it.
    func stateDetailsRule<Report: MappingReporting>(_ state: MSState?, hasActivity: Bool, report: inout Report)
        -> StateDetails
    {
        guard let state else { return StateDetails() }
        // Gathered in locals and put together at the end: setting a field of a `StateDetails`
        // variable copied the whole value (callgrind `presence-bench profile map-pidf`).
        var subject: String?
        var placeType: RPIDTokens?
        var placeIs: RPIDPlaceIs?
        var timeOffsets: [RPIDTimeOffset] = []
        if let meetingSubject = state.meetingSubject, !meetingSubject.isEmpty {
            // RFC 4480 §3.2: a note on the activities element; with no activity there is no element for it.
            if hasActivity {
                subject = meetingSubject
                report.map("state/meetingSubject", "rpid activities note")
            } else {
                report.drop(
                    "state/meetingSubject", "RFC 4480 puts it as a note on the activities, and this state writes none")
            }
        }
        if let location = state.meetingLocation, !location.isEmpty {
            placeType = RPIDTokens(values: [.other(location)])
            report.map("state/meetingLocation", "rpid place-type other")
        }
        if let location = state.endpointLocation, !location.isEmpty {
            placeIs = RPIDPlaceIs(notes: [PIDFNote(location)])
            report.map("state/endpointLocation", "rpid place-is note")
        }
        if let bias = state.timeZoneBias {
            // Windows bias: UTC = local + bias, so the offset from UTC is -bias (RFC 4480 §3.14).
            timeOffsets = [RPIDTimeOffset(minutes: -bias, description: state.timeZoneName)]
            report.map("state/timeZoneBias", "rpid time-offset \(-bias)")
            if state.timeZoneName != nil { report.map("state/timeZoneName", "rpid time-offset/@description") }
        }
        if Report.keepsEntries { reportDroppedState(state, report: &report) }
        return StateDetails(meetingSubject: subject, placeType: placeType, placeIs: placeIs, timeOffsets: timeOffsets)
    }

    /// A note category's bodies ([MS-PRES] §2.2.2.7.5) as person notes (RFC 4479 §3.1); with
    /// the RPID extensions an out-of-office body is an activity with its period instead.
    func noteRule<Report: MappingReporting>(
        _ note: MSNote, extended: Bool, notes: inout [PIDFNote], activities: inout [RPIDTokens], report: inout Report
    ) {
        for body in note.bodies where !body.text.isEmpty {
            if body.type == "OOF", extended {
                activities.append(
                    RPIDTokens(
                        from: body.startTime, until: body.endTime, notes: [PIDFNote(body.text)],
                        values: [.other(MSActivityToken.outOfOffice.rawValue)]))
                report.map("note[OOF]", "rpid activities (other out-of-office, from/until) with the note")
            } else {
                notes.append(PIDFNote(body.text))
                report.map("note[\(body.type ?? "personal")]", "person note")
                if body.type == "OOF", body.startTime != nil || body.endTime != nil {
                    report.drop(
                        "note[OOF]/@startTime|@endTime",
                        "a person note has no period; rpid-extensions writes the out-of-office activity with from/until"
                    )
                }
            }
        }
    }

    /// A contact card ([MS-PRES] §2.2.2.7.6) as CIPID (RFC 4482): this card's photo as icon and
    /// its first URL as homepage. (The display name is the first of all cards: the caller's.)
    func contactCardRule<Report: MappingReporting>(
        _ card: ContactCard, icon: inout String?, homepage: inout String?, report: inout Report
    ) {
        if let photo = card.photos.first(where: { $0.uri != nil })?.uri {
            icon = photo
            report.map("contactCard/photo", "cipid icon")
        }
        if let home = card.urls.first?.uri {
            homepage = home
            report.map("contactCard/url", "cipid homepage")
        }
        if !card.displayNames.isEmpty { report.map("contactCard/displayName", "cipid display-name") }
        if Report.keepsEntries { reportDroppedCard(card, report: &report) }
    }

    /// A calendar's free/busy ([MS-PRES] §2.2.2.7.8) as RPID activities with from/until
    /// (`freebusy.tsv`), with the RPID extensions only.
    func calendarRule<Report: MappingReporting>(
        _ calendar: CalendarData, instance: UInt32, extended: Bool, report: inout Report
    ) -> [RPIDTokens] {
        var activities: [RPIDTokens] = []
        if let freeBusy = calendar.freeBusy {
            if extended {
                activities = self.activities(fromFreeBusy: freeBusy, instance: instance, report: &report)
            } else {
                report.drop("calendarData/freeBusy", Self.beyondTheRow)
            }
        }
        if calendar.hasWorkingHours { report.drop("calendarData/WorkingHours", "RPID has no working-hours element") }
        report.drop(
            "calendarData/@mailboxID",
            "the mailbox the calendar is read from (MS-PRES 2.2.2.7.8); RPID has no element for it")
        return activities
    }

    /// Services ([MS-PRES] §2.2.2.7.3) as RFC 5196 flags: one per `capabilities.tsv` row
    /// whose capability is present with render or capture true, the first row for each
    /// flag, in table order. nil when there is none.
    func capabilitiesRule<Report: MappingReporting>(_ services: MSServices, report: inout Report)
        -> ServiceCapabilities?
    {
        let rows = tables.capabilities
        // Names compared by length first: most differ in length, and two different strings
        // compared with `==` go through the standard library's slow path (about 1,300 of the
        // conversion's instructions, callgrind `presence-bench profile convert`).
        func same(_ a: String, _ b: String) -> Bool { a.utf8.count == b.utf8.count && a == b }
        // The capabilities a row names that render or capture, each asked once.
        var present: [String] = []
        present.reserveCapacity(rows.count)
        for service in services.services {
            for capability in service.capabilities where !present.contains(where: { same($0, capability.name) }) {
                guard rows.contains(where: { same($0.ms, capability.name) }) else { continue }
                if capability.render == true || capability.capture == true { present.append(capability.name) }
            }
        }
        guard !present.isEmpty else { return nil }
        var flags: [ServiceCapabilities.Flag] = []
        flags.reserveCapacity(rows.count)
        for row in rows
        where present.contains(where: { same($0, row.ms) }) && !flags.contains(where: { same($0.name, row.caps) }) {
            flags.append(.init(row.caps, true))
        }
        report.map("services", "caps:servcaps " + flags.map(\.name).joined(separator: " "))
        return ServiceCapabilities(flags: flags)
    }

    /// The subscribers' `services` of a document that carries `device` instances and no
    /// `services` ([MS-PRES] §3.8.5.2, ``ServicesAggregation/services(in:)``); nil when there is
    /// no device.
    func aggregatedServices<Report: MappingReporting>(_ doc: CategoriesDocument, report: inout Report)
        -> MSServices?
    {
        guard let services = ServicesAggregation.services(in: doc)?.forSubscribers else { return nil }
        report.map("device", "aggregated into the subscribers' services as the server does (MS-PRES 3.8.5.2)")
        return services
    }

    /// The Microsoft dialect's document ([MS-PRES] §2.2.2.8.1): basic, the table's activity
    /// in `rpid-status` and the display name.
    private func microsoftPIDF<Report: MappingReporting>(
        _ doc: CategoriesDocument, _ effective: EffectiveState, _ row: TableRow, report: inout Report
    ) -> PIDFDocument {
        if Report.keepsEntries, let state = effective.state, let fields = Self.detailFields(of: state) {
            report.drop(
                "state/" + fields,
                "the Microsoft dialect carries only basic, activity and display name (MS-PRES 2.2.2.8.1)")
        }
        if effective.token != nil, !row.namesToken {
            report.drop("state/activity/@token", "the Microsoft dialect carries only the 3.7.5.4 activity")
        }
        reportUnmappedCategories(doc, dialect: .microsoft, report: &report)
        var status = PIDFStatus(basic: row.basic)
        status.rpid.legacyActivities = row.activity.map { [$0] } ?? []
        let displayName = firstContactDisplayName(doc)
        return PIDFDocument(
            entity: doc.uri, tuples: [PIDFTuple(id: "0", status: status)],
            cipid: CIPID(displayNames: displayName.map { [PIDFNote($0)] } ?? []))
    }

    /// The first display name of the contact cards, in document order: the one CIPID carries.
    private func firstContactDisplayName(_ doc: CategoriesDocument) -> String? {
        for category in doc.categories {
            if case .contactCard(let card) = category.payload, let first = card.displayNames.first { return first.text }
        }
        return nil
    }

    private func reportDroppedState<Report: MappingReporting>(_ state: MSState, report: inout Report) {
        if state.timeZoneAbbreviation != nil {
            report.drop("state/timeZoneAbbreviation", "RPID time-offset has one description; the name is kept")
        }
        if state.device != nil { report.drop("state/device", "no RPID element for the kind of device") }
        if state.lastActive != nil {
            report.drop(
                "state/@lastActive", "RPID user-input/@last-input needs the endpoint's input time, not the presentity's"
            )
        }
    }

    private func reportDroppedCard<Report: MappingReporting>(_ card: ContactCard, report: inout Report) {
        let reason = "CIPID (RFC 4482) has no element for it; msrtc.pidf carries e-mail and phone"
        if !card.emails.isEmpty { report.drop("contactCard/email", reason) }
        if !card.phones.isEmpty { report.drop("contactCard/phone", reason) }
        if !card.addresses.isEmpty { report.drop("contactCard/address", "CIPID has no postal address") }
        if !card.company.isEmpty || !card.department.isEmpty || !card.title.isEmpty || !card.office.isEmpty {
            report.drop("contactCard/company|department|title|office", "CIPID has no organisation fields")
        }
    }

    private func reportUnmappedCategories<Report: MappingReporting>(
        _ doc: CategoriesDocument, dialect: PIDFDialect, report: inout Report
    ) {
        // Nothing but reports: skipped when they are not kept.
        guard Report.keepsEntries else { return }
        for i in doc.categories.indices {
            // The name read in the report's text (taken before, it was copied for every
            // category, the report kept or not).
            switch doc.categories[i].payload {
            case .state, .legacyInterop, .none: break
            case .note, .services:
                if dialect == .microsoft {
                    report.drop(
                        doc.categories[i].name.rawValue,
                        "the Microsoft dialect carries only basic, activity and display name")
                }
            case .contactCard(let card):
                if dialect == .microsoft {
                    reportDroppedCard(card, report: &report)
                    if !card.photos.isEmpty || !card.urls.isEmpty {
                        report.drop(
                            "contactCard/photo|url",
                            "the Microsoft dialect carries only basic, activity and display name")
                    }
                }
            case .calendarData:
                if dialect == .microsoft {
                    report.drop(
                        doc.categories[i].name.rawValue,
                        "the Microsoft dialect carries only basic, activity and display name")
                }
            case .device:
                // Without a services category the devices were aggregated into one (reported there).
                if doc.categories.contains(where: { if case .services = $0.payload { true } else { false } }) {
                    report.drop(
                        doc.categories[i].name.rawValue,
                        "the services category, the server's aggregate of the devices (MS-PRES 3.8.5.2), is converted")
                }
            case .userProperties:
                report.drop(
                    doc.categories[i].name.rawValue, "self-only server data (MS-PRES 2.2.2.7.4), not for watchers")
            case .other:
                report.drop(doc.categories[i].name.rawValue, "no PIDF equivalent")
            }
        }
    }
}
