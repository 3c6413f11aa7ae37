import PresenceDocuments
import PresenceMapping
import XMLBridge
import Testing

/// The two bit streams of [MS-PRES] §2.2.2.7.8, packed
/// most significant bit first and base64-encoded by hand:
/// "00000000001010101001010101111111110000" → ACqVf8A= ;
/// header 5 + "000000010010001001011011100000" → BQEiW4A= .
struct FreeBusyTests {
    static let twoBit = CalendarData.FreeBusy(startTime: "2007-09-01T00:00:00Z", granularity: "PT15M", encodingVersion: "1", data: "ACqVf8A=")
    static let versioned = CalendarData.FreeBusy(startTime: "2007-09-01T00:00:00Z", granularity: "PT15M", encodingVersion: "1", data: "BQEiW4A=")

    @Test func twoBitEncodingDecodesTheSeedExample() throws {
        // FrFrFrFrFrBuBuBuBuTeTeTeTeOoOoOoOoFrFr (+ one free block of padding).
        let expected: [FreeBusyState] = Array(repeating: .free, count: 5) + Array(repeating: .busy, count: 4)
            + Array(repeating: .tentative, count: 4) + Array(repeating: .outOfFacility, count: 4) + [.free, .free, .free]
        #expect(try Self.twoBit.blocks(instance: 0) == expected)
    }

    @Test func versionedEncodingDecodesTheSeedExample() throws {
        // Free Free Busy Busy Tentative Tentative Oof Oof WorkingElsewhere Free.
        let expected: [FreeBusyState] = [.free, .free, .busy, .busy, .tentative, .tentative, .outOfFacility, .outOfFacility, .workingElsewhere, .free]
        #expect(try Self.versioned.blocks(instance: 0x4000_0001) == expected)
    }

    @Test func encodingReproducesTheSeedBits() {
        let blocks: [FreeBusyState] = [.free, .free, .busy, .busy, .tentative, .tentative, .outOfFacility, .outOfFacility, .workingElsewhere, .free]
        let (value, instance) = CalendarData.FreeBusy.encode(blocks, startTime: "2007-09-01T00:00:00Z", granularity: "PT15M")
        #expect(value.data == "BQEiW4A=")
        #expect(instance >> 30 == 1)
        let twoBit = Array(repeating: FreeBusyState.free, count: 5) + Array(repeating: .busy, count: 4)
            + Array(repeating: .tentative, count: 4) + Array(repeating: .outOfFacility, count: 4) + [.free, .free]
        #expect(CalendarData.FreeBusy.encode(twoBit, startTime: "x", granularity: "PT15M").freeBusy.data == "ACqVf8A=")
    }

    @Test func badFreeBusyDataIsAnErrorNotACrash() {
        #expect(throws: XMLError.self) { try CalendarData.FreeBusy(data: "!!!").blocks(instance: 0) }
        #expect(throws: XMLError.self) { try CalendarData.FreeBusy(data: "AA==").blocks(instance: 0x4000_0000) }
        #expect(throws: XMLError.self) { try CalendarData.FreeBusy(data: "AA==").blocks(instance: 0x8000_0000) }
    }

    @Test func blocksBecomeRPIDActivitiesWithFromUntilAndComeBack() throws {
        let doc = CategoriesDocument(uri: "sip:bob@contoso.com", categories: [
            Category(name: .state, instance: 1, payload: .state(MSState(type: .aggregateState, availability: 3500))),
            Category(name: .calendarData, instance: 0, payload: .calendarData(CalendarData(mailboxID: "bob@contoso.com", freeBusy: Self.twoBit))),
        ])
        // Activities beside the §3.7.5.4 row's: written with the RPID extensions only.
        #expect(SpecTableTests.mapper.pidf(from: doc, dialect: .rfc).0.persons.isEmpty)
        let (pidf, _) = SpecTableTests.mapper.pidf(from: doc, dialect: .rfc, rpidExtensions: true)
        let timed = try #require(pidf.persons.first?.rpid.activities.filter { $0.from != nil })
        // Busy 01:15-02:15, tentative 02:15-03:15, out of facility 03:15-04:15 (15-minute blocks from 00:00Z).
        #expect(timed.map(\.from) == ["2007-09-01T01:15:00Z", "2007-09-01T02:15:00Z", "2007-09-01T03:15:00Z"])
        #expect(timed.map(\.until) == ["2007-09-01T02:15:00Z", "2007-09-01T03:15:00Z", "2007-09-01T04:15:00Z"])
        #expect(timed[0].tokens == ["appointment"])
        #expect(timed[2].tokens == ["away"])

        let (back, _) = SpecTableTests.mapper.categories(from: pidf)
        // The current state is untouched by the calendar blocks.
        #expect(RoundTripTests.state(back)?.availability == 3500)
        let calendar = try #require(back.categories.first { $0.name == .calendarData })
        guard case .calendarData(let data)? = calendar.payload, let freeBusy = data.freeBusy else {
            Issue.record("no free/busy came back")
            return
        }
        #expect(freeBusy.startTime == "2007-09-01T01:15:00Z")
        let blocks = try freeBusy.blocks(instance: calendar.instance ?? 0)
        #expect(Array(blocks.prefix(12)) == Array(repeating: .busy, count: 4) + Array(repeating: .tentative, count: 4) + Array(repeating: .outOfFacility, count: 4))
    }

    @Test func dateTimesAndDurations() {
        #expect(XSDTime.seconds(from: "1970-01-01T00:00:00Z") == 0)
        #expect(XSDTime.seconds(from: "2008-01-11T18:11:33.577") == 1_200_075_093)
        #expect(XSDTime.seconds(from: "2000-03-01T00:00:00+01:00") == 951_865_200)
        #expect(XSDTime.seconds(from: "2000-02-30") == nil)
        #expect(XSDTime.milliseconds(from: "2008-01-11T18:11:33.577") == 1_200_075_093_577)
        #expect(XSDTime.milliseconds(from: "2008-01-11T18:11:33.5") == 1_200_075_093_500)
        #expect(XSDTime.milliseconds(from: "2008-01-11T18:11:33.57799Z") == 1_200_075_093_577)
        #expect(XSDTime.milliseconds(from: "2008-01-11T18:11:33") == 1_200_075_093_000)
        #expect(XSDTime.seconds(from: "1969-12-31T23:59:59.500") == -1)
        #expect(XSDTime.string(fromSeconds: 951_868_800) == "2000-03-01T00:00:00Z")
        #expect(XSDTime.minutes(fromDuration: "PT15M") == 15)
        #expect(XSDTime.minutes(fromDuration: "PT1H30M") == 90)
        #expect(XSDTime.minutes(fromDuration: "P1D") == 1440)
        #expect(XSDTime.minutes(fromDuration: "15") == nil)
    }
}
