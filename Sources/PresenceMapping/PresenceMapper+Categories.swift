public import PresenceDocuments

extension PresenceMapper {
    /// PIDF/RPID/CIPID → categories (the spec has no table; `pidf-availability.tsv`
    /// and `activity-tokens.tsv` hold the product's decisions).
    ///
    /// The person element is the primary source (RFC 4479 §3.1); tuple status
    /// and tuple RPID (incl. Microsoft's pre-RFC `rpid-status`) are read too.
    public func categories(from doc: PIDFDocument) -> (CategoriesDocument, MappingReport) {
        var report = MappingReport()
        report.mapped.reserveCapacity(12)
        let output = categories(from: doc, report: &report)
        return (output, report)
    }

    /// PIDF → categories as ``categories(from:)`` converts them, without the
    /// report: for callers that discard it (the gateway's publications), no report text is built.
    public func categoriesDocument(from doc: PIDFDocument) -> CategoriesDocument {
        var none = NoMappingReport()
        return categories(from: doc, report: &none)
    }

    /// The conversion, noting what it does in `report`.
    private func categories<Report: MappingReporting>(from doc: PIDFDocument, report: inout Report) -> CategoriesDocument {
        var output = CategoriesDocument(uri: doc.entity)
        output.categories.reserveCapacity(4)

        // basic: open if any tuple is open, closed if any is closed, else none.
        var anyOpen = false
        var anyClosed = false
        // Tuples read in place by index (a `for tuple in` loop copies each one).
        for i in doc.tuples.indices {
            switch doc.tuples[i].status.basic {
            case .open?: anyOpen = true
            case .closed?: anyClosed = true
            case nil: break
            }
        }
        let basic: MappingTables.ReverseRow.Basic = anyOpen ? .open : anyClosed ? .closed : .none
        for i in doc.tuples.indices where Report.keepsEntries {
            guard let unrecognized = doc.tuples[i].status.unrecognizedBasic else { continue }
            report.drop("tuple[\(doc.tuples[i].id)]/status/basic", "\"\(unrecognized)\" is neither open nor closed (RFC 3863 4.1.4)")
        }

        // RPID from persons, tuples and devices (in that order, each read in
        // place rather than gathered into an array of copies); time-bound
        // out-of-office activities are notes.
        // The first person, read in place (not copied out of the array).
        let person: Int? = doc.persons.isEmpty ? nil : doc.persons.startIndex
        var tokens: [String] = []
        tokens.reserveCapacity(4)
        var others: [String] = []
        var activityNotes: [PIDFNote] = []
        var oofNotes: [MSNote.Body] = []
        var calendarBlocks: [(FreeBusyState, String, String)] = []
        var userInput: RPIDUserInput.Value?
        let oofText = MSActivityToken.outOfOffice.rawValue
        func scan(_ rpid: RPID) {
            if userInput == nil, let input = rpid.userInputValue { userInput = input }
            // Each activities element read in place (a `for activities in` loop copies every one).
            let list = rpid.activities
            for i in list.indices {
                // Cheapest tests first; no array is built to compare the values with.
                var isOOFNote = false
                if !list[i].notes.isEmpty && (list[i].from != nil || list[i].until != nil) && list[i].values.count == 1,
                    case .other(let text, nil) = list[i].values[0]
                {
                    isOOFNote = text == oofText
                }
                // from and until first: without them no table row holds, and asking
                // freeBusyState would copy the element to hand it over.
                if let from = list[i].from, let until = list[i].until, let state = freeBusyState(of: list[i]) {
                    calendarBlocks.append((state, from, until))
                    continue
                }
                if isOOFNote {
                    for note in list[i].notes {
                        oofNotes.append(MSNote.Body(text: note.text, type: "OOF", startTime: list[i].from, endTime: list[i].until))
                    }
                    continue
                }
                // Each value's text read in place (a `switch` binding it copied the value out).
                for j in list[i].values.indices {
                    if let t = list[i].values[j].rpidToken {
                        if !tokens.contains(t) { tokens.append(t) }
                    } else if let t = list[i].values[j].otherText {
                        if !others.contains(t) { others.append(t) }
                    }
                }
                activityNotes += list[i].notes
            }
            for t in rpid.legacyActivities where !tokens.contains(t) { tokens.append(t) }
        }
        for i in doc.persons.indices { scan(doc.persons[i].rpid) }
        for i in doc.tuples.indices {
            scan(doc.tuples[i].rpid)
            scan(doc.tuples[i].status.rpid)
        }
        for i in doc.devices.indices { scan(doc.devices[i].rpid) }

        // Availability: the first row of pidf-availability.tsv that holds.
        // The rows are read in place by index (a closure over the rows copies each one it is handed).
        let reverseRows = tables.pidfAvailability
        var rowIndex: Int?
        rows: for i in reverseRows.indices {
            switch reverseRows[i].basic {
            case .any: break
            case .open: guard basic == .open else { continue rows }
            case .closed: guard basic == .closed else { continue rows }
            case .none: guard basic == .none else { continue rows }
            }
            if let input = reverseRows[i].userInput, input != userInput { continue }
            let holds: Bool
            switch reverseRows[i].activity {
            case .any: holds = true
            case .none: holds = tokens.isEmpty && others.isEmpty
            case .token(let t): holds = tokens.contains(t)
            case .other(let t): holds = others.contains(t)
            }
            if holds {
                rowIndex = i
                break
            }
        }
        let availability = rowIndex.map { reverseRows[$0].availability }
        if let rowIndex { report.map("basic+activities+user-input", reverseRowDetails[rowIndex]) }

        // Token: an <other> text naming a token first, then RPID tokens by table order.
        let tokenRows = tables.activityTokens
        var tokenIndex: Int?
        for i in tokenRows.indices {
            if let other = tokenRows[i].other, others.contains(other) {
                tokenIndex = i
                break
            }
        }
        if tokenIndex == nil {
            for i in tokenRows.indices where tokenRows[i].other == nil {
                if let rpid = tokenRows[i].rpid, tokens.contains(rpid) {
                    tokenIndex = i
                    break
                }
            }
        }
        var activity = MSActivity(token: tokenIndex.map { tokenRows[$0].token })
        if let tokenIndex { report.map("rpid activities", tokenRowDetails[tokenIndex]) }
        // Other texts that are neither class markers nor token texts are custom activities.
        if let custom = others.first(where: { !reservedOtherTexts.contains($0) }) {
            activity.custom = [.init(custom)]
            report.map("rpid activities/other", "custom activity \"\(custom)\"")
        }
        for t in tokens where Report.keepsEntries && !mappedRPIDTokens.contains(t) { report.drop("rpid activity \(t)", "no enhanced-presence equivalent") }
        let activities = activity.token != nil || !activity.custom.isEmpty ? [activity] : []

        let meetingSubject = activityNotes.first?.text
        if meetingSubject != nil { report.map("rpid activities/note", "state meetingSubject") }
        // The first person's RPID, read in place (the parts it needs read in its box, not
        // copied out element by element); the state is made once from what it gives.
        var meetingLocation: String?
        var endpointLocation: String?
        var timeZoneBias: Int?
        var timeZoneName: String?
        if let person {
            let rpid = doc.persons[person].rpid
            if case .other(let location, _)? = rpid.firstPlaceTypeValue {
                meetingLocation = location
                report.map("rpid place-type", "state meetingLocation")
            }
            if let note = rpid.firstPlaceIsNoteText {
                endpointLocation = note
                report.map("rpid place-is/note", "state endpointLocation")
            }
            let offsets = rpid.timeOffsets
            if !offsets.isEmpty {
                timeZoneBias = -offsets[0].minutes
                timeZoneName = offsets[0].description
                report.map("rpid time-offset", "state timeZoneBias \(-offsets[0].minutes)")
            }
            if rpid.hasMood { report.drop("rpid mood", "no enhanced-presence equivalent") }
            if rpid.hasSphere { report.drop("rpid sphere", "no enhanced-presence equivalent") }
            if rpid.hasPrivacy { report.drop("rpid privacy", "no enhanced-presence equivalent") }
        }
        let state = MSState(
            type: .aggregateState, availability: availability, activities: activities, endpointLocation: endpointLocation,
            meetingSubject: meetingSubject, meetingLocation: meetingLocation, timeZoneBias: timeZoneBias,
            timeZoneName: timeZoneName)
        output.categories.append(Category(name: .state, instance: 0, payload: .state(consume state)))

        // Notes: person notes (RFC 4479), then presence-level, then tuple notes; one language.
        var noteCount = 0
        var firstNote: PIDFNote?
        var englishNote: PIDFNote?
        func consider(_ notes: [PIDFNote]) {
            noteCount += notes.count
            // Absence tested by matching the case, as for the capabilities below.
            for note in notes {
                if case .some = englishNote { break }
                if case .none = firstNote { firstNote = note }
                if note.lang == nil || note.lang?.hasPrefix("en") == true { englishNote = note }
            }
        }
        if let person { consider(doc.persons[person].notes) }
        consider(doc.notes)
        for i in doc.tuples.indices { consider(doc.tuples[i].notes) }
        var bodies: [MSNote.Body]
        if let note = englishNote ?? firstNote {
            // The personal note first, made as a one-element array and the out-of-office notes
            // appended when there are any (inserted before them, it went through the general
            // replacement of a range, even in an empty array).
            bodies = [MSNote.Body(text: note.text)]
            if !oofNotes.isEmpty { bodies += oofNotes }
            report.map("note", "note category (personal)")
            if noteCount > 1 { report.drop("note (\(noteCount - 1) more)", "the note category holds one personal note") }
        } else {
            bodies = oofNotes
        }
        if !oofNotes.isEmpty { report.map("rpid activities out-of-office", "note category (OOF)") }
        if !bodies.isEmpty { output.categories.append(Category(name: .note, instance: 0, payload: .note(MSNote(bodies: bodies)))) }

        if !calendarBlocks.isEmpty, let calendar = calendarCategory(entity: doc.entity, blocks: calendarBlocks, report: &report) {
            output.categories.append(calendar)
        }

        // Contact card from CIPID (person, tuple, or Microsoft's presence-level CIPID).
        // Read in place, in that order: the first display name, icon and homepage win.
        var displayName: PIDFNote?
        var icon: String?
        var homepage: String?
        var anyCard = false
        var anyMapOrSound = false
        func take(_ cipid: CIPID) {
            // Presence tested by matching the case, as for the capabilities below.
            if case .none = displayName { displayName = cipid.displayNames.first }
            if case .none = icon { icon = cipid.icon }
            if case .none = homepage { homepage = cipid.homepage }
            if case .some = cipid.card { anyCard = true }
            if case .some = cipid.map { anyMapOrSound = true }
            if case .some = cipid.sound { anyMapOrSound = true }
        }
        if let person { take(doc.persons[person].cipid) }
        take(doc.cipid)
        for i in doc.tuples.indices { take(doc.tuples[i].cipid) }
        if case .some = displayName { report.map("cipid display-name", "contactCard displayName") }
        if case .some = icon { report.map("cipid icon", "contactCard photo") }
        if case .some = homepage { report.map("cipid homepage", "contactCard url") }
        if anyCard { report.drop("cipid card", "contactCard has no vCard link") }
        if anyMapOrSound { report.drop("cipid map/sound", "contactCard has no map or sound") }
        if displayName != nil || icon != nil || homepage != nil {
            // Made in place in its payload (a card built in a variable first is copied into the payload's box).
            output.categories.append(Category(name: .contactCard, instance: 0, payload: .contactCard(ContactCard(
                displayNames: displayName.map { [.init($0.text)] } ?? [],
                urls: homepage.map { [.init(type: "other", uri: $0)] } ?? [],
                photos: icon.map { [.init(uri: $0)] } ?? []))))
        }

        // Capabilities → services.
        // The first tuple with capabilities, and the capability table, read in
        // place by index (a closure would capture a copy of the document).
        // Presence tested by matching the case: `!= nil` took the `Equatable`
        // comparison, which copied the capabilities and destroyed them again.
        var capsTuple: Int?
        for i in doc.tuples.indices {
            if case .some = doc.tuples[i].status.capabilities {
                capsTuple = i
                break
            }
        }
        if let capsTuple, let caps = doc.tuples[capsTuple].status.capabilities {
            var items: [MSCapability] = []
            items.reserveCapacity(caps.flags.count)
            let rows = tables.capabilities
            for flag in caps.flags where flag.value {
                var row: Int?
                for r in rows.indices where rows[r].caps == flag.name {
                    row = r
                    break
                }
                if let row {
                    items.append(MSCapability(name: rows[row].ms, sortedAttributes: Self.renderAndCapture))
                } else {
                    report.drop("caps \(flag.name)", "no enhanced-presence capability")
                }
            }
            if !caps.lists.isEmpty { report.drop("caps lists", "services describe media, not methods or extensions") }
            if !items.isEmpty {
                output.categories.append(Category(
                    name: .services, instance: 0,
                    payload: .services(MSServices(services: [.init(uri: doc.entity, capabilities: items)]))))
                report.map("caps:servcaps", "services capabilities")
            }
        }
        if case .some = doc.linkedIdentities { report.drop("linked-identities", "source data for linkedPICContacts, not a watcher category") }
        if case .some = doc.cid { report.drop("cid", "a contact id for photo URLs (MS-PRES 2.2.2.8.1), not a watcher category") }
        for e in doc.extensions { report.drop("{\(e.name.namespace)}\(e.name.local)", "unknown extension") }
        report.map("presence/@entity", "categories/@uri")
        if Report.keepsEntries { reportDroppedPIDFParts(doc, report: &report) }
        return output
    }

    /// The parts of a PIDF document no category holds, each with the reason: tuple ids,
    /// contacts, timestamps, device ids and extensions (RFC 3863 §4.1.2, §4.1.5, §4.1.7, §4.4;
    /// RFC 4479 §5.1), person and device ids, timestamps and extensions, and the RPID elements
    /// enhanced presence has no place for. Only reported: nothing here changes the output.
    private func reportDroppedPIDFParts<Report: MappingReporting>(_ doc: PIDFDocument, report: inout Report) {
        for tuple in doc.tuples {
            let at = "tuple[\(tuple.id)]"
            report.drop("\(at)/@id", "tuple ids are local to the PIDF document (RFC 3863 4.1.2); categories have none")
            if let contact = tuple.contact {
                report.drop("\(at)/contact", "the contact address of this tuple (RFC 3863 4.1.5): enhanced presence routes to the publisher's URI")
                if contact.priority != nil {
                    report.drop("\(at)/contact/@priority", "a priority among the tuples' contacts (RFC 3863 4.1.5): categories have one state")
                }
            }
            if tuple.timestamp != nil {
                report.drop("\(at)/timestamp", "RFC 3863 4.1.7 time of the change; the server stamps publishTime itself (MS-PRES 1.3.1.1)")
            }
            if !tuple.deviceIDs.isEmpty { report.drop("\(at)/deviceID", "RFC 4479 device reference; categories have no devices for watchers") }
            for e in tuple.status.extensions {
                report.drop("\(at)/status/{\(e.name.namespace)}\(e.name.local)", "unknown status extension (RFC 3863 4.4)")
            }
            for e in tuple.extensions { report.drop("\(at)/{\(e.name.namespace)}\(e.name.local)", "unknown tuple extension (RFC 3863 4.4)") }
            reportDroppedRPID(tuple.rpid, at: at, report: &report)
        }
        for (index, person) in doc.persons.enumerated() {
            let at = "person[\(person.id)]"
            report.drop("\(at)/@id", "person ids are local to the PIDF document (RFC 4479 3.1)")
            if index > 0 {
                report.drop("\(at)/place-type|place-is|time-offset|mood|sphere|privacy", "only the first person's are read (RFC 4479 3.1: one person)")
            }
            if person.timestamp != nil {
                report.drop("\(at)/timestamp", "RFC 4479 time of the change; the server stamps publishTime itself (MS-PRES 1.3.1.1)")
            }
            for e in person.extensions { report.drop("\(at)/{\(e.name.namespace)}\(e.name.local)", "unknown person extension (RFC 4479 5.1)") }
            reportDroppedRPID(person.rpid, at: at, report: &report)
        }
        for device in doc.devices {
            report.drop("device[\(device.id)]", "RFC 4479 3.3 devices: categories for watchers describe the person, not devices")
        }
    }

    /// RPID elements no category holds (RFC 4480 §3.3 class, §3.9 relationship, §3.11
    /// service-class, §3.12 status-icon; the place-is media and the user-input attributes).
    private func reportDroppedRPID<Report: MappingReporting>(_ rpid: RPID, at: String, report: inout Report) {
        if rpid.class != nil { report.drop("\(at)/class", "RFC 4480 3.3 class: no enhanced-presence equivalent") }
        if rpid.relationship != nil { report.drop("\(at)/relationship", "RFC 4480 3.9: no enhanced-presence equivalent") }
        if rpid.serviceClass != nil { report.drop("\(at)/service-class", "RFC 4480 3.11: no enhanced-presence equivalent") }
        if rpid.statusIcon != nil { report.drop("\(at)/status-icon", "RFC 4480 3.12: contactCard photos come from the card, not the status") }
        if let placeIs = rpid.placeIs, placeIs.audio != nil || placeIs.video != nil || placeIs.text != nil {
            report.drop("\(at)/place-is/audio|video|text", "RFC 4480 3.7 media conditions: no enhanced-presence equivalent")
        }
        if let input = rpid.userInput, input.idleThreshold != nil || input.lastInput != nil {
            report.drop("\(at)/user-input/@idle-threshold|@last-input", "RFC 4480 3.15: the availability class is kept, not the times")
        }
        for activities in rpid.activities where activities.id != nil || activities.from != nil || activities.until != nil {
            if activities.from == nil || activities.until == nil {
                report.drop("\(at)/activities/@id|@from|@until", "RFC 4480 3.2 validity attributes: the state holds the current activity")
            }
        }
    }

    /// msrtc.pidf → PIDF, through categories.
    public func pidf(
        from doc: MSRTCPresentity, dialect: PIDFDialect = .rfc, rpidExtensions: Bool = false
    ) -> (PIDFDocument, MappingReport) {
        let (categories, first) = categories(from: doc)
        var (pidf, second) = pidf(from: categories, dialect: dialect, rpidExtensions: rpidExtensions)
        pidf.entity = categories.uri
        return (pidf, first + second)
    }

    /// PIDF → msrtc.pidf, through categories.
    public func msrtc(from doc: PIDFDocument) -> (MSRTCPresentity, MappingReport) {
        let (categories, first) = categories(from: doc)
        let (msrtc, second) = msrtc(from: categories)
        return (msrtc, first + second)
    }
}
