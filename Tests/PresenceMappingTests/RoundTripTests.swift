import PresenceDocuments
import PresenceMapping
import Testing
import XMLBridge

/// categories → PIDF → categories keeps the availability class and the
/// activity token when both ends are this gateway, i.e. with the RPID extensions
/// (`Mappings/README.md`). Class bounds are [MS-PRES] §2.2.2.7.1, with Away split
/// at 15000 as both conversion tables split it.
struct RoundTripTests {
    static let classes: [ClosedRange<UInt32>] = [
        0...2999, 3000...4499, 4500...5999, 6000...7499, 7500...8999, 9000...11999, 12000...14999, 15000...17999,
        18000...UInt32.max,
    ]
    static let samples: [UInt32] = [0, 2999, 3000, 3500, 4499, 4500, 5999, 6000, 6500, 7499, 7500, 8400, 8999, 9000, 11999, 12000, 14999, 15000, 17999, 18000, 18500, 4_000_000_000]
    static let tokens: [MSActivityToken?] = [
        nil, .onThePhone, .inAConference, .inAMeeting, .outOfOffice, .urgentInterruptionsOnly, .offWork, .inPresentation,
    ]

    static func state(_ doc: CategoriesDocument) -> MSState? {
        for c in doc.categories { if case .state(let s) = c.payload { return s } }
        return nil
    }

    @Test(arguments: samples)
    func categoriesToPIDFAndBackKeepsClassAndToken(_ availability: UInt32) throws {
        for token in Self.tokens {
            let input = SpecTableTests.categories(availability, token)
            let (pidf, _) = SpecTableTests.mapper.pidf(from: input, dialect: .rfc, rpidExtensions: true)
            let (back, _) = SpecTableTests.mapper.categories(from: pidf)
            let state = try #require(Self.state(back))
            let original = try #require(Self.classes.first { $0.contains(availability) })
            let result = try #require(state.availability)
            #expect(original.contains(result), "availability \(availability) token \(token?.rawValue ?? "-") came back as \(result)")
            #expect(state.activities.first?.token == token, "availability \(availability) token \(token?.rawValue ?? "-")")
        }
    }

    /// Without the extensions the PIDF is the §3.7.5.4 row, and reading it back gives the
    /// row's meaning: closed → 18500, open → 3500, away → 15500, busy or on the phone → 6500
    /// (`pidf-availability.tsv`); the class within the row (Idle, BusyIdle, BeRightBack) is
    /// not carried. Do Not Disturb is: its PIDF carries OMA's overriding-willingness closed
    /// (`oma-extensions.tsv` write row 1), read back as 9500 ([MS-PRES] §3.7.5.5 row 7).
    @Test(arguments: samples)
    func tableRowReadsBackAsTheRowsMeaning(_ availability: UInt32) throws {
        for token in Self.tokens {
            let (pidf, _) = SpecTableTests.mapper.pidf(from: SpecTableTests.categories(availability, token), dialect: .rfc)
            let back = try #require(Self.state(SpecTableTests.mapper.categories(from: pidf).0)?.availability)
            let activity = pidf.persons.first?.rpid.activities.first?.tokens.first
            let personExtensions: [XMLElement] = pidf.persons.first?.extensions ?? []
            let unwilling = personExtensions.contains(where: { (e: XMLElement) in
                e.name == XMLName("urn:oma:xml:prs:pidf:oma-pres", "overriding-willingness")
                    && e.elements.first(where: { _ in true })?.trimmedText == "closed"
            })
            #expect(unwilling == (9000...11999).contains(availability), "availability \(availability)")
            let expected: UInt32 = switch (pidf.tuples.first?.status.basic, activity) {
            case _ where unwilling: 9500
            case (.closed?, _): 18500
            case (_, "away"?): 15500
            case (_, "busy"?), (_, "on-the-phone"?): 6500
            default: 3500
            }
            #expect(back == expected, "availability \(availability) token \(token?.rawValue ?? "-")")
        }
    }

    @Test func customActivityRoundTripsAsRPIDOther() throws {
        var input = SpecTableTests.categories(9500)
        if case .state(var s)? = input.categories[0].payload {
            s.activities = [MSActivity(custom: [.init("Interviewing", lcid: "1033")])]
            input.categories[0].payload = .state(s)
        }
        // Without the extensions the custom activity is not written (MS-PRES 3.7.5.4 row 7: busy only).
        #expect(SpecTableTests.mapper.pidf(from: input, dialect: .rfc).0.persons.first?.rpid.activities.first?.values == [.token("busy")])
        let (pidf, _) = SpecTableTests.mapper.pidf(from: input, dialect: .rfc, rpidExtensions: true)
        #expect(pidf.persons.first?.rpid.activities.first?.values.contains(.other("Interviewing")) == true)
        let back = try #require(Self.state(SpecTableTests.mapper.categories(from: pidf).0))
        #expect(back.activities.first?.custom.first?.text == "Interviewing")
        #expect(back.availability.map { (9000...11999).contains($0) } == true)
    }

    @Test func richStateFieldsRoundTrip() throws {
        let state = MSState(
            type: .aggregateState, availability: 6500, activities: [MSActivity(token: .inAMeeting)],
            endpointLocation: "Home_Custom_EndPoint_Location", meetingSubject: "Customer Meeting",
            meetingLocation: "Conference Room - Building 7", timeZoneBias: 480, timeZoneName: "Pacific Standard Time")
        let note = MSNote(bodies: [
            .init(text: "Working until 5pm today"),
            .init(text: "On leave", type: "OOF", startTime: "2026-12-01T00:00:00Z", endTime: "2026-12-05T00:00:00Z"),
        ])
        let card = ContactCard(displayNames: [.init("Bob")], photos: [.init(uri: "https://photos.contoso.com/bob.jpg", hash: "1")])
        let input = CategoriesDocument(uri: "sip:bob@contoso.com", categories: [
            Category(name: .state, instance: 1, payload: .state(state)),
            Category(name: .note, instance: 0, payload: .note(note)),
            Category(name: .contactCard, instance: 0, payload: .contactCard(card)),
        ])
        let (pidf, _) = SpecTableTests.mapper.pidf(from: input, dialect: .rfc, rpidExtensions: true)
        let person = try #require(pidf.persons.first)
        #expect(person.rpid.timeOffsets.first?.minutes == -480)  // UTC = local + bias (Windows), RFC 4480 offset = -bias
        #expect(person.cipid.displayNames.first?.text == "Bob")
        #expect(person.cipid.icon == "https://photos.contoso.com/bob.jpg")
        #expect(person.notes.first?.text == "Working until 5pm today")

        let (back, _) = SpecTableTests.mapper.categories(from: pidf)
        let s = try #require(Self.state(back))
        #expect(s.meetingSubject == "Customer Meeting")
        #expect(s.meetingLocation == "Conference Room - Building 7")
        #expect(s.endpointLocation == "Home_Custom_EndPoint_Location")
        #expect(s.timeZoneBias == 480)
        #expect(s.timeZoneName == "Pacific Standard Time")
        #expect(s.activities.first?.token == .inAMeeting)
        let notes = back.categories.compactMap { if case .note(let n) = $0.payload { n } else { nil } }.first
        #expect(notes?.bodies.map(\.text) == ["Working until 5pm today", "On leave"])
        #expect(notes?.bodies.last?.type == "OOF")
        #expect(notes?.bodies.last?.startTime == "2026-12-01T00:00:00Z")
        let backCard = back.categories.compactMap { if case .contactCard(let c) = $0.payload { c } else { nil } }.first
        #expect(backCard?.displayNames.first?.text == "Bob")
        #expect(backCard?.photos.first?.uri == "https://photos.contoso.com/bob.jpg")
    }

    @Test func plainRFCClientActivitiesMapToExpectedClasses() throws {
        // What an OMA client writes: RFC 4480 tokens in the person, no gateway markers.
        func availability(_ basic: PIDFBasic?, _ tokens: [String], input: RPIDUserInput.Value? = nil) -> UInt32? {
            var person = PIDFPerson(id: "p")
            if !tokens.isEmpty { person.rpid.activities = [RPIDTokens(values: tokens.map { .token($0) })] }
            person.rpid.userInput = input.map { RPIDUserInput($0) }
            let doc = PIDFDocument(entity: "sip:alice@oma.example", tuples: [PIDFTuple(id: "t", status: PIDFStatus(basic: basic))], persons: [person])
            return Self.state(SpecTableTests.mapper.categories(from: doc).0)?.availability
        }
        #expect(availability(.open, []) == 3500)
        #expect(availability(.open, ["busy"]) == 6500)
        #expect(availability(.open, ["away"]) == 15500)
        #expect(availability(.open, ["on-the-phone"]) == 6500)
        #expect(availability(.open, ["meeting"]) == 6500)
        #expect(availability(.open, ["vacation"]) == 15500)
        #expect(availability(.open, [], input: .idle) == 5000)
        #expect(availability(.closed, []) == 18500)
        #expect(availability(nil, []) == 0)
    }

    @Test func unrecognisedBasicIsReportedNotFatal() throws {
        let doc = PIDFDocument(entity: "sip:a@b", tuples: [PIDFTuple(id: "t", status: PIDFStatus(unrecognizedBasic: "unknown"))])
        let (back, report) = SpecTableTests.mapper.categories(from: doc)
        #expect(Self.state(back)?.availability == 0)
        #expect(report.dropped.contains { $0.field.contains("basic") })
    }

    @Test func msrtcAwayReachesWatcherAs15500() {
        // Acceptance: an enterprise state of 15500 reaches an msrtc watcher as 15500/300/100.
        let (msrtc, _) = SpecTableTests.mapper.msrtc(from: SpecTableTests.categories(15500))
        #expect(msrtc.states.first?.avail == 15500)
        #expect(msrtc.availabilityAggregate == 300)
        #expect(msrtc.activityAggregate == 100)
    }

    @Test func msrtcToCategoriesReadsAvailAndTokens() throws {
        let doc = MSRTCPresentity(uri: "bob@contoso.com", availabilityAggregate: 300, activityAggregate: 500,
            displayName: "Bob", email: "bob@contoso.com", phoneNumber: "+1 (123) 4567890",
            states: [.init(avail: 6500, text: "on-the-phone")])
        let (categories, _) = SpecTableTests.mapper.categories(from: doc)
        #expect(categories.uri == "sip:bob@contoso.com")
        let s = try #require(Self.state(categories))
        #expect(s.availability == 6500)
        #expect(s.activities.first?.token == .onThePhone)
        let online = MSRTCPresentity(uri: "bob@contoso.com", states: [.init(avail: 3500, text: "online")])
        #expect(Self.state(SpecTableTests.mapper.categories(from: online).0)?.activities.isEmpty == true)
    }
}
