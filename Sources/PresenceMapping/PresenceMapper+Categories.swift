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

    /// The aggregate `state` that ``categoriesDocument(from:)`` writes for `doc`, alone: for the
    /// gateway's composition of several sources, which aggregates their states
    /// (``StateAggregation``).
    public func state(from doc: PIDFDocument) -> MSState {
        var none = NoMappingReport()
        let category = stateRule(PIDFFacts.gathered(from: doc, freeBusy: tables.freeBusy), report: &none)
        guard case .state(let state) = category.payload else { return MSState(type: .aggregateState) }
        return state
    }

    /// The conversion, noting what it does in `report`: the facts gathered in one pass, then
    /// one rule per category, in the order the categories are written.
    private func categories<Report: MappingReporting>(from doc: PIDFDocument, report: inout Report)
        -> CategoriesDocument
    {
        let facts = PIDFFacts.gathered(from: doc, freeBusy: tables.freeBusy)
        let entity = doc.entity
        // Gathered in a local array and made into the document at the end: appended to the
        // document's array, each category was copied in and the original destroyed (callgrind).
        var categories: [Category] = []
        categories.reserveCapacity(5)
        categories.append(stateRule(facts, report: &report))
        if let note = noteRule(facts, report: &report) { categories.append(note) }
        if let calendar = calendarRule(facts, entity: entity, report: &report) { categories.append(calendar) }
        if let card = contactCardRule(facts, report: &report) { categories.append(card) }
        if let services = capabilitiesRule(facts, entity: entity, report: &report) { categories.append(services) }
        if doc.linkedIdentities != nil {
            report.drop("linked-identities", "source data for linkedPICContacts, not a watcher category")
        }
        if doc.cid != nil {
            report.drop("cid", "a contact id for photo URLs (MS-PRES 2.2.2.8.1), not a watcher category")
        }
        for e in doc.extensions { report.drop("{\(e.name.namespace)}\(e.name.local)", "unknown extension") }
        report.map("presence/@entity", "categories/@uri")
        if Report.keepsEntries { reportDroppedPIDFParts(doc, report: &report) }
        return CategoriesDocument(uri: entity, categories: categories)
    }

    // MARK: - Rules

    /// The aggregate `state` ([MS-PRES] §2.2.2.7.1): availability, activity, and from the
    /// first person's RPID the meeting subject, location and time zone.
    func stateRule<Report: MappingReporting>(_ facts: PIDFFacts, report: inout Report) -> Category {
        let (availability, activity) = omaReadRule(
            facts, availability: availabilityRule(facts, report: &report),
            activity: activityRule(facts, report: &report), report: &report)
        if facts.activityNote != nil { report.map("rpid activities/note", "state meetingSubject") }
        var meetingLocation: String?
        if let text = facts.placeTypeText {
            meetingLocation = text
            report.map("rpid place-type", "state meetingLocation")
        }
        if facts.placeIsNote != nil { report.map("rpid place-is/note", "state endpointLocation") }
        // RFC 4480 §3.14 gives minutes from UTC; a Windows bias is UTC minus local.
        let bias = facts.timeOffset.map { -$0.minutes }
        if let bias { report.map("rpid time-offset", "state timeZoneBias \(bias)") }
        if facts.hasMood { report.drop("rpid mood", "no enhanced-presence equivalent") }
        if facts.hasSphere { report.drop("rpid sphere", "no enhanced-presence equivalent") }
        if facts.hasPrivacy { report.drop("rpid privacy", "no enhanced-presence equivalent") }
        let state = MSState(
            type: .aggregateState, availability: availability, activities: activity.map { [$0] } ?? [],
            endpointLocation: facts.placeIsNote, meetingSubject: facts.activityNote, meetingLocation: meetingLocation,
            timeZoneBias: bias, timeZoneName: facts.timeOffset?.description)
        return Category(name: .state, instance: 0, payload: .state(state))
    }

    /// The availability: that of the first `pidf-availability.tsv` row whose basic, activity
    /// and user input hold; nil when none does.
    func availabilityRule<Report: MappingReporting>(_ facts: PIDFFacts, report: inout Report) -> UInt32? {
        for unrecognized in facts.unrecognizedBasics {
            report.drop(
                "tuple[\(unrecognized.tupleID)]/status/basic",
                "\"\(unrecognized.text)\" is neither open nor closed (RFC 3863 4.1.4)")
        }
        let rows = tables.pidfAvailability
        for index in rows.indices where facts.hold(rows[index].basic, rows[index].activity, rows[index].userInput) {
            report.map("basic+activities+user-input", reverseRowDetails[index])
            return rows[index].availability
        }
        return nil
    }

    /// The activity: the token of the first `activity-tokens.tsv` row whose other text is
    /// present, else of the first row without one whose RPID token is; an other text that is
    /// neither a class marker nor a token's text is the custom activity. nil when neither.
    func activityRule<Report: MappingReporting>(_ facts: PIDFFacts, report: inout Report) -> MSActivity? {
        let rows = tables.activityTokens
        let index =
            rows.indices.first { rows[$0].other.map(facts.others.contains) ?? false }
            ?? rows.indices.first { rows[$0].other == nil && rows[$0].rpid.map(facts.tokens.contains) ?? false }
        var activity = MSActivity(token: index.map { rows[$0].token })
        if let index { report.map("rpid activities", tokenRowDetails[index]) }
        if let custom = facts.others.first(where: { !reservedOtherTexts.contains($0) }) {
            activity.custom = [.init(custom)]
            report.map("rpid activities/other", "custom activity \"\(custom)\"")
        }
        for token in facts.tokens where Report.keepsEntries && !mappedRPIDTokens.contains(token) {
            report.drop("rpid activity \(token)", "no enhanced-presence equivalent")
        }
        return activity.token != nil || !activity.custom.isEmpty ? activity : nil
    }

    /// The `note` category ([MS-PRES] §2.2.2.7.5): one personal note, English (or without a
    /// language) first, then the out-of-office notes; nil when there are none.
    func noteRule<Report: MappingReporting>(_ facts: PIDFFacts, report: inout Report) -> Category? {
        var bodies: [MSNote.Body] = []
        let personal = facts.notes.first { $0.lang == nil || $0.lang?.hasPrefix("en") == true } ?? facts.notes.first
        if let personal {
            bodies.append(MSNote.Body(text: personal.text))
            report.map("note", "note category (personal)")
            if facts.notes.count > 1 {
                report.drop("note (\(facts.notes.count - 1) more)", "the note category holds one personal note")
            }
        }
        if !facts.outOfOfficeNotes.isEmpty {
            bodies += facts.outOfOfficeNotes
            report.map("rpid activities out-of-office", "note category (OOF)")
        }
        return bodies.isEmpty ? nil : Category(name: .note, instance: 0, payload: .note(MSNote(bodies: bodies)))
    }

    /// The `calendarData` category ([MS-PRES] §2.2.2.7.8) from the calendar blocks.
    func calendarRule<Report: MappingReporting>(_ facts: PIDFFacts, entity: String, report: inout Report) -> Category? {
        guard !facts.calendarBlocks.isEmpty else { return nil }
        return calendarCategory(entity: entity, blocks: facts.calendarBlocks, report: &report)
    }

    /// The `contactCard` category ([MS-PRES] §2.2.2.7.6) from CIPID (RFC 4482): display
    /// name, photo and URL; nil when CIPID gives none of them.
    func contactCardRule<Report: MappingReporting>(_ facts: PIDFFacts, report: inout Report) -> Category? {
        if facts.displayName != nil { report.map("cipid display-name", "contactCard displayName") }
        if facts.icon != nil { report.map("cipid icon", "contactCard photo") }
        if facts.homepage != nil { report.map("cipid homepage", "contactCard url") }
        if facts.hasCardLink { report.drop("cipid card", "contactCard has no vCard link") }
        if facts.hasMapOrSound { report.drop("cipid map/sound", "contactCard has no map or sound") }
        guard facts.displayName != nil || facts.icon != nil || facts.homepage != nil else { return nil }
        let card = ContactCard(
            displayNames: facts.displayName.map { [.init($0)] } ?? [],
            urls: facts.homepage.map { [.init(type: "other", uri: $0)] } ?? [],
            photos: facts.icon.map { [.init(uri: $0)] } ?? [])
        return Category(name: .contactCard, instance: 0, payload: .contactCard(card))
    }

    /// The `services` category ([MS-PRES] §2.2.2.7.3): each true RFC 5196 flag with a
    /// `capabilities.tsv` row becomes that row's capability, rendered and captured.
    func capabilitiesRule<Report: MappingReporting>(_ facts: PIDFFacts, entity: String, report: inout Report)
        -> Category?
    {
        guard let caps = facts.capabilities else { return nil }
        var items: [MSCapability] = []
        items.reserveCapacity(caps.flags.count)
        for flag in caps.flags where flag.value {
            if let row = tables.capabilities.first(where: { $0.caps == flag.name }) {
                items.append(MSCapability(name: row.ms, sortedAttributes: Self.renderAndCapture))
            } else {
                report.drop("caps \(flag.name)", "no enhanced-presence capability")
            }
        }
        if !caps.lists.isEmpty { report.drop("caps lists", "services describe media, not methods or extensions") }
        guard !items.isEmpty else { return nil }
        report.map("caps:servcaps", "services capabilities")
        return Category(
            name: .services, instance: 0,
            payload: .services(MSServices(services: [.init(uri: entity, capabilities: items)])))
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
                report.drop(
                    "\(at)/contact",
                    "the contact address of this tuple (RFC 3863 4.1.5): enhanced presence routes to the publisher's URI"
                )
                if contact.priority != nil {
                    report.drop(
                        "\(at)/contact/@priority",
                        "a priority among the tuples' contacts (RFC 3863 4.1.5): categories have one state")
                }
            }
            if tuple.timestamp != nil {
                report.drop(
                    "\(at)/timestamp",
                    "RFC 3863 4.1.7 time of the change; the server stamps publishTime itself (MS-PRES 1.3.1.1)")
            }
            if !tuple.deviceIDs.isEmpty {
                report.drop("\(at)/deviceID", "RFC 4479 device reference; categories have no devices for watchers")
            }
            // OMA elements are reported by `omaReadRule` (oma-extensions.tsv).
            for e in tuple.status.extensions where e.name.namespace != NS.omaPres {
                report.drop(
                    "\(at)/status/{\(e.name.namespace)}\(e.name.local)", "unknown status extension (RFC 3863 4.4)")
            }
            for e in tuple.extensions where e.name.namespace != NS.omaPres {
                report.drop("\(at)/{\(e.name.namespace)}\(e.name.local)", "unknown tuple extension (RFC 3863 4.4)")
            }
            reportDroppedRPID(tuple.rpid, at: at, report: &report)
        }
        for (index, person) in doc.persons.enumerated() {
            let at = "person[\(person.id)]"
            report.drop("\(at)/@id", "person ids are local to the PIDF document (RFC 4479 3.1)")
            if index > 0 {
                report.drop(
                    "\(at)/place-type|place-is|time-offset|mood|sphere|privacy",
                    "only the first person's are read (RFC 4479 3.1: one person)")
            }
            if person.timestamp != nil {
                report.drop(
                    "\(at)/timestamp",
                    "RFC 4479 time of the change; the server stamps publishTime itself (MS-PRES 1.3.1.1)")
            }
            for e in person.extensions where e.name.namespace != NS.omaPres {
                report.drop("\(at)/{\(e.name.namespace)}\(e.name.local)", "unknown person extension (RFC 4479 5.1)")
            }
            reportDroppedRPID(person.rpid, at: at, report: &report)
        }
        for device in doc.devices {
            report.drop(
                "device[\(device.id)]", "RFC 4479 3.3 devices: categories for watchers describe the person, not devices"
            )
        }
    }

    /// RPID elements no category holds (RFC 4480 §3.3 class, §3.9 relationship, §3.11
    /// service-class, §3.12 status-icon; the place-is media and the user-input attributes).
    private func reportDroppedRPID<Report: MappingReporting>(_ rpid: RPID, at: String, report: inout Report) {
        if rpid.class != nil { report.drop("\(at)/class", "RFC 4480 3.3 class: no enhanced-presence equivalent") }
        if rpid.relationship != nil {
            report.drop("\(at)/relationship", "RFC 4480 3.9: no enhanced-presence equivalent")
        }
        if rpid.serviceClass != nil {
            report.drop("\(at)/service-class", "RFC 4480 3.11: no enhanced-presence equivalent")
        }
        if rpid.statusIcon != nil {
            report.drop("\(at)/status-icon", "RFC 4480 3.12: contactCard photos come from the card, not the status")
        }
        if let placeIs = rpid.placeIs, placeIs.audio != nil || placeIs.video != nil || placeIs.text != nil {
            report.drop(
                "\(at)/place-is/audio|video|text", "RFC 4480 3.7 media conditions: no enhanced-presence equivalent")
        }
        if let input = rpid.userInput, input.idleThreshold != nil || input.lastInput != nil {
            report.drop(
                "\(at)/user-input/@idle-threshold|@last-input",
                "RFC 4480 3.15: the availability class is kept, not the times")
        }
        for activities in rpid.activities
        where activities.id != nil || activities.from != nil || activities.until != nil {
            if activities.from == nil || activities.until == nil {
                report.drop(
                    "\(at)/activities/@id|@from|@until",
                    "RFC 4480 3.2 validity attributes: the state holds the current activity")
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
