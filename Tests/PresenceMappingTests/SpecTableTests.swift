import PresenceDocuments
import PresenceMapping
import Testing

/// Expected values typed from [MS-PRES] §3.7.5.4 and
/// §3.7.5.5, not produced by the code under test.
struct SpecTableTests {
    static let mapper: PresenceMapper = {
        do { return PresenceMapper(tables: try MappingTables.builtIn()) } catch { fatalError("built-in tables: \(error)") }
    }()

    static func categories(_ availability: UInt32, _ token: MSActivityToken? = nil) -> CategoriesDocument {
        let state = MSState(
            type: .aggregateState, availability: availability,
            activities: token.map { [MSActivity(token: $0)] } ?? [])
        return CategoriesDocument(uri: "sip:bob@contoso.com", categories: [Category(name: .state, instance: 1, payload: .state(state))])
    }

    /// (availability, token, basic, RPID activity) for every §3.7.5.4 row at each boundary.
    static let pidfCases: [(UInt32, MSActivityToken?, PIDFBasic, String?)] = [
        (0, nil, .closed, nil), (2999, nil, .closed, nil), (2999, .onThePhone, .closed, nil),
        (3000, nil, .open, nil), (4499, nil, .open, nil), (4499, .onThePhone, .open, nil),
        (4500, nil, .open, "away"), (5999, nil, .open, "away"),
        (6000, nil, .open, "busy"), (7499, nil, .open, "busy"), (6500, .inAMeeting, .open, "busy"),
        (6000, .onThePhone, .open, "on-the-phone"), (7499, .onThePhone, .open, "on-the-phone"),
        (7500, nil, .open, "away"), (8999, nil, .open, "away"), (8999, .onThePhone, .open, "away"),
        (9000, nil, .open, "busy"), (11999, nil, .open, "busy"), (9000, .onThePhone, .open, "busy"),
        (12000, nil, .open, "away"), (14999, nil, .open, "away"),
        (15000, nil, .open, "away"), (17999, nil, .open, "away"),
        (18000, nil, .closed, nil), (18500, .onThePhone, .closed, nil), (2_147_483_647, nil, .closed, nil),
        (4_294_967_295, nil, .closed, nil),
    ]

    @Test("§3.7.5.4 row at each boundary, Microsoft dialect", arguments: 0..<pidfCases.count)
    func microsoftDialectFollowsTable(_ i: Int) {
        let (availability, token, basic, activity) = Self.pidfCases[i]
        let (pidf, _) = Self.mapper.pidf(from: Self.categories(availability, token), dialect: .microsoft)
        #expect(pidf.tuples.count == 1)
        #expect(pidf.tuples.first?.status.basic == basic)
        #expect(pidf.tuples.first?.status.rpid.legacyActivities == (activity.map { [$0] } ?? []))
        #expect(pidf.persons.isEmpty)
    }

    @Test("§3.7.5.4 row at each boundary, RFC dialect: the row's basic and activity and nothing else", arguments: 0..<pidfCases.count)
    func rfcDialectFollowsTable(_ i: Int) {
        let (availability, token, basic, activity) = Self.pidfCases[i]
        let (pidf, report) = Self.mapper.pidf(from: Self.categories(availability, token), dialect: .rfc)
        #expect(pidf.tuples.count == 1)
        #expect(pidf.tuples.first?.status.basic == basic)
        let person = pidf.persons.first
        #expect(person?.rpid.activities.map(\.values) == activity.map { [[RPIDValue.token($0)]] })
        #expect(person?.rpid.userInput == nil)
        // A token the row does not name is reported, not written.
        if let token, activity != token.rawValue {
            #expect(report.dropped.contains { $0.field == "state/activity/@token=\(token)" })
        }
    }

    @Test("§3.7.5.4 row at each boundary, RFC dialect with extensions keeps the row's activity first", arguments: 0..<pidfCases.count)
    func extendedRFCDialectStartsWithTheTableRow(_ i: Int) {
        let (availability, token, basic, activity) = Self.pidfCases[i]
        let (pidf, _) = Self.mapper.pidf(from: Self.categories(availability, token), dialect: .rfc, rpidExtensions: true)
        #expect(pidf.tuples.first?.status.basic == basic)
        let tokens = pidf.persons.first?.rpid.activities.first?.tokens ?? []
        if let activity { #expect(tokens.first == activity) }
    }

    /// (availability, token, avail, state, availability aggregate, activity aggregate), §3.7.5.5.
    static let msrtcCases: [(UInt32, MSActivityToken?, UInt32, String, UInt32, UInt32)] = [
        (0, nil, 18500, "offline", 0, 100), (2999, nil, 18500, "offline", 0, 100),
        (3000, nil, 3500, "online", 300, 400), (4499, nil, 3500, "online", 300, 400),
        (4500, nil, 15500, "away", 300, 100), (5999, nil, 15500, "away", 300, 100),
        (6000, nil, 6500, "busy", 300, 600), (7499, nil, 6500, "busy", 300, 600),
        (6500, .inAMeeting, 6500, "in-a-meeting", 300, 600),
        (6000, .onThePhone, 6500, "on-the-phone", 300, 500), (7499, .onThePhone, 6500, "on-the-phone", 300, 500),
        (7500, nil, 15500, "away", 300, 100), (8999, nil, 15500, "away", 300, 100),
        (9000, nil, 9500, "do-not-disturb", 300, 600), (11999, nil, 9500, "do-not-disturb", 300, 600),
        (12000, nil, 12500, "be-right-back", 300, 300), (14999, nil, 12500, "be-right-back", 300, 300),
        (15000, nil, 15500, "away", 300, 100), (15500, nil, 15500, "away", 300, 100), (17999, nil, 15500, "away", 300, 100),
        (18000, nil, 18500, "offline", 0, 100), (4_294_967_295, nil, 18500, "offline", 0, 100),
    ]

    @Test("§3.7.5.5 row at each boundary", arguments: 0..<msrtcCases.count)
    func msrtcFollowsTable(_ i: Int) {
        let (availability, token, avail, state, availabilityAggregate, activityAggregate) = Self.msrtcCases[i]
        let (msrtc, _) = Self.mapper.msrtc(from: Self.categories(availability, token))
        #expect(msrtc.uri == "bob@contoso.com")
        #expect(msrtc.states.first?.avail == avail)
        #expect(msrtc.states.first?.text == state)
        #expect(msrtc.availabilityAggregate == availabilityAggregate)
        #expect(msrtc.activityAggregate == activityAggregate)
    }

    @Test func legacyInteropOverridesTheStateInstance() {
        var doc = Self.categories(3500)
        doc.categories.append(Category(name: .legacyInterop, payload: .legacyInterop(LegacyInterop(availability: 6500, token: .onThePhone))))
        let (pidf, report) = Self.mapper.pidf(from: doc, dialect: .microsoft)
        #expect(pidf.tuples.first?.status.rpid.legacyActivities == ["on-the-phone"])
        #expect(report.mapped.contains { $0.field == "legacyInterop" })
    }

    @Test func nothingPublishedIsOffline() {
        let empty = CategoriesDocument(uri: "sip:bob@contoso.com")
        #expect(Self.mapper.pidf(from: empty, dialect: .rfc).0.tuples.first?.status.basic == .closed)
        let msrtc = Self.mapper.msrtc(from: empty).0
        #expect(msrtc.states.first?.avail == 18500)
        #expect(msrtc.states.first?.text == "offline")
    }
}
