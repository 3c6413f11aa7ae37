import PresenceDocuments
@testable import PresenceMapping
import Testing

/// The PIDF → categories rules one at a time, each fed facts made by hand. Expected values
/// are typed from the tables (`pidf-availability.tsv`, `activity-tokens.tsv`,
/// `capabilities.tsv`) and RFC 4480 / RFC 4482 / [MS-PRES] §2.2.2.7, not from the code.
struct CategoryRuleTests {
    static let mapper = SpecTableTests.mapper

    static func facts(
        _ basic: MappingTables.ReverseRow.Basic, tokens: [String] = [], others: [String] = [],
        userInput: RPIDUserInput.Value? = nil
    ) -> PIDFFacts {
        var facts = PIDFFacts()
        facts.basic = basic
        facts.tokens = tokens
        facts.others = others
        facts.userInput = userInput
        return facts
    }

    /// (basic, tokens, others, user input, availability) from `pidf-availability.tsv`, first row that holds.
    static let availabilityCases: [(MappingTables.ReverseRow.Basic, [String], [String], RPIDUserInput.Value?, UInt32)] = [
        (.closed, ["unknown"], [], nil, 0),  // class Unknown marker
        (.closed, [], [], nil, 18500),  // closed: offline (3.7.5.5 avail 18500)
        (.closed, ["busy"], [], .active, 18500),
        (.none, ["busy"], [], nil, 0),  // no usable basic: Unknown
        (.open, [], ["do-not-disturb"], nil, 9500),
        (.open, [], ["be-right-back"], .active, 12500),  // the class marker comes before user input
        (.open, ["busy"], [], .idle, 8400),  // BusyIdle
        (.open, ["away"], [], .idle, 5000),  // Idle
        (.open, ["away"], [], .active, 3500),  // active input: Online
        (.open, [], [], .idle, 5000),
        (.open, ["away"], [], nil, 15500),
        (.open, ["on-the-phone"], [], nil, 6500),
        (.open, ["meeting"], [], nil, 6500),
        (.open, ["permanent-absence"], [], nil, 18500),
        (.open, ["vacation"], [], nil, 15500),
        (.open, [], [], nil, 3500),
        (.open, ["worship"], ["Interviewing"], nil, 3500),  // nothing the table names
    ]

    @Test(arguments: 0..<availabilityCases.count)
    func availabilityIsThatOfTheFirstTableRowThatHolds(_ i: Int) {
        let (basic, tokens, others, input, expected) = Self.availabilityCases[i]
        var report = MappingReport()
        let availability = Self.mapper.availabilityRule(Self.facts(basic, tokens: tokens, others: others, userInput: input), report: &report)
        #expect(availability == expected)
        #expect(report.mapped.map(\.field) == ["basic+activities+user-input"])
    }

    @Test func unrecognizedBasicIsReportedWithItsTuple() {
        var facts = Self.facts(.none)
        facts.unrecognizedBasics = [.init(tupleID: "t1", text: "unknown")]
        var report = MappingReport()
        #expect(Self.mapper.availabilityRule(facts, report: &report) == 0)
        #expect(report.dropped.map(\.field) == ["tuple[t1]/status/basic"])
    }

    /// (tokens, others, token, custom) from `activity-tokens.tsv`: an other text naming a token first.
    static let activityCases: [([String], [String], MSActivityToken?, String?)] = [
        (["on-the-phone"], [], .onThePhone, nil),
        (["meeting"], [], .inAMeeting, nil),
        (["meeting"], ["in-a-conference"], .inAConference, nil),  // the other text wins over the token
        (["appointment"], [], .inAMeeting, nil),  // read-only row
        (["vacation"], [], .outOfOffice, nil),
        (["holiday"], [], .outOfOffice, nil),
        ([], ["off-work"], .offWork, nil),
        ([], ["urgent-interruptions-only"], .urgentInterruptionsOnly, nil),
        ([], ["do-not-disturb"], nil, nil),  // a class marker, not a custom activity
        ([], ["Interviewing"], nil, "Interviewing"),
        (["presentation"], ["Interviewing"], .inPresentation, "Interviewing"),
    ]

    @Test(arguments: 0..<activityCases.count)
    func activityIsTheTokenRowThenTheCustomText(_ i: Int) {
        let (tokens, others, token, custom) = Self.activityCases[i]
        var report = MappingReport()
        let activity = Self.mapper.activityRule(Self.facts(.open, tokens: tokens, others: others), report: &report)
        #expect(activity?.token == token)
        #expect(activity?.custom.first?.text == custom)
        if token == nil && custom == nil { #expect(activity == nil) }
    }

    @Test func tokensNoTableMapsAreReportedDropped() {
        var report = MappingReport()
        // RFC 4480 §3.2 worship and looking-for-work: in no table. sleeping: pidf-availability.tsv reads it.
        _ = Self.mapper.activityRule(Self.facts(.open, tokens: ["worship", "sleeping", "looking-for-work"]), report: &report)
        #expect(report.dropped.map(\.field) == ["rpid activity worship", "rpid activity looking-for-work"])
    }

    @Test func stateCarriesSubjectLocationsAndTheTimeOffsetAsWindowsBias() throws {
        var facts = Self.facts(.open, tokens: ["meeting"])
        facts.activityNote = "Design review"
        facts.placeTypeText = "Room 4"
        facts.placeIsNote = "Building 7"
        facts.timeOffset = RPIDTimeOffset(minutes: 60, description: "CET")
        facts.hasMood = true
        var report = MappingReport()
        let category = Self.mapper.stateRule(facts, report: &report)
        guard case .state(let state) = category.payload else { Issue.record("not a state"); return }
        #expect(state.type == .aggregateState)
        #expect(state.availability == 6500)
        #expect(state.activities.map(\.token) == [.inAMeeting])
        #expect(state.meetingSubject == "Design review")
        #expect(state.meetingLocation == "Room 4")
        #expect(state.endpointLocation == "Building 7")
        // RFC 4480 §3.14: +60 minutes from UTC; a Windows bias is UTC - local = -60.
        #expect(state.timeZoneBias == -60)
        #expect(state.timeZoneName == "CET")
        #expect(report.dropped.map(\.field) == ["rpid mood"])
    }

    @Test func noteIsTheEnglishOneThenTheOutOfOfficeNotes() throws {
        var facts = Self.facts(.open)
        facts.notes = [PIDFNote("Bin im Büro", lang: "de"), PIDFNote("In the office", lang: "en-GB"), PIDFNote("Au bureau", lang: "fr")]
        facts.outOfOfficeNotes = [MSNote.Body(text: "On leave", type: "OOF", startTime: "2026-01-01T00:00:00Z", endTime: nil)]
        var report = MappingReport()
        let category = try #require(Self.mapper.noteRule(facts, report: &report))
        guard case .note(let note) = category.payload else { Issue.record("not a note"); return }
        #expect(note.bodies.map(\.text) == ["In the office", "On leave"])
        #expect(note.bodies.map(\.type) == ["personal", "OOF"])
        #expect(report.dropped.map(\.field) == ["note (2 more)"])
    }

    @Test func noteWithoutEnglishIsTheFirstAndNoNotesGiveNoCategory() throws {
        var facts = Self.facts(.open)
        var report = MappingReport()
        #expect(Self.mapper.noteRule(facts, report: &report) == nil)
        facts.notes = [PIDFNote("Bin im Büro", lang: "de"), PIDFNote("Au bureau", lang: "fr")]
        let category = try #require(Self.mapper.noteRule(facts, report: &report))
        guard case .note(let note) = category.payload else { Issue.record("not a note"); return }
        #expect(note.bodies.map(\.text) == ["Bin im Büro"])
    }

    @Test func contactCardHasDisplayNamePhotoAndURL() throws {
        var facts = Self.facts(.open)
        var report = MappingReport()
        #expect(Self.mapper.contactCardRule(facts, report: &report) == nil)
        facts.displayName = "Bob"
        facts.icon = "http://example.com/bob.png"
        facts.homepage = "http://example.com/bob"
        facts.hasCardLink = true
        let category = try #require(Self.mapper.contactCardRule(facts, report: &report))
        guard case .contactCard(let card) = category.payload else { Issue.record("not a contact card"); return }
        #expect(card.displayNames.map(\.text) == ["Bob"])
        #expect(card.photos.map(\.uri) == ["http://example.com/bob.png"])
        #expect(card.urls.map(\.uri) == ["http://example.com/bob"])
        #expect(report.dropped.map(\.field) == ["cipid card"])
    }

    @Test func capabilitiesAreTheTableRowsOfTheTrueFlags() throws {
        var facts = Self.facts(.open)
        facts.capabilities = ServiceCapabilities(flags: [.init("message", true), .init("audio", true), .init("video", false), .init("fax", true)])
        var report = MappingReport()
        let category = try #require(Self.mapper.capabilitiesRule(facts, entity: "sip:bob@example.com", report: &report))
        guard case .services(let services) = category.payload else { Issue.record("not services"); return }
        #expect(services.services.map(\.uri) == ["sip:bob@example.com"])
        // capabilities.tsv: message → text, audio → voice; [MS-PRES] §2.2.2.7.3 render and capture.
        let capabilities = services.services.flatMap(\.capabilities)
        #expect(capabilities.map(\.name) == ["text", "voice"])
        #expect(capabilities.allSatisfy { $0.render == true && $0.capture == true })
        #expect(report.dropped.map(\.field) == ["caps fax"])
    }
}
