import Foundation
import PresenceDocuments
import Testing
import XMLBridge

/// Locates PIDF test documents without SwiftPM resources: fixtures beside this
/// file, and the shared spec folder as `../shared` beside the package root.
enum PIDFFixture {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let fixtures = "Tests/PresenceDocumentsTests/Fixtures/pidf/"
    static let msExamples = "../shared/spec/examples/"
    static let ietfExamples = "../shared/spec/ietf-schemas/examples/"
    static let bundleSchema = "../shared/spec/ietf-schemas/presence-bundle.xsd"

    static func path(_ relative: String) -> String {
        packageRoot.appendingPathComponent(relative).standardizedFileURL.path
    }

    static func bytes(_ relative: String) throws -> [UInt8] {
        try [UInt8](Data(contentsOf: URL(fileURLWithPath: path(relative))))
    }

    static func document(_ relative: String) throws -> PIDFDocument {
        try PIDFDocument(bytes: bytes(relative))
    }

    static let handWritten = [
        "rich-default.xml", "rich-prefixed.xml", "ms-legacy-rpid.xml", "baresip-unknown-basic.xml",
        "extensions.xml", "caps.xml", "cipid.xml",
    ].map { fixtures + $0 }

    /// Every PIDF `presence` document of the shared spec folders plus the fixtures.
    /// (rfc4479-data-model.xml lacks the required entity and rfc5262-pidf-full.xml
    /// has a pidf-diff root: both are tested as rejected.)
    static let roundTrip = [msExamples + "2.2.2.8.1-pidf-notify.xml", msExamples + "4.10-pidf-notify.xml"]
        + ["rfc3863-presence-basic.xml", "rfc3863-presence-extensions.xml", "rfc4480-rpid.xml", "rfc4482-cipid.xml",
           "rfc5196-caps.xml"].map { ietfExamples + $0 }
        + handWritten

    /// Documents whose serialization must be valid against presence-bundle.xsd.
    /// All are valid inputs except caps.xml, whose second tuple has an
    /// out-of-order servcaps inside status that the writer puts right. Not here:
    /// rfc4480-rpid.xml (sphere text, which RFC 4480's own schema forbids),
    /// cipid.xml (display-name xml:lang, which cipid.xsd forbids), and the
    /// Microsoft dialect (linked-identities and cid are PIDF-namespace elements
    /// pidf.xsd does not declare).
    static let schemaValid = ["rfc3863-presence-basic.xml", "rfc3863-presence-extensions.xml", "rfc4482-cipid.xml",
                              "rfc5196-caps.xml"].map { ietfExamples + $0 }
        + ["rich-default.xml", "rich-prefixed.xml", "caps.xml"].map { fixtures + $0 }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}

@Suite("PIDF codec")
struct PIDFCodecTests {
    // MARK: Round trip and schema conformance

    @Test(arguments: PIDFFixture.roundTrip)
    func serializingAndReparsingGivesAnEqualValueAndStableBytes(_ file: String) throws {
        let original = try PIDFFixture.document(file)
        let written = original.serialized()
        let reread = try PIDFDocument(bytes: written)
        #expect(reread == original, "\(PIDFFixture.text(written))")
        #expect(reread.serialized() == written)
    }

    @Test(arguments: PIDFFixture.schemaValid)
    func serializedOutputValidatesAgainstThePresenceBundle(_ file: String) throws {
        let schema = try XMLSchema(path: PIDFFixture.path(PIDFFixture.bundleSchema))
        let output = try PIDFFixture.document(file).serialized()
        let violations = try schema.validate(output)
        #expect(violations.isEmpty, "\(violations)\n\(PIDFFixture.text(output))")
    }

    @Test func sameDocumentWithOtherPrefixesAndRedundantDeclarationsDecodesToTheSameValue() throws {
        let plain = try PIDFFixture.document(PIDFFixture.fixtures + "rich-default.xml")
        let prefixed = try PIDFFixture.document(PIDFFixture.fixtures + "rich-prefixed.xml")
        #expect(plain == prefixed)
        #expect(plain.serialized() == prefixed.serialized())
    }

    // MARK: Microsoft dialect ([MS-PRES] §2.2.2.8.1, §4.10)

    @Test func microsoftExample410DecodesEntityTupleLegacyActivityAndIdentities() throws {
        let doc = try PIDFFixture.document(PIDFFixture.msExamples + "4.10-pidf-notify.xml")
        #expect(doc.entity == "sip:bob@contoso.com")
        #expect(doc.tuples.map(\.id) == ["0"])
        let status = try #require(doc.tuples.first?.status)
        #expect(status.basic == .open)
        #expect(status.rpid.legacyActivities == ["away"])
        #expect(status.extensions.isEmpty)
        #expect(doc.cipid.displayNames == [PIDFNote("Bob at Contoso")])
        #expect(doc.linkedIdentities == LinkedIdentities(
            primaryID: "bob@ contoso.com",
            secondaryIdentities: ["bob@skypeids.net", "A1519ABC8FAC5FA71@skypecid.net"]))
        #expect(doc.cid == "A1519ABC8FAC5FA71")
        #expect(doc.persons.isEmpty && doc.devices.isEmpty && doc.extensions.isEmpty)
    }

    @Test func microsoftExample2281HasItsOwnPrimaryID() throws {
        let doc = try PIDFFixture.document(PIDFFixture.msExamples + "2.2.2.8.1-pidf-notify.xml")
        #expect(doc.linkedIdentities?.primaryID == "bob@hotmail.com")
        #expect(doc.linkedIdentities?.secondaryIdentities.count == 2)
    }

    @Test func microsoftDocumentIsWrittenInTheOrderOfExample410WithOnlyUsedNamespaces() throws {
        let doc = try PIDFFixture.document(PIDFFixture.msExamples + "4.10-pidf-notify.xml")
        let expected = """
            <?xml version="1.0" encoding="UTF-8"?>
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:c="urn:ietf:params:xml:ns:pidf:cipid" \
            xmlns:ep="urn:ietf:params:xml:ns:pidf:status:rpid-status" entity="sip:bob@contoso.com">
              <tuple id="0">
                <status>
                  <basic>open</basic>
                  <ep:activities>
                    <ep:activity>away</ep:activity>
                  </ep:activities>
                </status>
              </tuple>
              <linked-identities primary-id="bob@ contoso.com">
                <secondary-identities>
                  <secondary-identity>bob@skypeids.net</secondary-identity>
                  <secondary-identity>A1519ABC8FAC5FA71@skypecid.net</secondary-identity>
                </secondary-identities>
              </linked-identities>
              <cid>A1519ABC8FAC5FA71</cid>
              <c:display-name>Bob at Contoso</c:display-name>
            </presence>

            """
        #expect(PIDFFixture.text(doc.serialized()) == expected)
    }

    @Test func legacyRPIDInStatusIsReadAndOtherPreRFCElementsAreKept() throws {
        let doc = try PIDFFixture.document(PIDFFixture.fixtures + "ms-legacy-rpid.xml")
        let tuple = try #require(doc.tuples.first)
        #expect(tuple.status.rpid.legacyActivities == ["busy", "on-the-phone"])
        #expect(tuple.status.extensions.map(\.name) == [XMLName(NS.rpidStatus, "placetype")])
        #expect(tuple.extensions.map(\.name) == [XMLName(NS.rpidTuple, "class")])
        #expect(doc.cipid.displayNames == [PIDFNote("Carol at Contoso", lang: "en"), PIDFNote("Carol chez Contoso", lang: "fr")])
        #expect(doc.linkedIdentities == LinkedIdentities(primaryID: "carol@contoso.com", secondaryIdentities: ["carol@skypeids.net"]))
        #expect(doc.cid == "B2620BCD9FBD6FB82")
    }

    // MARK: RFC examples

    @Test func rfc3863ExampleKeepsTuplesNotesContactAndForeignStatusElements() throws {
        let doc = try PIDFFixture.document(PIDFFixture.ietfExamples + "rfc3863-presence-extensions.xml")
        #expect(doc.entity == "pres:someone@example.com")
        #expect(doc.tuples.map(\.id) == ["bs35r9", "eg92n8"])
        let first = try #require(doc.tuples.first)
        #expect(first.status.basic == .open)
        #expect(first.status.extensions.map(\.name) == [
            XMLName("urn:ietf:params:xml:ns:pidf:im", "im"), XMLName("http://id.example.com/presence/", "location"),
        ])
        #expect(first.status.extensions.first?.text == "busy")
        #expect(first.contact == PIDFContact(uri: "im:someone@mobilecarrier.net", priority: "0.8"))
        #expect(first.notes == [
            PIDFNote("Don't Disturb Please!", lang: "en"), PIDFNote("Ne derangez pas, s'il vous plait", lang: "fr"),
        ])
        #expect(first.timestamp == "2001-10-27T16:49:29Z")
        #expect(doc.tuples.last?.contact == PIDFContact(uri: "mailto:someone@example.com", priority: "1.0"))
        #expect(doc.notes == [PIDFNote("I'll be in Tokyo next week")])
    }

    @Test func rfc4480ExampleDecodesEveryRPIDElement() throws {
        let doc = try PIDFFixture.document(PIDFFixture.ietfExamples + "rfc4480-rpid.xml")
        #expect(doc.tuples.map(\.id) == ["bs35r9", "ty4658", "eg92n8"])
        #expect(doc.tuples[0].deviceIDs == ["urn:device:0003ba4811e3"])
        #expect(doc.tuples[0].rpid.relationship?.tokens == ["self"])
        #expect(doc.tuples[0].rpid.serviceClass?.tokens == ["electronic"])
        #expect(doc.tuples[1].rpid.relationship?.tokens == ["assistant"])
        #expect(doc.tuples[2].rpid.class == "email")
        #expect(doc.tuples[2].rpid.statusIcon == RPIDStatusIcon(uri: "http://example.com/mail.png"))

        let device = try #require(doc.devices.first)
        #expect(device.id == "pc147")
        #expect(device.rpid.userInput == RPIDUserInput(.idle, idleThreshold: 600, lastInput: "2004-10-21T13:20:00-05:00"))
        #expect(device.deviceID == "urn:device:0003ba4811e3")
        #expect(device.notes == [PIDFNote("PC")])

        let person = try #require(doc.persons.first)
        let rpid = person.rpid
        #expect(rpid.activities == [RPIDTokens(
            from: "2005-05-30T12:00:00+05:00", until: "2005-05-30T17:00:00+05:00",
            notes: [PIDFNote("Far away")], values: [.token("away")])])
        #expect(rpid.class == "calendar")
        #expect(rpid.mood?.values == [.token("angry"), .other("brooding")])
        #expect(rpid.placeIs == RPIDPlaceIs(audio: "noisy"))
        #expect(rpid.placeType?.values == [.token("residence", namespace: NS.locationTypes)])
        #expect(rpid.privacy?.tokens == ["unknown"])
        #expect(rpid.sphere?.values == [.text("bowling league")])
        #expect(rpid.statusIcon?.uri == "http://example.com/play.gif")
        #expect(rpid.timeOffsets == [RPIDTimeOffset(minutes: -240)])
        #expect(person.notes == [PIDFNote("Scoring 120")])
        #expect(person.timestamp == "2005-05-30T16:09:44+05:00")
        #expect(person.extensions.isEmpty && doc.extensions.isEmpty)
    }

    @Test func rfc4482ExampleDecodesCIPIDInTupleAndPerson() throws {
        let doc = try PIDFFixture.document(PIDFFixture.ietfExamples + "rfc4482-cipid.xml")
        let assistant = try #require(doc.tuples.last)
        #expect(assistant.status.basic == .closed)
        #expect(assistant.rpid.relationship?.tokens == ["assistant"])
        #expect(assistant.cipid == CIPID(card: "http://example.com/~assistant/card.vcd", homepage: "http://example.com/~assistant"))
        #expect(doc.persons.first?.cipid == CIPID(
            card: "http://example.com/~someone/card.vcd", homepage: "http://example.com/~someone",
            icon: "http://example.com/~someone/icon.gif", map: "http://example.com/~someone/gml-map.xml",
            sound: "http://example.com/~someone/whoosh.wav"))
        #expect(doc.persons.first?.timestamp == "2005-05-30T22:02:44+05:00")
    }

    @Test func rfc5196ExampleDecodesFlagsListsAndDescriptions() throws {
        let doc = try PIDFFixture.document(PIDFFixture.ietfExamples + "rfc5196-caps.xml")
        let caps = try #require(doc.tuples.first?.status.capabilities)
        #expect(caps.flags == [.init("audio", true), .init("message", true), .init("video", false)])
        #expect(caps.flag("video") == false)
        #expect(caps.descriptions == [
            PIDFNote("Example service", lang: "en"), PIDFNote("Pe'lda szolga'ltata's", lang: "hu"),
        ])
        #expect(caps.lists == [
            .init("duplex", supported: ["full"]), .init("methods", supported: ["ACK", "BYE", "INVITE", "MESSAGE"]),
            .init("schemes", supported: ["sip"]),
        ])
        // <caps:lowerthan maxvalue="10"/> has an attribute the list model cannot hold.
        #expect(caps.extensions.map(\.name) == [XMLName(NS.caps, "priority")])
        let device = try #require(doc.devices.first)
        #expect(device.deviceID == "urn:uuid:d27459b7-8213-4395-aa77-ed859a3e5b3a")
        #expect(device.extensions.map(\.name) == [XMLName(NS.caps, "devcaps")])
    }

    @Test func everyCapabilityOfTheSchemaIsDecodedAndServcapsInStatusIsAccepted() throws {
        let doc = try PIDFFixture.document(PIDFFixture.fixtures + "caps.xml")
        let caps = try #require(doc.tuples.first?.status.capabilities)
        #expect(caps.flags.map(\.name) == [
            "application", "audio", "automata", "control", "data", "isfocus", "message", "text", "video",
        ])
        #expect(caps.flags.filter(\.value).map(\.name) == ["audio", "message", "text"])
        #expect(caps.lists == [
            .init("actor", supported: ["principal"], notSupported: ["attendant", "msg-taker"]),
            .init("class", supported: ["business"]),
            .init("duplex", supported: ["full"], notSupported: ["half"]),
            .init("event-packages", supported: ["dialog", "presence"]),
            .init("extensions", supported: ["gruu", "timer"], notSupported: ["rel100"]),
            .init("methods", supported: ["INVITE", "MESSAGE", "SUBSCRIBE"], notSupported: ["PUBLISH"]),
            .init("languages", supported: ["en", "de"]),
            .init("schemes", supported: ["sip", "tel"], notSupported: ["im"]),
            .init("type", supported: ["text/plain", "message/cpim"]),
        ])
        #expect(caps.descriptions.map(\.lang) == ["en", "de"])
        #expect(caps.extensions.isEmpty)
        // In status, out of schema order, xs:boolean 1/0: read and put in schema order.
        let legacy = try #require(doc.tuples.last?.status.capabilities)
        #expect(legacy.flags == [.init("audio", false), .init("video", true)])
    }

    @Test("servcaps children read out of schema order are kept in schema order: flags, lists and kept elements each (RFC 5196 §6)")
    func servcapsOutOfOrderIsPutInSchemaOrder() throws {
        let xml = """
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:caps="urn:ietf:params:xml:ns:pidf:caps" entity="pres:a@example.com">
              <tuple id="t"><status><basic>open</basic>
                <caps:servcaps>
                  <caps:video>true</caps:video><caps:audio>false</caps:audio>
                  <caps:methods><caps:supported><caps:INVITE/></caps:supported></caps:methods>
                  <caps:actor><caps:supported><caps:principal/></caps:supported></caps:actor>
                  <caps:video>false</caps:video>
                  <caps:audio>maybe</caps:audio>
                </caps:servcaps>
              </status></tuple>
            </presence>
            """
        let doc = try PIDFDocument(bytes: Array(xml.utf8))
        let caps = try #require(doc.tuples.first?.status.capabilities)
        #expect(caps.flags == [.init("audio", false), .init("video", true)])
        #expect(caps.lists == [.init("actor", supported: ["principal"]), .init("methods", supported: ["INVITE"])])
        // The second video and the non-boolean audio cannot be held: kept, in schema order too.
        #expect(caps.extensions.map(\.name.local) == ["audio", "video"])
        #expect(try PIDFDocument(bytes: doc.serialized()) == doc)
    }

    @Test func cipidIsReadInPersonTupleAndDirectlyUnderPresence() throws {
        let doc = try PIDFFixture.document(PIDFFixture.fixtures + "cipid.xml")
        #expect(doc.cipid == CIPID(displayNames: [PIDFNote("Grace at Example")], sound: "https://example.com/~grace/hello.wav"))
        #expect(doc.tuples.first?.cipid == CIPID(
            displayNames: [PIDFNote("Grace (mobile)")], icon: "https://example.com/~grace/mobile.png"))
        let person = try #require(doc.persons.first?.cipid)
        #expect(person.displayNames == [PIDFNote("Grace Hopper", lang: "en"), PIDFNote("グレース・ホッパー", lang: "ja")])
        #expect(person.card == "https://example.com/~grace/card.vcf")
        #expect(person.map == "https://example.com/~grace/map.xml")
    }

    @Test func rpidWithIDFromUntilAndNotesIsDecodedInPersonTupleAndDevice() throws {
        let doc = try PIDFFixture.document(PIDFFixture.fixtures + "rich-default.xml")
        let voice = try #require(doc.tuples.first)
        #expect(voice.rpid.statusIcon == RPIDStatusIcon(
            uri: "https://example.com/icons/phone.png", id: "si-1", from: "2024-03-01T08:00:00Z",
            until: "2024-03-01T18:00:00Z"))
        #expect(voice.rpid.userInput == RPIDUserInput(.active, idleThreshold: 300, lastInput: "2024-03-01T09:55:00Z", id: "ui-1"))
        #expect(voice.notes.map(\.lang) == ["en", "de", "ja"])
        #expect(voice.notes.last?.text == "席にいます")
        #expect(doc.notes == [PIDFNote("Back on Monday", lang: "en"), PIDFNote("De retour lundi", lang: "fr")])

        let rpid = try #require(doc.persons.first?.rpid)
        #expect(rpid.activities.count == 2)
        #expect(rpid.activities.first == RPIDTokens(
            id: "a-1", from: "2024-03-01T09:00:00Z", until: "2024-03-01T11:00:00Z",
            notes: [PIDFNote("Quarterly review", lang: "en")], values: [.token("meeting"), .token("on-the-phone")]))
        #expect(rpid.activities.last?.values == [.other("commuting", lang: "en")])
        #expect(rpid.mood?.id == "m-1")
        #expect(rpid.mood?.values == [.token("happy"), .other("caffeinated", lang: "en")])
        #expect(rpid.placeIs == RPIDPlaceIs(
            id: "pi-1", from: "2024-03-01T09:00:00Z", until: "2024-03-01T17:00:00Z",
            notes: [PIDFNote("open-plan office")], audio: "noisy", video: "ok", text: "inappropriate"))
        #expect(rpid.placeType?.values == [.token("office", namespace: NS.locationTypes)])
        #expect(rpid.placeType?.notes == [PIDFNote("Headquarters")])
        #expect(rpid.privacy?.tokens == ["text"])
        #expect(rpid.sphere?.tokens == ["work"])
        #expect(rpid.timeOffsets == [
            RPIDTimeOffset(minutes: 60, description: "Central European Time", id: "to-1",
                           from: "2024-03-01T00:00:00Z", until: "2024-03-31T01:00:00Z"),
            RPIDTimeOffset(minutes: 120, description: "Central European Summer Time",
                           from: "2024-03-31T01:00:00Z", until: "2024-10-27T01:00:00Z"),
        ])
        #expect(doc.devices.first?.rpid.userInput?.value == .idle)
    }

    // MARK: Leniency and extensions

    @Test func baresipUnknownBasicIsKeptAsUnrecognizedNotRejected() throws {
        let doc = try PIDFFixture.document(PIDFFixture.fixtures + "baresip-unknown-basic.xml")
        let status = try #require(doc.tuples.first?.status)
        #expect(status.basic == nil)
        #expect(status.unrecognizedBasic == "unknown")
        #expect(doc.persons.first?.rpid.activities == [RPIDTokens(values: [.token("unknown")])])
        let output = PIDFFixture.text(doc.serialized())
        #expect(output.contains("<basic>unknown</basic>"))
        // Written in schema order: the tuple before the person.
        let tuple = try #require(output.range(of: "<tuple"))
        let person = try #require(output.range(of: "<dm:person"))
        #expect(tuple.lowerBound < person.lowerBound)
    }

    @Test func unknownElementsGoToTheNearestExtensionsVerbatim() throws {
        let doc = try PIDFFixture.document(PIDFFixture.fixtures + "extensions.xml")
        let vendor = "urn:example:vendor"
        let tuple = try #require(doc.tuples.first)
        #expect(tuple.status.extensions.map(\.name) == [XMLName(vendor, "im"), XMLName(vendor, "flags")])
        #expect(tuple.status.extensions.first?[attribute: "state"] == "busy")
        let caps = try #require(tuple.status.capabilities)
        #expect(caps.flags.isEmpty)
        #expect(caps.extensions.map(\.name) == [XMLName(NS.caps, "audio"), XMLName(NS.caps, "priority"), XMLName(vendor, "codec")])
        #expect(tuple.extensions.map(\.name) == [XMLName(vendor, "location"), XMLName(NS.rpid, "time-offset")])

        let person = try #require(doc.persons.first)
        let activity = try #require(person.rpid.activities.first)
        #expect(activity.tokens == ["busy"])
        #expect(activity.values.count == 3)
        if case .extensionElement(let custom) = activity.values[1] {
            #expect(custom.name == XMLName(vendor, "custom-activity"))
            #expect(custom.children.count == 2)
        } else {
            Issue.record("expected the vendor activity as an extension element")
        }
        #expect(person.rpid.mood?.tokens == ["sad"])
        #expect(person.cipid.card == "https://example.net/erin.vcf")
        #expect(person.extensions.map(\.name.local) == ["mood", "future-element", "card", "point"])
        #expect(doc.devices.first?.extensions.map(\.name) == [XMLName(vendor, "battery")])
        #expect(doc.extensions.map(\.name) == [XMLName(vendor, "presence-extension"), XMLName("urn:example:other", "unprefixed")])

        let output = PIDFFixture.text(doc.serialized())
        #expect(output.contains(#"<v:flags xmlns:v="urn:example:vendor"><v:a/><v:b x="1"><v:c>deep</v:c></v:b></v:flags>"#))
        #expect(output.contains("<v:country>DE</v:country>\n        <v:city lang=\"de\">Köln &amp; Bonn</v:city>\n    </v:location>"))
        #expect(output.contains(#"<unprefixed xmlns="urn:example:other">text only</unprefixed>"#))
    }

    // MARK: Writing

    @Test func writerDeclaresOnlyUsedNamespacesOnTheRootAndOrdersChildrenAsTheSchemasRequire() throws {
        let doc = try PIDFFixture.document(PIDFFixture.fixtures + "rich-default.xml")
        let root = doc.xml
        #expect(root.prefix == nil)
        #expect(root.namespaceDeclarations.map { "\($0.prefix ?? ""):\($0.uri)" } == [
            ":" + NS.pidf, "dm:" + NS.dataModel, "rpid:" + NS.rpid, "c:" + NS.cipid, "caps:" + NS.caps,
            "lt:" + NS.locationTypes,
        ])
        let reparsed = try XMLParser.parse(doc.serialized())
        let top = Array(reparsed.elements)
        #expect(top.map(\.name.local) == ["tuple", "tuple", "note", "note", "person", "device"])
        let tuple = try #require(top.first)
        #expect(Array(tuple.elements).map(\.name.local) == [
            "status", "deviceID", "servcaps", "class", "relationship", "service-class", "status-icon", "user-input",
            "homepage", "contact", "note", "note", "note", "timestamp",
        ])
        let device = try #require(top.last)
        #expect(Array(device.elements).map(\.name.local) == ["user-input", "deviceID", "note", "timestamp"])
    }

    @Test func builtDocumentUsesTheHousePrefixes() throws {
        var person = PIDFPerson(id: "p1")
        person.rpid.activities = [RPIDTokens(values: [.token("busy")])]
        let doc = PIDFDocument(entity: "sip:h@example.com", tuples: [PIDFTuple(id: "t1", status: PIDFStatus(basic: .open))], persons: [person])
        let expected = """
            <?xml version="1.0" encoding="UTF-8"?>
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" \
            xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="sip:h@example.com">
              <tuple id="t1">
                <status>
                  <basic>open</basic>
                </status>
              </tuple>
              <dm:person id="p1">
                <rpid:activities>
                  <rpid:busy/>
                </rpid:activities>
              </dm:person>
            </presence>

            """
        #expect(PIDFFixture.text(doc.serialized()) == expected)
        #expect(try PIDFDocument(bytes: doc.serialized()) == doc)
    }

    // MARK: Errors

    @Test func tupleWithoutIDIsRejectedWithItsLineAndColumn() throws {
        let body = """
            <?xml version="1.0"?>
            <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="pres:a@example.com">
              <tuple id="ok"><status/></tuple>
              <tuple>
                <status><basic>open</basic></status>
              </tuple>
            </presence>
            """
        let error = try #require(throws: XMLError.self) { try PIDFDocument(bytes: Array(body.utf8)) }
        #expect(error.code == .unexpectedContent)
        #expect(error.line == 4)
        #expect(error.column > 0)
        #expect(error.message.contains("id"))
    }

    @Test func personWithoutIDIsRejectedWithItsLine() throws {
        let body = """
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model"
                entity="pres:a@example.com">
              <dm:person/>
            </presence>
            """
        let error = try #require(throws: XMLError.self) { try PIDFDocument(bytes: Array(body.utf8)) }
        #expect(error.code == .unexpectedContent)
        #expect(error.line == 3)
    }

    @Test func nonPIDFRootIsRejectedAtTheRoot() throws {
        let msrtc = try #require(throws: XMLError.self) {
            try PIDFFixture.document(PIDFFixture.msExamples + "4.11-msrtc-notify.xml")
        }
        #expect(msrtc.code == .unexpectedContent)
        #expect(msrtc.line > 0 && msrtc.column > 0)

        let body = #"<presence xmlns="urn:example:not-pidf" entity="pres:a@example.com"/>"#
        let wrongNamespace = try #require(throws: XMLError.self) { try PIDFDocument(bytes: Array(body.utf8)) }
        #expect(wrongNamespace.code == .unexpectedContent)
        #expect(wrongNamespace.line == 1)

        let diff = try #require(throws: XMLError.self) {
            try PIDFFixture.document(PIDFFixture.ietfExamples + "rfc5262-pidf-full.xml")
        }
        #expect(diff.code == .unexpectedContent)
        #expect(diff.line == 9)  // libxml2 locates an element where its start tag ends
    }

    @Test func rfc4479ExampleWithoutEntityIsRejected() throws {
        // RFC 4479 §7.1 omits the entity attribute that RFC 3863 §4.1.1 requires.
        let error = try #require(throws: XMLError.self) {
            try PIDFFixture.document(PIDFFixture.ietfExamples + "rfc4479-data-model.xml")
        }
        #expect(error.code == .unexpectedContent)
        #expect(error.line == 6)  // the end of the multi-line <presence> start tag
        #expect(error.message.contains("entity"))
    }

    @Test func malformedXMLIsReportedByTheParser() throws {
        let error = try #require(throws: XMLError.self) {
            try PIDFDocument(bytes: Array(#"<presence xmlns="urn:ietf:params:xml:ns:pidf" entity="x"><tuple>"#.utf8))
        }
        #expect(error.code == .notWellFormed)
    }
}

/// RPID's reads of one part of an element (made in its box) give what the element getters give.
@Suite struct RPIDPartReadTests {
    @Test func partReadsMatchTheGetters() {
        var generator = SystemRandomNumberGenerator()
        let values: [RPIDValue] = [.token("home"), .other("Room 5", lang: "en"), .text("bowling"), .token("x", namespace: "urn:x")]
        let notes = [PIDFNote("by the window", lang: "en"), PIDFNote("second")]
        func tokens() -> RPIDTokens? {
            Bool.random(using: &generator) ? nil : RPIDTokens(values: Array(values.shuffled(using: &generator).prefix(Int.random(in: 0...3, using: &generator))))
        }
        for _ in 0..<500 {
            var rpid = RPID()
            if Bool.random(using: &generator) { rpid.mood = tokens() }
            if Bool.random(using: &generator) { rpid.sphere = tokens() }
            if Bool.random(using: &generator) { rpid.privacy = tokens() }
            if Bool.random(using: &generator) { rpid.placeType = tokens() }
            if Bool.random(using: &generator) {
                rpid.placeIs = RPIDPlaceIs(notes: Array(notes.prefix(Int.random(in: 0...2, using: &generator))), audio: "quiet")
            }
            if Bool.random(using: &generator) {
                rpid.userInput = RPIDUserInput(Bool.random(using: &generator) ? .active : .idle, idleThreshold: 600)
            }
            #expect(rpid.hasMood == (rpid.mood != nil))
            #expect(rpid.hasSphere == (rpid.sphere != nil))
            #expect(rpid.hasPrivacy == (rpid.privacy != nil))
            #expect(rpid.userInputValue == rpid.userInput?.value)
            #expect(rpid.firstPlaceTypeValue == rpid.placeType?.values.first)
            #expect(rpid.firstPlaceIsNoteText == rpid.placeIs?.notes.first?.text)
        }
    }
}

/// The person decoder tells its children apart by namespace (read once) and local name.
@Suite struct PIDFPersonDispatchTests {
    @Test func childrenOfEveryNamespaceGoWhereTheirNamesSay() throws {
        let xml = """
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model"
                xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" xmlns:c="urn:ietf:params:xml:ns:pidf:cipid"
                xmlns:ep="urn:ietf:params:xml:ns:pidf:status:rpid-status"
                xmlns:same="urn:ietf:params:xml:ns:pidf:rpiX" xmlns:samec="urn:ietf:params:xml:ns:pidf:cipiX"
                entity="sip:a@example.net">
              <dm:person id="p">
                <dm:note>one</dm:note><dm:timestamp>2026-11-22T10:00:00Z</dm:timestamp><dm:deviceID>d</dm:deviceID>
                <rpid:mood><rpid:happy/></rpid:mood><ep:activities><ep:activity>away</ep:activity></ep:activities>
                <ep:activity>lost</ep:activity><c:display-name>A</c:display-name><c:icon>http://i</c:icon>
                <same:mood><same:happy/></same:mood><samec:icon>http://j</samec:icon><note>pidf</note>
                <rpid:unknown-element/><c:unknown-element/><dm:note>two</dm:note>
              </dm:person>
            </presence>
            """
        let person = try #require(try PIDFDocument(bytes: Array(xml.utf8)).persons.first)
        #expect(person.notes.map(\.text) == ["one", "two"])
        #expect(person.timestamp == "2026-11-22T10:00:00Z")
        #expect(person.rpid.mood?.values == [.token("happy")])
        #expect(person.rpid.legacyActivities == ["away"])
        #expect(person.cipid.displayNames.map(\.text) == ["A"])
        #expect(person.cipid.icon == "http://i")
        #expect(person.extensions.map(\.name) == [
            XMLName(NS.dataModel, "deviceID"), XMLName(NS.rpidStatus, "activity"),
            XMLName("urn:ietf:params:xml:ns:pidf:rpiX", "mood"), XMLName("urn:ietf:params:xml:ns:pidf:cipiX", "icon"),
            XMLName(NS.pidf, "note"), XMLName(NS.rpid, "unknown-element"), XMLName(NS.cipid, "unknown-element"),
        ])
    }
}
