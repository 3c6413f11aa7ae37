import PresenceDocuments
import Testing
import XMLBridge

/// Values read from the [MS-PRES] examples, checked against the spec text.
@Suite struct MSCategoriesTests {
    /// §2.2.2.4.3 BENOTIFY.
    @Test func benotifyCarriesAggregateStateInAMeeting() throws {
        let doc = try CategoriesDocument(bytes: try loadExample("2.2.2.4.3-benotify-categories.xml"))
        #expect(doc.uri == "sip:user2@contoso.com")
        #expect(doc.categories.map(\.name) == [.state, .services])
        let category = try #require(doc.categories.first)
        #expect(category.instance == 1 && category.publishTime == "2008-01-11T18:11:33.577")
        guard case .state(let state) = category.payload else { Issue.record("state not typed"); return }
        #expect(state.type == .aggregateState)
        #expect(state.availability == 6500)
        #expect(state.activities.map(\.token) == [.inAMeeting])
        #expect(state.endpointLocation == "Home_Custom_EndPoint_Location")
        #expect(state.meetingSubject == "Customer Meeting")
        #expect(state.meetingLocation == "Conference Room - Building 7")
        guard case .services(let services) = doc.categories[1].payload else { Issue.record("services not typed"); return }
        #expect(services.services.map(\.uri) == ["sip:user2@contoso.com"])
        #expect(services.services.first?.capabilities.map(\.name) == ["text", "gifInk", "isfInk"])
        #expect(services.services.first?.capabilities.first?.render == true)
        #expect(services.services.first?.capabilities.first?.attributes["deviceAvailability"] == "3500")
    }

    /// §2.2.2.7.1 machineState with the W13 delimiter block.
    @Test func machineStateReadsTheDelimitedBlockAndWritesItBack() throws {
        let root = try XMLParser.parse(try loadExample("2.2.2.7.1-state-machineState.xml"))
        let state = try MSState(xml: root)
        #expect(state.type == .machineState && state.manual == false && state.availability == 5000)
        #expect(state.timeZoneBias == 999 && state.timeZoneName == "Pacific Daylight Time")
        #expect(state.timeZoneAbbreviation == "PDT" && state.device == "computer")
        #expect(state.extensions.isEmpty)
        let written = XMLWriter().string(state.xml)
        #expect(written.contains(#"<delimiter xmlns="http://schemas.microsoft.com/2006/09/sip/commontypes"/>"#))
        #expect(written.contains(#"<end xmlns="http://schemas.microsoft.com/2006/09/sip/commontypes"/>"#))
        #expect(written.contains(#"xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="machineState""#))
    }

    @Test func stateWithoutDelimitedFieldsHasNoDelimiter() {
        let written = XMLWriter().string(MSState(type: .userState, availability: 3500).xml)
        #expect(!written.contains("delimiter") && !written.contains("<end"))
    }

    /// §2.2.2.7.1 custom activity.
    @Test func customActivityKeepsItsLCID() throws {
        let state = try MSState(xml: XMLParser.parse(try loadExample("2.2.2.7.1-state-aggregateState.xml")))
        #expect(state.availability == 9500)
        #expect(state.activities.first?.custom == [MSActivity.CustomActivity("Interviewing", lcid: "1033")])
    }

    @Test func stateWithoutXsiTypeIsAnErrorAtTheStateElement() {
        let body = """
            <categories xmlns="http://schemas.microsoft.com/2006/09/sip/categories" uri="sip:a@b">
              <category name="state">
                <state xmlns="http://schemas.microsoft.com/2006/09/sip/state"><availability>3500</availability></state>
              </category>
            </categories>
            """
        #expect {
            _ = try CategoriesDocument(bytes: Array(body.utf8))
        } throws: { error in
            guard let e = error as? XMLError else { return false }
            return e.code == .unexpectedContent && e.line == 3 && e.column > 1 && e.message.contains("xsi:type")
        }
    }

    @Test func nonNumericAvailabilityIsAnErrorAtTheAvailabilityElement() {
        let body = """
            <state xmlns="http://schemas.microsoft.com/2006/09/sip/state"
                   xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="userState">
              <availability>busy</availability>
            </state>
            """
        #expect {
            _ = try MSState(xml: XMLParser.parse(body))
        } throws: { error in
            guard let e = error as? XMLError else { return false }
            return e.line == 3 && e.column > 1 && e.message.contains("availability")
        }
    }

    @Test func prefixedXsiTypeValueIsReadWithoutItsPrefix() throws {
        let body = """
            <s:state xmlns:s="http://schemas.microsoft.com/2006/09/sip/state"
                     xmlns:i="http://www.w3.org/2001/XMLSchema-instance" i:type="s:aggregateState"/>
            """
        #expect(try MSState(xml: XMLParser.parse(body)).type == .aggregateState)
    }

    @Test func unknownElementsAfterDelimiterAreKeptVerbatim() throws {
        let body = """
            <state xmlns="http://schemas.microsoft.com/2006/09/sip/state"
                   xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="machineState">
              <availability>3500</availability>
              <delimiter xmlns="http://schemas.microsoft.com/2006/09/sip/commontypes"/>
              <device>computer</device>
              <futureThing level="2"><x>y</x></futureThing>
              <end xmlns="http://schemas.microsoft.com/2006/09/sip/commontypes"/>
            </state>
            """
        let state = try MSState(xml: XMLParser.parse(body))
        #expect(state.device == "computer")
        #expect(state.extensions.map(\.name.local) == ["futureThing"])
        #expect(try MSState(xml: XMLParser.parse(XMLWriter().bytes(state.xml))) == state)
    }

    /// §4.13: legacyInterop and userProperties inherit
    /// the categories namespace, or have none in a bare `<category>`.
    @Test func categoriesNamespacePayloadsAreTyped() throws {
        let interop = try Category(xml: XMLParser.parse(try loadExample("4.13-server-legacyInterop.xml")))
        #expect(interop.container == 32000)
        #expect(interop.payload == .legacyInterop(LegacyInterop(availability: 18500)))
        let props = try Category(xml: XMLParser.parse(try loadExample("4.13-server-userProperties.xml")))
        guard case .userProperties(let p) = props.payload else { Issue.record("not typed"); return }
        #expect(p.lines == [UserProperties.Line(lineType: "Uc", uri: "tel:+11234567890;ext=67890")])
        #expect(p.fields.first == UserProperties.Field("telephonyMode", "Uc"))
        #expect(p.fields.contains(UserProperties.Field("exumURL", "EUM:bob@contoso.com;phone-context=EX-OCS-SIPSec.exchange.contoso.com")))
    }

    /// §2.2.2.7.5 example 4 writes `type` without the delimiter the schema requires.
    @Test func contactCardTypeWithoutDelimiterIsRead() throws {
        let card = try ContactCard(xml: XMLParser.parse(try loadExample("2.2.2.7.5-contactCard-4-huntgroup.xml")))
        #expect(card.displayNames == [ContactCard.LocalizedText("HumanResource")])
        #expect(card.automaton == true && card.type == "huntgroup" && card.descriptionText == "Human Resources Group")
        let phones = try ContactCard(xml: XMLParser.parse(try loadExample("2.2.2.7.5-contactCard-2-phones.xml")))
        #expect(phones.phones.map(\.type) == ["work", "mobile"])
        #expect(phones.phones.first?.uri == "tel:1234567890;phone-context=dialstring")
        let uc = try ContactCard(xml: XMLParser.parse(try loadExample("2.2.2.7.5-contactCard-3-isUCEnabled.xml")))
        #expect(uc.isUCEnabled == true)
    }

    /// §2.2.2.7.8: a decoded WorkingHours is kept as its recorded events; it
    /// reads, compares and writes exactly as the tree it came from.
    @Test func recordedWorkingHoursReadsComparesAndWritesAsItsTree() throws {
        let bytes = try loadExample("2.2.2.7.8-calendarData-workingHours.xml")
        let tree = try XMLParser.parse(bytes)
        let decoded = try CalendarData(cursor: XMLParser.events(bytes).root)
        let treeWorkingHours = try #require(tree.element(XMLName(NS.exchangeTypes, "WorkingHours")))
        #expect(decoded.hasWorkingHours)
        #expect(decoded.workingHours == treeWorkingHours)
        let built = CalendarData(
            mailboxID: decoded.mailboxID, majorVersion: decoded.majorVersion, minorVersion: decoded.minorVersion,
            workingHours: treeWorkingHours, freeBusy: decoded.freeBusy, extensions: decoded.extensions)
        #expect(decoded == built)
        #expect(decoded.hashValue == built.hashValue)
        func document(_ data: CalendarData) -> [UInt8] {
            CategoriesDocument(uri: "sip:bob@contoso.com", categories: [
                Category(name: .calendarData, instance: 0, payload: .calendarData(data)),
            ]).serialized()
        }
        #expect(String(decoding: document(decoded), as: UTF8.self) == String(decoding: document(built), as: UTF8.self))
        var changed = decoded
        changed.workingHours = nil
        #expect(!changed.hasWorkingHours && changed != decoded)
    }

    /// §2.2.2.7.8 and §4.3.3: WorkingHours verbatim, freeBusy attributes, missing mailboxID.
    @Test func calendarDataReadsWorkingHoursFreeBusyAndMissingMailbox() throws {
        let wh = try CalendarData(xml: XMLParser.parse(try loadExample("2.2.2.7.8-calendarData-workingHours.xml")))
        #expect(wh.mailboxID == "bob@contoso.com")
        #expect(wh.workingHours?.element(XMLName(NS.exchangeTypes, "TimeZone")) != nil)
        let fb = try CalendarData(xml: XMLParser.parse(try loadExample("2.2.2.7.8-calendarData-freeBusy.xml")))
        #expect(fb.freeBusy == CalendarData.FreeBusy(startTime: "2009-10-22T07:00:00Z", granularity: "PT15M", encodingVersion: "1"))
        let publish = try CategoryPublish(bytes: try loadExample("4.3.3-publish-calendarData.xml"))
        let empties = publish.publications.filter { $0.payload == .calendarData(CalendarData()) }
        #expect(empties.map(\.container).sorted() == [100, 100, 32000, 32000])
    }

    /// §2.2.2.7.2: capability elements with white space inside (schema-invalid in the spec).
    @Test func deviceCapabilitiesWithWhitespaceContent() throws {
        let device = try MSDevice(xml: XMLParser.parse(try loadExample("2.2.2.7.2-device-1.xml")))
        #expect(device.endpointID == "2CD4F7CA-B1D1-5EDA-8D79-79EE4298414D")
        #expect(device.capabilities.map(\.uri) == ["sip:bob@contoso.com", "bob@exchange.contoso.com"])
        #expect(device.capabilities.first?.items.map(\.name) == ["text", "gifInk", "isfInk", "breakthrough", "applicationSharing"])
        #expect(device.capabilities.last?.items.first?.attributes["version"] == "655616")
        #expect(device.timezone == "00:00:00-00:00" && device.machineName == "BOB-B")
    }

    @Test func unknownCategoryIsKeptVerbatim() throws {
        let body = #"<category xmlns="http://schemas.microsoft.com/2006/09/sip/categories" name="routing" flavour="x"><routing xmlns="urn:x"><flags value="block"/></routing></category>"#
        let category = try Category(xml: XMLParser.parse(body))
        #expect(category.otherAttributes.map(\.value) == ["x"])
        guard case .other(let nodes) = category.payload else { Issue.record("expected .other"); return }
        #expect(nodes.count == 1)
        #expect(try Category(xml: XMLParser.parse(XMLWriter().bytes(category.xml))) == category)
    }

    /// The category's attributes are read in one pass: in any order, with unknown, namespaced
    /// and unknown-valued ones, each field is what a lookup by name gives.
    @Test func categoryAttributesInAnyOrderReadAsLookedUp() throws {
        let pool = [
            #"name="note""#, #"instance="7""#, #"container=" 300 ""#, #"version="4""#,
            #"publishTime="2008-01-11T18:11:33.577""#, #"expires="3600""#, #"endpointId="{E1}""#,
            #"flavour="x""#, #"x:name="ns""#, #"x:instance="9""#, #"zeta="z""#,
        ]
        let expireTypes = [#"expireType="user""#, #"expireType="someday""#]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var attributes = pool.filter { $0.hasPrefix("name=") || Bool.random(using: &generator) }
            if Bool.random(using: &generator) { attributes.append(expireTypes.randomElement(using: &generator)!) }
            attributes.shuffle(using: &generator)
            let body = #"<category xmlns="http://schemas.microsoft.com/2006/09/sip/categories" xmlns:x="urn:x" "#
                + attributes.joined(separator: " ") + "/>"
            let tree = try XMLParser.parse(Array(body.utf8))
            let category = try Category(cursor: XMLParser.events(Array(body.utf8), vocabulary: .presence).root)
            func number(_ local: String) -> UInt32? { tree[attribute: local].map { UInt32($0.trimmingXMLWhitespace())! } }
            #expect(category.name.rawValue == tree[attribute: "name"])
            #expect(category.instance == number("instance") && category.container == number("container"))
            #expect(category.version == number("version") && category.expires == number("expires"))
            #expect(category.publishTime == tree[attribute: "publishTime"] && category.endpointID == tree[attribute: "endpointId"])
            #expect(category.expireType == tree[attribute: "expireType"].flatMap(ExpireType.init(rawValue:)))
            let known = ["name", "instance", "container", "version", "publishTime", "expireType", "expires", "endpointId"]
            var other = tree.attributes.filter { !($0.name.namespace.isEmpty && known.contains($0.name.local)) }
            if category.expireType == nil, let raw = tree[attribute: "expireType"] { other.append(XMLAttribute(XMLName("", "expireType"), raw)) }
            #expect(category.otherAttributes.map { "\($0.name) \($0.prefix ?? "-") \($0.value)" }
                == other.map { "\($0.name) \($0.prefix ?? "-") \($0.value)" })
        }
    }

    @Test func categoryAttributeErrorsComeInTheirOrder() throws {
        func failure(_ attributes: String) -> String? {
            let body = #"<category xmlns="http://schemas.microsoft.com/2006/09/sip/categories" "# + attributes + "/>"
            do { _ = try Category(cursor: XMLParser.events(Array(body.utf8), vocabulary: .presence).root); return nil } catch { return error.message }
        }
        #expect(failure(#"version="v" instance="i""#) == "<category>: category without a name attribute")
        #expect(failure(#"version="v" name="note" instance="i""#) == #"<category>: attribute instance="i" is not an unsignedInt"#)
        #expect(failure(#"expires="e" version="v" name="note""#) == #"<category>: attribute version="v" is not an unsignedInt"#)
        #expect(failure(#"expires="e" name="note""#) == #"<category>: attribute expires="e" is not an unsignedInt"#)
    }

    /// A state's attributes are read in one pass and its fields set at once: in any order, with
    /// unknown and namespaced attributes and repeated children, each field is what a lookup by
    /// name (and, for a child, the last one) gives.
    @Test func stateAttributesAndChildrenInAnyOrderReadAsLookedUp() throws {
        let pool = [
            #"manual="true""#, #"startTime="2008-01-11T18:11:33.577""#, #"uri="sip:a@b""#, #"endpointId="{E}""#,
            #"lastActive="2008-01-11T18:11:33Z""#, #"majorVersion="3""#, #"minorVersion="0""#, #"other="o""#,
            #"x:uri="ns""#, #"x:type="notThis""#,
        ]
        let children = [
            "<availability>3500</availability>", #"<activity token="away"/>"#, "<endpointLocation>Home</endpointLocation>",
            "<meetingSubject>S</meetingSubject>", "<meetingLocation>L</meetingLocation>", "<timeZoneBias>-60</timeZoneBias>",
            "<device>computer</device>", "<treatLocationAsProximate>true</treatLocationAsProximate>",
            "<endpointLocation>Office</endpointLocation>", #"<x:extra a="1"/>"#,
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var attributes = pool.filter { _ in Bool.random(using: &generator) } + [#"xsi:type="ns:aggregateState""#]
            attributes.shuffle(using: &generator)
            let content = children.filter { _ in Bool.random(using: &generator) }.shuffled(using: &generator)
            let body = #"<state xmlns="http://schemas.microsoft.com/2006/09/sip/state" xmlns:x="urn:x" "#
                + #"xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" "# + attributes.joined(separator: " ") + ">"
                + content.joined() + "</state>"
            let tree = try XMLParser.parse(Array(body.utf8))
            let state = try MSState(cursor: XMLParser.events(Array(body.utf8), vocabulary: .presence).root)
            #expect(state.type == .aggregateState && state.manual == tree[attribute: "manual"].map { $0 == "true" })
            #expect(state.startTime == tree[attribute: "startTime"] && state.uri == tree[attribute: "uri"])
            #expect(state.endpointID == tree[attribute: "endpointId"] && state.lastActive == tree[attribute: "lastActive"])
            #expect(state.majorVersion == tree[attribute: "majorVersion"] && state.minorVersion == tree[attribute: "minorVersion"])
            func last(_ local: String) -> String? {
                Array(tree.elements).last { $0.name == XMLName(NS.state, local) }.map { $0.text }
            }
            #expect(state.availability == last("availability").flatMap { UInt32($0) })
            #expect(state.activities.count == (last("activity") == nil ? 0 : 1))
            #expect(state.endpointLocation == last("endpointLocation") && state.meetingSubject == last("meetingSubject"))
            #expect(state.meetingLocation == last("meetingLocation") && state.device == last("device"))
            #expect(state.timeZoneBias == last("timeZoneBias").flatMap { Int($0) })
            #expect(state.treatLocationAsProximate == last("treatLocationAsProximate").map { $0 == "true" })
            #expect(state.extensions.map { $0.name } == Array(tree.elements).filter { $0.name.namespace == "urn:x" }.map { $0.name })
        }
    }

    /// A contact card's identity is read in one walk: names, display names and e-mails
    /// interleaved with other elements give the lists a search by name gives.
    @Test func identityReadsDisplayNamesAndEmailsInOrder() throws {
        let parts = [
            #"<name><displayName>A</displayName><x:o/><displayName LCID="1036">B</displayName></name>"#,
            "<email> a@example.com </email>", "<name/>", #"<x:name><displayName>no</displayName></x:name>"#,
            "<name><displayName>C</displayName></name>", "<email>c@example.com</email>", "<other>o</other>",
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let content = parts.filter { _ in Bool.random(using: &generator) }.shuffled(using: &generator).joined()
            let body = #"<contactCard xmlns="http://schemas.microsoft.com/2006/09/sip/contactcard" xmlns:x="urn:x"><identity>"#
                + content + "</identity></contactCard>"
            let card = try ContactCard(cursor: XMLParser.events(Array(body.utf8), vocabulary: .presence).root)
            let ns = NS.contactCard
            let identity = try #require(try XMLParser.parse(Array(body.utf8)).elements(XMLName(ns, "identity")).first)
            let displays = identity.elements(XMLName(ns, "name")).flatMap { $0.elements(XMLName(ns, "displayName")) }
            #expect(card.displayNames == displays.map { ContactCard.LocalizedText($0.trimmedText, lcid: $0[attribute: "LCID"]) })
            #expect(card.emails == identity.elements(XMLName(ns, "email")).map { $0.trimmedText })
        }
    }

    /// A note body's attributes are read in one pass: in any order, with unknown and namespaced
    /// ones, each field is what a lookup by name gives and the rest are kept in source order.
    @Test func noteBodyAttributesInAnyOrderReadAsLookedUp() throws {
        let pool = [#"type="OOF""#, #"uri="""#, #"startTime="2008-01-14T08:00:00Z""#, #"endTime="2008-01-15T08:00:00Z""#,
                    #"flavour="x""#, #"x:type="ns""#, #"zeta="z""#]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let attributes = pool.filter { _ in Bool.random(using: &generator) }.shuffled(using: &generator)
            let body = #"<note xmlns="http://schemas.microsoft.com/2006/09/sip/note" xmlns:x="urn:x"><body "#
                + attributes.joined(separator: " ") + ">Out</body><other/></note>"
            let note = try MSNote(cursor: XMLParser.events(Array(body.utf8), vocabulary: .presence).root)
            let tree = try #require(try XMLParser.parse(Array(body.utf8)).elements(XMLName(NS.note, "body")).first)
            let decoded = try #require(note.bodies.first)
            #expect(note.bodies.count == 1 && decoded.text == "Out")
            #expect(decoded.type == tree[attribute: "type"] && decoded.uri == tree[attribute: "uri"])
            #expect(decoded.startTime == tree[attribute: "startTime"] && decoded.endTime == tree[attribute: "endTime"])
            let known = ["type", "uri", "startTime", "endTime"]
            let other = tree.attributes.filter { !($0.name.namespace.isEmpty && known.contains($0.name.local)) }
            #expect(decoded.otherAttributes.map { "\($0.name) \($0.prefix ?? "-") \($0.value)" }
                == other.map { "\($0.name) \($0.prefix ?? "-") \($0.value)" })
        }
    }

    @Test func emptyCategoryHasNoPayload() throws {
        let c = try Category(xml: XMLParser.parse(#"<category xmlns="http://schemas.microsoft.com/2006/09/sip/categories" name="note" instance="0">  </category>"#))
        #expect(c.payload == nil && c.instance == 0)
    }

    /// The state's optional fields live out of line; copies stay independent values.
    @Test func stateCopiesAreIndependentAndEqualityIsByValue() {
        var original = MSState(type: .aggregateState, availability: 3500, endpointLocation: "Office")
        var copy = original
        copy.endpointLocation = "Home"
        copy.meetingSubject = "Review"
        #expect(original.endpointLocation == "Office" && original.meetingSubject == nil)
        #expect(copy.endpointLocation == "Home" && copy.meetingSubject == "Review")
        #expect(copy != original)
        copy.endpointLocation = "Office"
        copy.meetingSubject = nil
        #expect(copy == original && copy.hashValue == original.hashValue)
        original.endpointLocation = nil
        #expect(original == MSState(type: .aggregateState, availability: 3500))
        #expect(original.hashValue == MSState(type: .aggregateState, availability: 3500).hashValue)
    }
}
