import PresenceDocuments
@testable import PresenceMapping
import Testing

/// The categories → PIDF rules one at a time. Expected values are typed from [MS-PRES]
/// §3.7.5.4, `availability-pidf-detail.tsv`, `activity-tokens.tsv`,
/// `freebusy.tsv` and `capabilities.tsv`, and RFC 4480, not produced by the code under test.
struct PIDFRuleTests {
    static let mapper = SpecTableTests.mapper

    static func state(_ availability: UInt32?, _ token: MSActivityToken? = nil, custom: String? = nil) -> PresenceMapper.EffectiveState {
        .init(availability: availability, token: token, custom: custom, state: nil)
    }

    @Test func basicAndActivityAreThoseOfTheSpecRow() {
        var report = MappingReport()
        // §3.7.5.4 row 5: 6000-to-7499, On the phone → Open, On the phone; the row names the token.
        let phone = Self.mapper.basicRule(Self.state(6500, .onThePhone), report: &report)
        #expect(phone.basic == .open && phone.activity == "on-the-phone" && phone.namesToken)
        // Row 4: any other token → Open, Busy.
        let meeting = Self.mapper.basicRule(Self.state(6500, .inAMeeting), report: &report)
        #expect(meeting.basic == .open && meeting.activity == "busy" && !meeting.namesToken)
        // Row 3: 4500-to-5999 → Open, Away; row 2: 3000-to-4499 → Open, none; row 10: >= 18000 → Closed.
        let idle = Self.mapper.basicRule(Self.state(5000), report: &report)
        #expect(idle.basic == .open && idle.activity == "away")
        let online = Self.mapper.basicRule(Self.state(3500), report: &report)
        #expect(online.basic == .open && online.activity == nil)
        let offline = Self.mapper.basicRule(Self.state(18500, .onThePhone), report: &report)
        #expect(offline.basic == .closed && offline.activity == nil && !offline.namesToken)
    }

    @Test func nothingPublishedIsClosedWithoutActivity() {
        var report = MappingReport()
        let row = Self.mapper.basicRule(Self.state(nil), report: &report)
        #expect(row.basic == .closed && row.activity == nil)
        #expect(report.mapped.map(\.field) == ["state (absent)"])
    }

    /// (availability, token, custom, values with the RPID extensions, user input).
    static let extendedCases: [(UInt32, MSActivityToken?, String?, [RPIDValue], RPIDUserInput.Value?)] = [
        (500, nil, nil, [.token("unknown")], nil),  // Unknown: row 1 writes nothing, the class <unknown/>
        (3500, nil, nil, [], .active),  // Online: user-input active
        (5000, nil, nil, [.token("away")], .idle),  // Idle: row 3 away, user-input idle
        (7800, nil, nil, [.token("away"), .token("busy")], .idle),  // BusyIdle: row 6 away + busy, idle
        (10000, nil, nil, [.token("busy"), .other("do-not-disturb")], nil),  // DoNotDisturb
        (12500, nil, nil, [.token("away"), .other("be-right-back")], nil),  // BeRightBack
        (6500, .inAConference, nil, [.token("busy"), .token("meeting"), .other("in-a-conference")], nil),
        (6500, .onThePhone, nil, [.token("on-the-phone")], nil),  // row 5 names it: not added again
        (3500, .offWork, "Gardening", [.other("off-work"), .other("Gardening")], .active),
        (3500, MSActivityToken("made-up"), nil, [.other("made-up")], .active),  // no token row: its text
    ]

    @Test(arguments: 0..<extendedCases.count)
    func extendedActivityAddsClassTokenAndCustom(_ i: Int) {
        let (availability, token, custom, values, input) = Self.extendedCases[i]
        var report = MappingReport()
        let state = Self.state(availability, token, custom: custom)
        let row = Self.mapper.basicRule(state, report: &report)
        let activity = Self.mapper.activityRule(state, row, extended: true, report: &report)
        #expect(activity.values == values)
        #expect(activity.userInput?.value == input)
    }

    @Test func withoutExtensionsOnlyTheRowsActivityIsWritten() {
        var report = MappingReport()
        let state = Self.state(10000, .inAMeeting, custom: "Gardening")
        let row = Self.mapper.basicRule(state, report: &report)
        let activity = Self.mapper.activityRule(state, row, extended: false, report: &report)
        #expect(activity.values == [.token("busy")])  // §3.7.5.4 row 7
        #expect(activity.userInput == nil)
        #expect(report.dropped.map(\.field) == ["state/activity/@token=in-a-meeting", "state/activity/custom"])
    }

    @Test func unknownStandsAloneInItsActivitiesElement() {
        // RFC 4480 §3.2: <unknown/> excludes any other value in the same element.
        let split = Self.mapper.activityElements([.token("unknown"), .other("Gardening")], note: "Planting")
        #expect(split.map(\.values) == [[.token("unknown")], [.other("Gardening")]])
        #expect(split.map { $0.notes.map(\.text) } == [[], ["Planting"]])
        let alone = Self.mapper.activityElements([.token("unknown")], note: nil)
        #expect(alone.map(\.values) == [[.token("unknown")]])
        #expect(Self.mapper.activityElements([], note: "Planting").isEmpty)
    }

    @Test func stateDetailsBecomePlaceAndTimeOffset() {
        var report = MappingReport()
        let state = MSState(
            type: .aggregateState, availability: 6500, meetingSubject: "Review", meetingLocation: "Room 4",
            timeZoneBias: 480, timeZoneName: "PST")
        let details = Self.mapper.stateDetailsRule(state, hasActivity: true, report: &report)
        #expect(details.meetingSubject == "Review")
        #expect(details.placeType?.values == [.other("Room 4")])
        #expect(details.placeIs == nil)
        // Windows bias 480 (UTC = local + 480) is 480 minutes behind UTC: RFC 4480 §3.14 offset -480.
        #expect(details.timeOffsets.map(\.minutes) == [-480])
        #expect(details.timeOffsets.map(\.description) == ["PST"])
        let silent = Self.mapper.stateDetailsRule(state, hasActivity: false, report: &report)
        #expect(silent.meetingSubject == nil)
        #expect(report.dropped.map(\.field).contains("state/meetingSubject"))
    }

    @Test func outOfOfficeNoteIsAnActivityOnlyWithExtensions() {
        let note = MSNote(bodies: [
            MSNote.Body(text: "In the office"),
            MSNote.Body(text: "On leave", type: "OOF", startTime: "2026-01-01T00:00:00Z", endTime: "2026-01-08T00:00:00Z"),
            MSNote.Body(text: ""),
        ])
        var report = MappingReport()
        var notes: [PIDFNote] = [], activities: [RPIDTokens] = []
        Self.mapper.noteRule(note, extended: false, notes: &notes, activities: &activities, report: &report)
        #expect(notes.map(\.text) == ["In the office", "On leave"])
        #expect(activities.isEmpty)
        notes = []
        Self.mapper.noteRule(note, extended: true, notes: &notes, activities: &activities, report: &report)
        #expect(notes.map(\.text) == ["In the office"])
        #expect(activities.map(\.values) == [[.other("out-of-office")]])
        #expect(activities.first?.from == "2026-01-01T00:00:00Z")
        #expect(activities.first?.until == "2026-01-08T00:00:00Z")
        #expect(activities.first?.notes.map(\.text) == ["On leave"])
    }

    @Test func contactCardGivesIconAndHomepageAndALaterCardKeepsWhatItLacks() {
        var icon: String?
        var homepage: String?
        var report = MappingReport()
        let card = ContactCard(
            displayNames: [.init("Robert")], emails: ["bob@example.com"], urls: [.init(type: "other", uri: "http://example.com/bob")],
            photos: [.init(), .init(uri: "http://example.com/bob.png")])
        Self.mapper.contactCardRule(card, icon: &icon, homepage: &homepage, report: &report)
        #expect(icon == "http://example.com/bob.png")
        #expect(homepage == "http://example.com/bob")
        #expect(report.dropped.map(\.field) == ["contactCard/email"])
        // A second card with a URL only: its URL is the homepage, the first card's photo stays the icon.
        let second = ContactCard(displayNames: [.init("Bob")], urls: [.init(type: "other", uri: "http://example.org/b")])
        Self.mapper.contactCardRule(second, icon: &icon, homepage: &homepage, report: &report)
        #expect(icon == "http://example.com/bob.png")
        #expect(homepage == "http://example.org/b")
    }

    @Test func theFirstContactCardsDisplayNameIsTheCIPIDDisplayName() {
        let document = CategoriesDocument(uri: "sip:bob@example.com", categories: [
            Category(name: .contactCard, instance: 0, payload: .contactCard(ContactCard(photos: [.init(uri: "http://example.com/b.png")]))),
            Category(name: .contactCard, instance: 1, payload: .contactCard(ContactCard(displayNames: [.init("Robert")]))),
            Category(name: .contactCard, instance: 2, payload: .contactCard(ContactCard(displayNames: [.init("Bob")]))),
        ])
        let pidf = Self.mapper.pidfDocument(from: document)
        let cipid = pidf.persons.first?.cipid
        // RFC 4482 §3.1: one display name per person; the first card that has one gives it.
        #expect(cipid?.displayNames.map(\.text) == ["Robert"])
        #expect(cipid?.icon == "http://example.com/b.png")
    }

    @Test func freeBusyBecomesDatedActivitiesOnlyWithExtensions() {
        // Two 15-minute blocks: busy then free ([MS-PRES] §2.2.2.7.8 encoding, 2 bits per block).
        let freeBusy = CalendarData.FreeBusy.encode([.busy, .free], startTime: "2026-01-01T09:00:00Z", granularity: "PT15M")
        let calendar = CalendarData(mailboxID: "bob@example.com", freeBusy: freeBusy.0)
        var report = MappingReport()
        #expect(Self.mapper.calendarRule(calendar, instance: freeBusy.1, extended: false, report: &report).isEmpty)
        #expect(report.dropped.map(\.field).contains("calendarData/freeBusy"))
        let activities = Self.mapper.calendarRule(calendar, instance: freeBusy.1, extended: true, report: &report)
        // freebusy.tsv: busy → appointment; the free block writes nothing.
        #expect(activities.map(\.values) == [[.token("appointment")]])
        #expect(activities.first?.from == "2026-01-01T09:00:00Z")
        #expect(activities.first?.until == "2026-01-01T09:15:00Z")
    }

    @Test func capabilitiesAreTheFlagsOfRenderingOrCapturingCapabilities() throws {
        var report = MappingReport()
        let services = MSServices(services: [.init(uri: "sip:bob@example.com", capabilities: [
            MSCapability(name: "text", attributes: ["render": "false", "capture": "false"]),
            MSCapability(name: "voice", attributes: ["capture": "1"]),
            MSCapability(name: "video", attributes: ["render": "true"]),
            MSCapability(name: "gifInk", attributes: ["render": "true"]),
        ])])
        let caps = try #require(Self.mapper.capabilitiesRule(services, report: &report))
        // capabilities.tsv order: voice → audio, video → video; text is neither rendered nor captured.
        #expect(caps.flags.map(\.name) == ["audio", "video"])
        #expect(caps.flags.allSatisfy { $0.value })
        #expect(Self.mapper.capabilitiesRule(MSServices(), report: &report) == nil)
    }
}
