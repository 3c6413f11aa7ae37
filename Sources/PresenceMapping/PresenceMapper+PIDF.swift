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

    /// The conversion, noting what it does in `report`.
    private func pidf<Report: MappingReporting>(
        from doc: CategoriesDocument, dialect: PIDFDialect, rpidExtensions: Bool, report: inout Report
    ) -> PIDFDocument {
        let doc = onePublicationPerInstance(doc, report: &report)
        var effective = effectiveState(doc, report: &report)
        reportPublicationAttributes(doc, uriTo: "presence/@entity", report: &report)
        var status = PIDFStatus()
        var tableActivity: String?
        // Whether the §3.7.5.4 row chosen names the token (row 5, On the phone): the token is
        // then what the row's activity says, not a signal beyond it.
        var rowNamesToken = false

        // Table rows read in place (a row bound to a local was copied, each string retained).
        if let availability = effective.availability, let index = pidfRow(availability, effective.token) {
            status.basic = tables.availabilityPIDF[index].basic
            tableActivity = tables.availabilityPIDF[index].rpidActivity
            if case .equals(let named) = tables.availabilityPIDF[index].range.activity { rowNamesToken = named == effective.token }
            report.map("state/availability=\(availability)", pidfRowDetails[index])
            if rowNamesToken, let token = effective.token { report.map("state/activity/@token=\(token)", pidfRowDetails[index]) }
        } else {
            // Nothing published, or the watcher resolves to no container: offline.
            status.basic = .closed
            report.map("state (absent)", "basic closed, no activity: nothing published is shown as offline")
        }

        let displayName = firstContactDisplayName(doc)
        switch dialect {
        case .microsoft:
            if Report.keepsEntries, let state = effective.state, let fields = Self.detailFields(of: state) {
                report.drop("state/" + fields, "the Microsoft dialect carries only basic, activity and display name (MS-PRES 2.2.2.8.1)")
            }
            return microsoftPIDF(
                doc, status: status, tableActivity: tableActivity, hasToken: effective.token != nil && !rowNamesToken,
                displayName: displayName, report: &report)
        case .rfc:
            break
        }

        // The person's RPID elements gathered in locals, its RPID made once at the end: set
        // through RPID's accessors one by one, each made the box unique (allocated or tested) first.
        var userInput: RPIDUserInput?, placeType: RPIDTokens?, placeIs: RPIDPlaceIs?
        var timeOffsets: [RPIDTimeOffset] = [], personActivities: [RPIDTokens] = []
        var person = PIDFPerson(id: "p0")
        // The activity's values gathered in the array it keeps: its tokens first (the first
        // `tokenCount`), then its other texts, each once. Room for the usual few at once (a
        // token and an other array built first and copied in cost two more allocations).
        var values: [RPIDValue] = []
        values.reserveCapacity(6)
        var tokenCount = 0
        func addToken(_ t: String) {
            for i in 0..<tokenCount where values[i].isToken(t) { return }
            // Appended while no other text follows the tokens (the usual case): an insert
            // goes through the general replacement of a range, several times an append.
            if tokenCount == values.count {
                values.append(.token(t))
            } else {
                values.insert(.token(t), at: tokenCount)
            }
            tokenCount += 1
        }
        func addOther(_ t: String) {
            for i in tokenCount..<values.count where values[i].isOther(t) { return }
            values.append(.other(t))
        }
        if let tableActivity { addToken(tableActivity) }
        let extended = rpidExtensions
        if extended, let availability = effective.availability, let index = detailRow(availability) {
            // Called, not handed over as function values (which would make `values` a captured
            // box on the heap).
            for t in tables.availabilityDetail[index].activities { addToken(t) }
            if let other = tables.availabilityDetail[index].other { addOther(other) }
            if let input = tables.availabilityDetail[index].userInput { userInput = RPIDUserInput(input) }
            // A class whose row adds nothing (the table's activity already says it) is not reported.
            if let detail = detailRowDetails[index] { report.map("state/availability class", detail) }
        }
        if let token = effective.token, !rowNamesToken {
            if !extended {
                report.drop("state/activity/@token=\(token)", Self.beyondTheRow)
            } else if let index = tables.activityTokens.firstIndex(where: { $0.token == token && $0.written }) {
                if let rpid = tables.activityTokens[index].rpid { addToken(rpid) }
                if let other = tables.activityTokens[index].other { addOther(other) }
                report.map("state/activity/@token=\(token)", writtenTokenDetails[index])
            } else {
                addOther(token.rawValue)
                report.map("state/activity/@token=\(token)", "rpid other \"\(token)\" (no table row)")
            }
        }
        if let custom = effective.custom {
            if extended {
                addOther(custom)
                report.map("state/activity/custom", "rpid other \"\(custom)\"")
            } else {
                report.drop("state/activity/custom", Self.beyondTheRow)
            }
        }
        // RFC 4480 §3.2 (and its schema): <unknown/> stands alone in its <activities>, so the
        // Unknown class marker and any token travel in two elements.
        var unknownMarker: RPIDTokens?
        if values.count > 1, let unknown = (0..<tokenCount).first(where: { values[$0].isToken("unknown") }) {
            values.remove(at: unknown)
            unknownMarker = RPIDTokens(values: [.token("unknown")])
        }
        // The meeting subject, the activity's only note: made as a one-element array (an
        // append to the empty array ran the general code that grows one).
        var subjectNotes: [PIDFNote] = []

        // Moved out (the last use of the effective state), not copied.
        if let state = effective.state.take() {
            if let subject = state.meetingSubject, !subject.isEmpty {
                // RFC 4480 §3.2: a note on the activities element; with no activity to carry
                // it there is no element for it.
                if values.isEmpty {
                    report.drop("state/meetingSubject", "RFC 4480 puts it as a note on the activities, and this state writes none")
                } else {
                    subjectNotes = [PIDFNote(subject)]
                    report.map("state/meetingSubject", "rpid activities note")
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
            // Only reported (each read a field out of the state's box).
            if Report.keepsEntries {
                reportDroppedState(state, report: &report)
            }
        }
        // Swapped in (the compiler cannot `consume` a variable the functions above capture).
        var activities = RPIDTokens(notes: subjectNotes)
        swap(&activities.values, &values)
        // Both moved in (appended as they were, each was copied and the original released later),
        // the array made as a literal (appended to the empty array, it grew through the general
        // code that copies an array). A marker is only split off an activity with other values.
        if !activities.values.isEmpty {
            if let marker = unknownMarker.take() {
                personActivities = [consume marker, consume activities]
            } else {
                personActivities = [consume activities]
            }
        }

        // Categories read in place by index (a `for category in` loop copies
        // each one, payload and all); a case binding copies only its payload.
        for i in doc.categories.indices {
            switch doc.categories[i].payload {
            case .note(let note):
                // Each body's fields read where they lie (a `for body in` loop copied each body).
                let bodies = note.bodies
                for j in bodies.indices where !bodies[j].text.isEmpty {
                    if bodies[j].type == "OOF", extended {
                        personActivities.append(outOfOfficeActivity(bodies[j], report: &report))
                    } else if bodies[j].type == "OOF" {
                        // Without the extensions the out-of-office text is a person note (RFC 4479
                        // §3.1), not an activity beside the row's.
                        person.notes.append(PIDFNote(bodies[j].text))
                        report.map("note[OOF]", "person note")
                        if bodies[j].startTime != nil || bodies[j].endTime != nil {
                            report.drop("note[OOF]/@startTime|@endTime", "a person note has no period; rpid-extensions writes the out-of-office activity with from/until")
                        }
                    } else {
                        person.notes.appendFirstAsLiteral(PIDFNote(bodies[j].text))
                        report.map("note[\(bodies[j].type ?? "personal")]", "person note")
                    }
                }
            case .contactCard(let card):
                // The fields read taken out before any call, as the calendar's below.
                let photo = card.photos.first(where: { $0.uri != nil })?.uri, home = card.urls.first?.uri
                let named = !card.displayNames.isEmpty
                person.cipid.displayNames = displayName.map { [PIDFNote($0)] } ?? []
                if let photo {
                    person.cipid.icon = photo
                    report.map("contactCard/photo", "cipid icon")
                }
                if let home {
                    person.cipid.homepage = home
                    report.map("contactCard/url", "cipid homepage")
                }
                if named { report.map("contactCard/displayName", "cipid display-name") }
                if Report.keepsEntries { reportDroppedCard(card, report: &report) }
            case .calendarData(let calendar):
                // The two fields read taken out before any call (read after one, the whole
                // calendar was copied out of its box to keep it).
                let freeBusy = calendar.freeBusy, hasWorkingHours = calendar.hasWorkingHours
                if let freeBusy, extended {
                    personActivities += self.activities(
                        fromFreeBusy: freeBusy, instance: doc.categories[i].instance ?? 0, report: &report)
                } else if freeBusy != nil {
                    report.drop("calendarData/freeBusy", Self.beyondTheRow)
                }
                if hasWorkingHours {
                    report.drop("calendarData/WorkingHours", "RPID has no working-hours element")
                }
                report.drop("calendarData/@mailboxID", "the mailbox the calendar is read from (MS-PRES 2.2.2.7.8); RPID has no element for it")
            case .services(let services):
                let caps = capabilities(services)
                if !caps.flags.isEmpty {
                    status.capabilities = caps
                    report.map("services", "caps:servcaps " + caps.flags.map(\.name).joined(separator: " "))
                }
            default:
                break
            }
        }
        reportUnmappedCategories(doc, dialect: dialect, report: &report)

        // The document made once, from its parts (filled in and then returned, it was copied),
        // the status and person moved into it: swapped out of the variables the conversion
        // filled (which the compiler cannot `consume`), consumed from fresh ones.
        // Whether the person has RPID, told from its parts (the RPID made from them tested each
        // of its elements in its box).
        let hasRPID = !personActivities.isEmpty || !timeOffsets.isEmpty || placeType != nil || placeIs != nil
            || userInput != nil
        person.rpid = RPID(
            activities: consume personActivities, placeType: consume placeType, placeIs: consume placeIs,
            timeOffsets: consume timeOffsets, userInput: consume userInput)
        var persons: [PIDFPerson] = []
        if hasRPID || !person.cipid.isEmpty || !person.notes.isEmpty {
            var moved = PIDFPerson(id: "")
            swap(&moved, &person)
            persons = [consume moved]
        }
        var tupleStatus = PIDFStatus()
        swap(&tupleStatus, &status)
        let tuple = PIDFTuple(id: "t0", status: consume tupleStatus, contact: PIDFContact(uri: doc.uri))
        return PIDFDocument(entity: doc.uri, tuples: [consume tuple], persons: consume persons)
    }

    /// The Microsoft dialect's document: basic, the table's activity and the display name.
    /// Out of line: the gateway's watchers get the RFC dialect, and this code kept in the
    /// conversion's body was fetched with it.
    @inline(never)
    private func microsoftPIDF<Report: MappingReporting>(
        _ doc: CategoriesDocument, status: PIDFStatus, tableActivity: String?, hasToken: Bool,
        displayName: String?, report: inout Report
    ) -> PIDFDocument {
        var status = status
        status.rpid.legacyActivities = tableActivity.map { [$0] } ?? []
        if hasToken { report.drop("state/activity/@token", "the Microsoft dialect carries only the 3.7.5.4 activity") }
        reportUnmappedCategories(doc, dialect: .microsoft, report: &report)
        return PIDFDocument(
            entity: doc.uri, tuples: [PIDFTuple(id: "0", status: status)],
            cipid: CIPID(displayNames: displayName.map { [PIDFNote($0)] } ?? []))
    }

    /// An out-of-office note's activity: other "out-of-office" over the note's period, with the
    /// note. Out of line: a rare note, whose code in the conversion's body was fetched with it.
    @inline(never)
    private func outOfOfficeActivity<Report: MappingReporting>(_ body: MSNote.Body, report: inout Report) -> RPIDTokens {
        report.map("note[OOF]", "rpid activities (other out-of-office, from/until) with the note")
        return RPIDTokens(
            from: body.startTime, until: body.endTime, notes: [PIDFNote(body.text)],
            values: [.other(MSActivityToken.outOfOffice.rawValue)])
    }

    /// The first display name of the contact cards, in document order: the one CIPID carries
    /// (an array of them all cost two allocations per conversion to keep one).
    private func firstContactDisplayName(_ doc: CategoriesDocument) -> String? {
        for i in doc.categories.indices {
            guard case .contactCard(let card) = doc.categories[i].payload else { continue }
            if let first = card.displayNames.first { return first.text }
        }
        return nil
    }

    private func capabilities(_ services: MSServices) -> ServiceCapabilities {
        // The table, services and capabilities read in place through their buffers (by
        // index from the arrays, each row's strings and each service's capability array were
        // copied out per row). Names are compared by length first: most differ in length, and
        // that test is a load where a string comparison is a call.
        func same(_ a: String, _ b: String) -> Bool { a.utf8.count == b.utf8.count && a == b }
        /// `render == true || capture == true`, the first attribute of each key read in its
        /// array (the getters copied the capability and searched its attributes once per key).
        func rendersOrCaptures(_ attributes: UnsafeBufferPointer<MSCapability.Attribute>) -> Bool {
            var sawRender = false, sawCapture = false
            for a in attributes.indices {
                if !sawRender, same(attributes[a].key, "render") {
                    sawRender = true
                } else if !sawCapture, same(attributes[a].key, "capture") {
                    sawCapture = true
                } else {
                    continue
                }
                if Bool(xsd: attributes[a].value) == true { return true }
            }
            return false
        }
        var flags: [ServiceCapabilities.Flag] = []
        tables.capabilities.withUnsafeBufferPointer { rows in
            // One pass over the services' capabilities, each marking the rows of its name when
            // it renders or captures (asked once per capability, only when a row names it),
            // instead of a search of all of them for each row.
            withUnsafeTemporaryAllocation(of: Bool.self, capacity: rows.count) { on in
                on.initialize(repeating: false)
                var any = false
                for s in services.services.indices {
                    services.services[s].capabilities.withUnsafeBufferPointer { capabilities in
                        for c in capabilities.indices {
                            var asked = false, isOn = false
                            for r in rows.indices where !on[r] && same(rows[r].ms, capabilities[c].name) {
                                if !asked {
                                    asked = true
                                    isOn = capabilities[c].sortedAttributes.withUnsafeBufferPointer(rendersOrCaptures)
                                }
                                on[r] = isOn
                                any = any || isOn
                            }
                        }
                    }
                }
                guard any else { return }
                // The flags in table order, the first row for each flag.
                flags.reserveCapacity(rows.count)
                rows: for r in rows.indices where on[r] {
                    for f in flags.indices where same(flags[f].name, rows[r].caps) { continue rows }
                    flags.append(.init(rows[r].caps, true))
                }
            }
        }
        return ServiceCapabilities(flags: flags)
    }

    private func reportDroppedState<Report: MappingReporting>(_ state: MSState, report: inout Report) {
        if state.timeZoneAbbreviation != nil { report.drop("state/timeZoneAbbreviation", "RPID time-offset has one description; the name is kept") }
        if state.device != nil { report.drop("state/device", "no RPID element for the kind of device") }
        if state.lastActive != nil { report.drop("state/@lastActive", "RPID user-input/@last-input needs the endpoint's input time, not the presentity's") }
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
                    report.drop(doc.categories[i].name.rawValue, "the Microsoft dialect carries only basic, activity and display name")
                }
            case .contactCard(let card):
                if dialect == .microsoft {
                    reportDroppedCard(card, report: &report)
                    if !card.photos.isEmpty || !card.urls.isEmpty {
                        report.drop("contactCard/photo|url", "the Microsoft dialect carries only basic, activity and display name")
                    }
                }
            case .calendarData:
                if dialect == .microsoft {
                    report.drop(doc.categories[i].name.rawValue, "the Microsoft dialect carries only basic, activity and display name")
                }
            case .device:
                report.drop(doc.categories[i].name.rawValue, "device capabilities reach PIDF through the services category")
            case .userProperties:
                report.drop(doc.categories[i].name.rawValue, "self-only server data (MS-PRES 2.2.2.7.4), not for watchers")
            case .other:
                report.drop(doc.categories[i].name.rawValue, "no PIDF equivalent")
            }
        }
    }
}
