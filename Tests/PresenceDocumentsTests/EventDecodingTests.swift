import Foundation
import PresenceDocuments
import Testing
import XMLBridge

/// PIDF and categories documents are decoded straight from parse events
/// (`init(bytes:)`, `init(cursor:)`); `init(xml:)` replays a tree into the
/// same decoder. Both entry points must give the same document, the same
/// errors at the same positions, and keep unknown extensions as the tree
/// parse builds them (RFC 3863 §4.4 `##other`, [MS-PRES] §2.2.2.1 `xs:any lax`).
@Suite struct EventDecodingTests {
    @Test("bytes decoded from events equal the tree decoded by replay", arguments: DirectWriterTests.files)
    func eventsAndTreeGiveTheSameDocument(_ file: String) throws {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        guard let tree = try? XMLParser.parse(bytes, vocabulary: .presence) else { return }
        switch (tree.name.namespace, tree.name.local) {
        case (NS.pidf, "presence"):
            let fromEvents = Result { () throws(XMLError) in try PIDFDocument(bytes: bytes) }
            let fromTree = Result { () throws(XMLError) in try PIDFDocument(xml: tree) }
            #expect(fromEvents == fromTree)
        case (NS.categories, "categories"):
            let fromEvents = Result { () throws(XMLError) in try CategoriesDocument(bytes: bytes) }
            let fromTree = Result { () throws(XMLError) in try CategoriesDocument(xml: tree) }
            #expect(fromEvents == fromTree)
        default:
            break
        }
    }

    @Test func unknownPIDFExtensionIsKeptWithItsPrefixDeclarationsAndMixedContent() throws {
        let doc = """
            <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="pres:a@example.com">
              <tuple id="t"><status><basic>open</basic></status>
                <x:geo xmlns:x="urn:example:geo" x:acc="3">near <x:b>the</x:b> lake</x:geo>
              </tuple>
            </presence>
            """
        let pidf = try PIDFDocument(bytes: Array(doc.utf8))
        let kept = try #require(pidf.tuples.first?.extensions.first)
        #expect(kept.name == XMLName("urn:example:geo", "geo"))
        #expect(kept.prefix == "x")
        #expect(kept.namespaceDeclarations.map(\.uri) == ["urn:example:geo"])
        #expect(kept.attribute(XMLName("urn:example:geo", "acc")) == "3")
        #expect(kept.children.count == 3)
        #expect(kept.text == "near  lake")
        #expect(kept.line == 3)
    }

    @Test func rpidElementTheModelCannotHoldStaysVerbatimAndNothingIsHalfTaken() throws {
        // RFC 4480 §3.7: place-is holds at most one audio; a second one makes the
        // element unrepresentable, so it is kept whole, not partly decoded.
        let doc = """
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model"
                xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="pres:a@example.com">
              <dm:person id="p"><rpid:place-is><rpid:audio><rpid:quiet/></rpid:audio><rpid:audio><rpid:noisy/></rpid:audio></rpid:place-is></dm:person>
            </presence>
            """
        let person = try #require(try PIDFDocument(bytes: Array(doc.utf8)).persons.first)
        #expect(person.rpid.placeIs == nil)
        #expect(person.extensions.map(\.name) == [XMLName(NS.rpid, "place-is")])
    }

    @Test("place-is takes exactly one empty token per medium", arguments: [
        ("<rpid:audio> <rpid:quiet/> </rpid:audio>", RPIDPlaceIs(audio: "quiet")),
        ("<rpid:video><rpid:dark/></rpid:video><rpid:text><rpid:ok/></rpid:text>", RPIDPlaceIs(video: "dark", text: "ok")),
        ("<rpid:audio><rpid:quiet/><rpid:noisy/></rpid:audio>", nil),
        ("<rpid:audio></rpid:audio>", nil),
        ("<rpid:audio> </rpid:audio>", nil),
        ("<rpid:audio><rpid:quiet/>x</rpid:audio>", nil),
        ("<rpid:audio><rpid:quiet a=\"1\"/></rpid:audio>", nil),
        ("<rpid:audio><x:quiet xmlns:x=\"urn:x\"/></rpid:audio>", nil),
        ("<rpid:audio><rpid:quiet/></rpid:audio><rpid:audio><rpid:ok/></rpid:audio>", nil),
    ] as [(String, RPIDPlaceIs?)])
    func placeIsTakesOneTokenPerMedium(_ content: String, _ expected: RPIDPlaceIs?) throws {
        let doc = """
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model"
                xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="pres:a@example.com">
              <dm:person id="p"><rpid:place-is>\(content)</rpid:place-is></dm:person>
            </presence>
            """
        let person = try #require(try PIDFDocument(bytes: Array(doc.utf8)).persons.first)
        #expect(person.rpid.placeIs == expected)
        #expect(person.extensions.count == (expected == nil ? 1 : 0))
    }

    @Test func missingTupleIDIsReportedAtTheTupleStartTag() throws {
        let doc = "<presence xmlns=\"urn:ietf:params:xml:ns:pidf\" entity=\"pres:a@example.com\">\n\n  <tuple><status/></tuple></presence>"
        do {
            _ = try PIDFDocument(bytes: Array(doc.utf8))
            Issue.record("a tuple without id was accepted")
        } catch {
            #expect(error.code == .unexpectedContent)
            #expect(error.line == 3)
            #expect(error.column > 0)
        }
    }

    @Test func categoryWithANonNumericInstanceIsReportedAtItsLine() throws {
        let doc = """
            <categories xmlns="http://schemas.microsoft.com/2006/09/sip/categories" uri="sip:a@example.com">
              <category name="note" instance="x"/>
            </categories>
            """
        do {
            _ = try CategoriesDocument(bytes: Array(doc.utf8))
            Issue.record("instance=\"x\" was accepted as an unsignedInt")
        } catch {
            #expect(error.code == .unexpectedContent)
            #expect(error.line == 2)
        }
    }

    @Test func doctypeInACategoriesBodyIsRefusedBeforeDecoding() {
        let doc = #"<!DOCTYPE categories [<!ENTITY e "x">]><categories xmlns="http://schemas.microsoft.com/2006/09/sip/categories" uri="&e;"/>"#
        #expect(throws: XMLError.self) { try CategoriesDocument(bytes: Array(doc.utf8)) }
        do {
            _ = try CategoriesDocument(bytes: Array(doc.utf8))
        } catch {
            #expect(error.code == .doctypeForbidden)
        }
    }
    /// A capability decodes to the attributes a dictionary keyed by each name (`{namespace}local`
    /// in a namespace) would hold, sorted by key, whether it has only the schema's attributes
    /// (appended in table order) or others too (set one by one), from parsed bytes in any order
    /// and from trees with repeated names (the last value kept).
    @Test func capabilityAttributesDecodeAsADictionary() throws {
        let names = [
            "capture", "deviceAvailability", "preferred", "preferredEndpointId", "publish", "render", "uri", "version",
            "a", "zz", "Render", "x:b", "x:render",
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let chosen = names.shuffled(using: &generator).prefix(Int.random(in: 0...6, using: &generator))
            var reference: [String: String] = [:]
            var attributes: [XMLAttribute] = []
            var body = ""
            for name in chosen {
                let value = String(Int.random(in: 0...99, using: &generator))
                let qualified = name.hasPrefix("x:") ? XMLName("urn:x", String(name.dropFirst(2))) : XMLName("", name)
                reference[qualified.description] = value
                attributes.append(XMLAttribute(qualified, value))
                body += " \(name)=\"\(value)\""
            }
            let expected = MSCapability(name: "voice", attributes: reference)
            let decoded = try MSCapability(
                cursor: XMLParser.events(Array("<voice xmlns=\"urn:s\" xmlns:x=\"urn:x\"\(body)/>".utf8)).root)
            #expect(decoded == expected, "\(body)")
            #expect(decoded.sortedAttributes.map(\.key) == reference.keys.sorted())
            // Repeats, possible in a tree only: the last value of a name counts.
            let repeated = attributes + attributes.reversed().map { XMLAttribute($0.name, $0.value + "r") }
            let fromTree = MSCapability(xml: XMLElement(XMLName("urn:s", "voice"), attributes: repeated))
            #expect(fromTree == MSCapability(name: "voice", attributes: reference.mapValues { $0 + "r" }))
        }
    }
    /// A list of capabilities decodes as each capability on its own, whether its attributes
    /// repeat an earlier one's (the array then shared) or not: random lists of capabilities
    /// drawn from a few attribute sets (schema and other attributes, in different orders),
    /// and from more sets than the decoder shares (repeats of those past the first eight
    /// distinct decode on their own).
    @Test func capabilityListsDecodeAsEachCapability() throws {
        let sets = [
            #"render="true" capture="true" deviceAvailability="3500""#,
            #"render="true" capture="false" deviceAvailability="3500""#,
            #"capture="true" render="true" deviceAvailability="3500""#,
            #"render="true" capture="true" deviceAvailability="3501""#,
            #"render="true" x:a="1""#, #"render="true""#, "",
        ] + (0..<12).map { #"render="true" deviceAvailability="\#(3600 + $0)""# }
        let ns = "http://schemas.microsoft.com/2006/09/sip/service"
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let items = (0..<Int.random(in: 0...24, using: &generator)).map { i in
                "<c\(i) \(sets.randomElement(using: &generator)!)/>"
            }
            let body = #"<services xmlns=""# + ns + #"" xmlns:x="urn:x"><service uri="sip:a@b"><capabilities>"#
                + items.joined() + "</capabilities></service></services>"
            let root = try XMLParser.events(Array(body.utf8), vocabulary: .presence).root
            let decoded = try MSServices(cursor: root)
            let capabilities = root.elements.first { _ in true }!.elements.first { _ in true }!
            let each = capabilities.elements.map(MSCapability.init(cursor:))
            #expect(decoded.services.first?.capabilities == each, "\(body)")
            #expect(decoded.services.first?.capabilities.map(\.sortedAttributes) == each.map(\.sortedAttributes))
        }
    }

    /// An activity's availability bounds read from random values (plain digits, padded,
    /// signed, `unbounded`, letters, empty) as the text rule says: trimmed xs:unsignedInt,
    /// `maxAvailability="unbounded"` none, anything else an error naming the attribute.
    @Test func activityBoundsReadAsTheirText() throws {
        let values = ["0", "6500", "8999", " 3500 ", "\t7\n", "+5", "-1", "4294967295", "4294967296", "1234567890",
                      "unbounded", " unbounded ", "Unbounded", "x", "", "12a"]
        /// The bound and the error message (nil for none) the text rule gives.
        func expected(_ raw: String?, _ name: String, unbounded: Bool) -> (value: UInt32?, error: String?) {
            guard let raw else { return (nil, nil) }
            let trimmed = raw.trimmingCharacters(in: CharacterSet(charactersIn: " \t\n\r"))
            if unbounded && trimmed == "unbounded" { return (nil, nil) }
            guard let value = UInt32(trimmed) else { return (nil, "attribute \(name)=\"\(raw)\" is not an unsignedInt") }
            return (value, nil)
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<400 {
            let minimum: String? = Bool.random(using: &generator) ? values.randomElement(using: &generator)! : nil
            let maximum: String? = Bool.random(using: &generator) ? values.randomElement(using: &generator)! : nil
            var body = #"<activity xmlns="http://schemas.microsoft.com/2006/09/sip/state" token="away""#
            if let minimum { body += " minAvailability=\"\(minimum)\"" }
            if let maximum { body += " maxAvailability=\"\(maximum)\"" }
            body += "/>"
            let found = Result { () throws(XMLError) in try MSActivity(cursor: XMLParser.events(Array(body.utf8)).root) }
            let low = expected(minimum, "minAvailability", unbounded: false)
            let high = expected(maximum, "maxAvailability", unbounded: true)
            if let message = low.error ?? high.error {
                guard case .failure(let error) = found else { Issue.record("\(body) decoded"); continue }
                #expect(error.message.hasSuffix(message), "\(body): \(error.message)")
            } else {
                let activity = MSActivity(token: MSActivityToken("away"), minAvailability: low.value, maxAvailability: high.value)
                #expect((try? found.get()) == activity, "\(body)")
            }
        }
    }
}
