import Foundation
import PresenceDocuments
import PresenceMapping
import Testing
import XMLBridge

/// What the gateway writes to OMA/IMS peers must be valid PIDF with valid
/// RPID/CIPID/caps: validated through presence-bundle.xsd (pidf.xsd alone
/// lets bad RPID through).
struct OutputSchemaTests {
    static let bundle: XMLSchema? = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try? XMLSchema(path: root.appendingPathComponent("Schemas/ietf/presence-bundle.xsd").path)
    }()

    @Test(arguments: RoundTripTests.samples)
    func rfcDialectOutputIsSchemaValid(_ availability: UInt32) throws {
        let schema = try #require(Self.bundle)
        for token in RoundTripTests.tokens {
            for extensions in [false, true] {
                let (pidf, _) = SpecTableTests.mapper.pidf(
                    from: SpecTableTests.categories(availability, token), dialect: .rfc, rpidExtensions: extensions)
                let violations = try schema.validate(pidf.serialized())
                #expect(violations.isEmpty, "availability \(availability) token \(token?.rawValue ?? "-") extensions \(extensions): \(violations)")
            }
        }
    }

    @Test func richOutputIsSchemaValid() throws {
        let schema = try #require(Self.bundle)
        let state = MSState(
            type: .aggregateState, availability: 6500, activities: [MSActivity(token: .inAMeeting, custom: [.init("Design review")])],
            endpointLocation: "Home", meetingSubject: "Review", meetingLocation: "Building 7", timeZoneBias: -60, timeZoneName: "CET")
        let doc = CategoriesDocument(uri: "sip:bob@contoso.com", categories: [
            Category(name: .state, instance: 1, payload: .state(state)),
            Category(name: .note, instance: 0, payload: .note(MSNote(bodies: [.init(text: "Hi"), .init(text: "Away", type: "OOF", startTime: "2026-12-01T00:00:00Z", endTime: "2026-12-02T00:00:00Z")]))),
            Category(name: .contactCard, instance: 0, payload: .contactCard(ContactCard(displayNames: [.init("Bob")], urls: [.init(type: "other", uri: "https://contoso.com/bob")], photos: [.init(uri: "https://contoso.com/bob.png", hash: "1")]))),
            Category(name: .services, instance: 0, payload: .services(MSServices(services: [.init(uri: "sip:bob@contoso.com", capabilities: [MSCapability(name: "text", attributes: ["render": "true", "capture": "true"]), MSCapability(name: "voice", attributes: ["render": "true"])])]))),
            Category(name: .calendarData, instance: 0, payload: .calendarData(CalendarData(mailboxID: "bob@contoso.com", freeBusy: FreeBusyTests.twoBit))),
        ])
        for extensions in [false, true] {
            let violations = try schema.validate(SpecTableTests.mapper.pidf(from: doc, dialect: .rfc, rpidExtensions: extensions).0.serialized())
            #expect(violations.isEmpty, "extensions \(extensions): \(violations)")
        }
    }
}
