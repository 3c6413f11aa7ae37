import PresenceDocuments
import XMLBridge

/// What a PIDF/RPID/CIPID document says that the category rules read, gathered in one pass.
///
/// The person element is the primary source (RFC 4479 §3.1); tuples, tuple status (with
/// Microsoft's pre-RFC `rpid-status`, [MS-PRES] §2.2.2.8.1) and devices are read after it.
/// Where one value is kept (user input, place, time offset, contact card fields), the
/// first in that order wins. The rules in `PresenceMapper+Categories.swift` decide what
/// each fact becomes; nothing here looks at a mapping table except to tell a calendar
/// block (`freebusy.tsv`, handed in as its rows) from a current activity.
struct PIDFFacts {
    /// A tuple's `<basic>` that is neither open nor closed (RFC 3863 §4.1.4).
    struct UnrecognizedBasic {
        var tupleID: String
        var text: String
    }

    /// open if any tuple is open, closed if any is closed, else none (RFC 3863 §4.1.4).
    var basic: MappingTables.ReverseRow.Basic = .none
    var unrecognizedBasics: [UnrecognizedBasic] = []
    /// The first `<user-input>` value (RFC 4480 §3.15).
    var userInput: RPIDUserInput.Value?
    /// The current activities' RPID tokens (RFC 4480 §3.2, and `rpid-status` activities),
    /// each once, in document order.
    var tokens: [String] = []
    /// The current activities' `<other>` texts, each once, in document order.
    var others: [String] = []
    /// The first note of the current activities (RFC 4480 §3.2): what the person is doing.
    var activityNote: String?
    /// Out-of-office activities with a period and notes: each note, with the period.
    var outOfOfficeNotes: [MSNote.Body] = []
    /// Activities with from/until whose values are a `freebusy.tsv` row: (state, from, until).
    var calendarBlocks: [(FreeBusyState, String, String)] = []

    /// The first person's `<place-type>` other text (RFC 4480 §3.8).
    var placeTypeText: String?
    /// The first person's `<place-is>` note (RFC 4480 §3.7).
    var placeIsNote: String?
    /// The first person's first `<time-offset>` (RFC 4480 §3.14).
    var timeOffset: RPIDTimeOffset?
    /// Whether the first person has `<mood>`, `<sphere>`, `<privacy>` (RFC 4480 §3.5, §3.12, §3.9).
    var hasMood = false, hasSphere = false, hasPrivacy = false

    /// Notes of the first person (RFC 4479 §3.1), of the presence element and of the tuples.
    var notes: [PIDFNote] = []

    /// CIPID (RFC 4482) of the first person, of the presence element (Microsoft's), of the
    /// tuples: the first display name, icon and homepage.
    var displayName: String?
    var icon: String?
    var homepage: String?
    /// Whether any CIPID has `<card>`, or `<map>` or `<sound>`.
    var hasCardLink = false, hasMapOrSound = false

    /// The capabilities (RFC 5196) of the first tuple that has them.
    var capabilities: ServiceCapabilities?

    /// An OMA Presence SIMPLE extension element (`oma-extensions.tsv`): which, its basic
    /// (nil when it has none, or one neither open nor closed), and where it was.
    struct OMAFact {
        var element: MappingTables.OMAElement
        var basic: PIDFBasic?
        var path: String
    }
    /// The OMA elements of the persons, tuples, tuple statuses and devices, in that order.
    var omaFacts: [OMAFact] = []

    /// No facts: what an empty document gives.
    init() {}

    /// Gathers the facts of `doc`; the `freebusy.tsv` rows tell which activities are calendar blocks.
    /// (A static function, not an initializer: an initializer takes its document as a copy.)
    static func gathered(from doc: PIDFDocument, freeBusy: [MappingTables.FreeBusyRow]) -> PIDFFacts {
        var facts = PIDFFacts()
        facts.tokens.reserveCapacity(4)
        facts.read(doc, freeBusy)
        return facts
    }

    /// Persons, then presence-level notes and CIPID, then tuples, then devices.
    private mutating func read(_ doc: PIDFDocument, _ freeBusy: [MappingTables.FreeBusyRow]) {
        let persons = doc.persons
        for person in persons {
            read(person.rpid, freeBusy)
            readOMA(person.extensions, at: "person[\(person.id)]")
        }
        if let first = persons.first { readFirstPerson(first) }
        let presenceNotes = doc.notes
        if !presenceNotes.isEmpty { notes += presenceNotes }
        read(doc.cipid)
        var anyOpen = false
        var anyClosed = false
        for tuple in doc.tuples {
            // The status read where it lies (`withStatus`): the getter copied it whole.
            tuple.withStatus { status in
                switch status.basic {
                case .open?: anyOpen = true
                case .closed?: anyClosed = true
                case nil: break
                }
                if let text = status.unrecognizedBasic {
                    unrecognizedBasics.append(.init(tupleID: tuple.id, text: text))
                }
                read(tuple.rpid, freeBusy)
                read(status.rpid, freeBusy)
                let tupleNotes = tuple.notes
                if !tupleNotes.isEmpty { notes += tupleNotes }
                read(tuple.cipid)
                if case .none = capabilities { capabilities = status.capabilities }
                readOMA(tuple.extensions, at: "tuple[\(tuple.id)]")
                readOMA(status.extensions, at: "tuple[\(tuple.id)]/status")
            }
        }
        basic = anyOpen ? .open : anyClosed ? .closed : .none
        for device in doc.devices {
            read(device.rpid, freeBusy)
            readOMA(device.extensions, at: "device[\(device.id)]")
        }
    }

    /// The OMA elements among `extensions`, with their basic: the `<basic>` child in the OMA
    /// namespace as schema OMA-SUP-XSD_prs_pidf_omaPres declares it, or, as some clients
    /// write it, in the PIDF namespace (RFC 3863 §4.1.4's element reused).
    /// `path` is made only for an OMA element found: every PIDF relayed passes here, most with none.
    private mutating func readOMA(_ extensions: [XMLElement], at path: @autoclosure () -> String) {
        for e in extensions where e.name.namespace == NS.omaPres {
            guard let element = MappingTables.OMAElement(rawValue: e.name.local) else { continue }
            var basic: PIDFBasic?
            if element.hasBasic {
                let child = e.element(XMLName(NS.omaPres, "basic")) ?? e.element(XMLName(NS.pidf, "basic"))
                basic = child.flatMap { PIDFBasic(rawValue: $0.trimmedText) }
            }
            omaFacts.append(OMAFact(element: element, basic: basic, path: "\(path())/oma:\(element.rawValue)"))
        }
    }

    /// The first person's place, time offset, RPID without a category, notes and CIPID.
    private mutating func readFirstPerson(_ person: PIDFPerson) {
        let rpid = person.rpid
        if case .other(let text, _)? = rpid.firstPlaceTypeValue { placeTypeText = text }
        placeIsNote = rpid.firstPlaceIsNoteText
        timeOffset = rpid.timeOffsets.first
        hasMood = rpid.hasMood
        hasSphere = rpid.hasSphere
        hasPrivacy = rpid.hasPrivacy
        notes = person.notes
        read(person.cipid)
    }

    /// Sorts each activities element into a calendar block, an out-of-office note, or the
    /// current activities (RFC 4480 §3.2); takes the first user input.
    private mutating func read(_ rpid: RPID, _ freeBusy: [MappingTables.FreeBusyRow]) {
        if userInput == nil { userInput = rpid.userInputValue }
        // By index: a `for ... in` loop copied each activities element, and each value, whole.
        let all = rpid.activities
        for i in all.indices {
            if let from = all[i].from, let until = all[i].until,
                let state = PresenceMapper.freeBusyState(of: all[i], rows: freeBusy)
            {
                calendarBlocks.append((state, from, until))
            } else if Self.isOutOfOfficeNote(all[i]) {
                for note in all[i].notes {
                    outOfOfficeNotes.append(
                        MSNote.Body(text: note.text, type: "OOF", startTime: all[i].from, endTime: all[i].until))
                }
            } else {
                let values = all[i].values
                for j in values.indices {
                    if let token = values[j].rpidToken {
                        if !tokens.contains(token) { tokens.append(token) }
                    } else if let text = values[j].otherText {
                        if !others.contains(text) { others.append(text) }
                    }
                }
                if activityNote == nil { activityNote = all[i].notes.first?.text }
            }
        }
        for token in rpid.legacyActivities where !tokens.contains(token) { tokens.append(token) }
    }

    /// Whether the conditions of a `pidf-availability.tsv` row hold: its basic, activity and
    /// user input. (Handed the row's conditions rather than the row, which was copied whole.)
    func hold(
        _ basic: MappingTables.ReverseRow.Basic, _ activity: MappingTables.ReverseRow.Activity,
        _ userInput: RPIDUserInput.Value?
    ) -> Bool {
        guard basic == .any || basic == self.basic else { return false }
        if let userInput, userInput != self.userInput { return false }
        switch activity {
        case .any: return true
        case .none: return tokens.isEmpty && others.isEmpty
        case .token(let token): return tokens.contains(token)
        case .other(let text): return others.contains(text)
        }
    }

    /// An out-of-office note: notes, a period, and the single value other "out-of-office".
    private static func isOutOfOfficeNote(_ activities: RPIDTokens) -> Bool {
        guard !activities.notes.isEmpty, activities.from != nil || activities.until != nil,
            activities.values.count == 1, case .other(let text, nil) = activities.values[0]
        else { return false }
        return text == MSActivityToken.outOfOffice.rawValue
    }

    /// The first display name, icon and homepage; whether a card, map or sound is linked.
    private mutating func read(_ cipid: CIPID) {
        if displayName == nil { displayName = cipid.displayNames.first?.text }
        if icon == nil { icon = cipid.icon }
        if homepage == nil { homepage = cipid.homepage }
        if cipid.card != nil { hasCardLink = true }
        if cipid.map != nil || cipid.sound != nil { hasMapOrSound = true }
    }
}
