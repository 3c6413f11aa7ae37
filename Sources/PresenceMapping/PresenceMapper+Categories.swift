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
        for i in doc.tuples.indices {
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
            if userInput == nil, let input = rpid.userInput { userInput = input.value }
            for activities in rpid.activities {
                // Cheapest tests first; no array is built to compare the values with.
                let isOOFNote = !activities.notes.isEmpty && (activities.from != nil || activities.until != nil)
                    && activities.values.count == 1 && activities.values[0] == .other(oofText)
                if let state = freeBusyState(of: activities), let from = activities.from, let until = activities.until {
                    calendarBlocks.append((state, from, until))
                    continue
                }
                if isOOFNote {
                    oofNotes.append(contentsOf: activities.notes.map {
                        MSNote.Body(text: $0.text, type: "OOF", startTime: activities.from, endTime: activities.until)
                    })
                    continue
                }
                for value in activities.values {
                    switch value {
                    case .token(let t, nil) where !tokens.contains(t): tokens.append(t)
                    case .other(let t, _) where !others.contains(t): others.append(t)
                    default: break
                    }
                }
                activityNotes += activities.notes
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
        let rowIndex = tables.pidfAvailability.firstIndex { row in
            switch row.basic {
            case .any: break
            case .open: guard basic == .open else { return false }
            case .closed: guard basic == .closed else { return false }
            case .none: guard basic == .none else { return false }
            }
            if let input = row.userInput, input != userInput { return false }
            switch row.activity {
            case .any: return true
            case .none: return tokens.isEmpty && others.isEmpty
            case .token(let t): return tokens.contains(t)
            case .other(let t): return others.contains(t)
            }
        }
        var state = MSState(type: .aggregateState, availability: rowIndex.map { tables.pidfAvailability[$0].availability })
        if let rowIndex { report.map("basic+activities+user-input", reverseRowDetails[rowIndex]) }

        // Token: an <other> text naming a token first, then RPID tokens by table order.
        let tokenIndex =
            tables.activityTokens.firstIndex { $0.other.map(others.contains) == true }
            ?? tables.activityTokens.firstIndex { $0.rpid.map(tokens.contains) == true && $0.other == nil }
        var activity = MSActivity(token: tokenIndex.map { tables.activityTokens[$0].token })
        if let tokenIndex { report.map("rpid activities", tokenRowDetails[tokenIndex]) }
        // Other texts that are neither class markers nor token texts are custom activities.
        if let custom = others.first(where: { !reservedOtherTexts.contains($0) }) {
            activity.custom = [.init(custom)]
            report.map("rpid activities/other", "custom activity \"\(custom)\"")
        }
        for t in tokens where !mappedRPIDTokens.contains(t) { report.drop("rpid activity \(t)", "no enhanced-presence equivalent") }
        if activity.token != nil || !activity.custom.isEmpty { state.activities = [activity] }

        if let subject = activityNotes.first?.text {
            state.meetingSubject = subject
            report.map("rpid activities/note", "state meetingSubject")
        }
        func readPerson(_ rpid: RPID) {
            if case .other(let location, _)? = rpid.placeType?.values.first {
                state.meetingLocation = location
                report.map("rpid place-type", "state meetingLocation")
            }
            if let note = rpid.placeIs?.notes.first?.text {
                state.endpointLocation = note
                report.map("rpid place-is/note", "state endpointLocation")
            }
            if let offset = rpid.timeOffsets.first {
                state.timeZoneBias = -offset.minutes
                state.timeZoneName = offset.description
                report.map("rpid time-offset", "state timeZoneBias \(-offset.minutes)")
            }
            if rpid.mood != nil { report.drop("rpid mood", "no enhanced-presence equivalent") }
            if rpid.sphere != nil { report.drop("rpid sphere", "no enhanced-presence equivalent") }
            if rpid.privacy != nil { report.drop("rpid privacy", "no enhanced-presence equivalent") }
        }
        if let person { readPerson(doc.persons[person].rpid) }
        output.categories.append(Category(name: .state, instance: 0, payload: .state(state)))

        // Notes: person notes (RFC 4479), then presence-level, then tuple notes; one language.
        var noteCount = 0
        var firstNote: PIDFNote?
        var englishNote: PIDFNote?
        func consider(_ notes: [PIDFNote]) {
            noteCount += notes.count
            for note in notes where englishNote == nil {
                if firstNote == nil { firstNote = note }
                if note.lang == nil || note.lang?.hasPrefix("en") == true { englishNote = note }
            }
        }
        if let person { consider(doc.persons[person].notes) }
        consider(doc.notes)
        for i in doc.tuples.indices { consider(doc.tuples[i].notes) }
        var bodies = oofNotes
        if let note = englishNote ?? firstNote {
            bodies.insert(MSNote.Body(text: note.text), at: 0)
            report.map("note", "note category (personal)")
            if noteCount > 1 { report.drop("note (\(noteCount - 1) more)", "the note category holds one personal note") }
        }
        if !oofNotes.isEmpty { report.map("rpid activities out-of-office", "note category (OOF)") }
        if !bodies.isEmpty { output.categories.append(Category(name: .note, instance: 0, payload: .note(MSNote(bodies: bodies)))) }

        if !calendarBlocks.isEmpty, let calendar = calendarCategory(entity: doc.entity, blocks: calendarBlocks, report: &report) {
            output.categories.append(calendar)
        }

        // Contact card from CIPID (person, tuple, or Microsoft's presence-level CIPID).
        // Read in place, in that order: the first display name, icon and homepage win.
        var card = ContactCard()
        var displayName: PIDFNote?
        var icon: String?
        var homepage: String?
        var anyCard = false
        var anyMapOrSound = false
        func take(_ cipid: CIPID) {
            if displayName == nil { displayName = cipid.displayNames.first }
            if icon == nil { icon = cipid.icon }
            if homepage == nil { homepage = cipid.homepage }
            if cipid.card != nil { anyCard = true }
            if cipid.map != nil || cipid.sound != nil { anyMapOrSound = true }
        }
        if let person { take(doc.persons[person].cipid) }
        take(doc.cipid)
        for i in doc.tuples.indices { take(doc.tuples[i].cipid) }
        if let name = displayName {
            card.displayNames = [.init(name.text)]
            report.map("cipid display-name", "contactCard displayName")
        }
        if let icon {
            card.photos = [.init(uri: icon)]
            report.map("cipid icon", "contactCard photo")
        }
        if let homepage {
            card.urls = [.init(type: "other", uri: homepage)]
            report.map("cipid homepage", "contactCard url")
        }
        if anyCard { report.drop("cipid card", "contactCard has no vCard link") }
        if anyMapOrSound { report.drop("cipid map/sound", "contactCard has no map or sound") }
        if displayName != nil || icon != nil || homepage != nil { output.categories.append(Category(name: .contactCard, instance: 0, payload: .contactCard(card))) }

        // Capabilities → services.
        if let caps = doc.tuples.lazy.compactMap(\.status.capabilities).first {
            var items: [MSCapability] = []
            for flag in caps.flags where flag.value {
                if let ms = tables.capabilities.first(where: { $0.caps == flag.name })?.ms {
                    items.append(MSCapability(name: ms, attributes: Self.renderAndCapture))
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
        if doc.linkedIdentities != nil { report.drop("linked-identities", "source data for linkedPICContacts, not a watcher category") }
        for e in doc.extensions { report.drop("{\(e.name.namespace)}\(e.name.local)", "unknown extension") }
        return (output, report)
    }

    /// msrtc.pidf → PIDF, through categories.
    public func pidf(from doc: MSRTCPresentity, dialect: PIDFDialect = .rfc) -> (PIDFDocument, MappingReport) {
        let (categories, first) = categories(from: doc)
        var (pidf, second) = pidf(from: categories, dialect: dialect)
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
