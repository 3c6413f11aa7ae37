import Foundation
import PresenceDocuments
import Testing
import XMLBridge

/// `serialized()` writes every document straight to bytes (no element tree). The tree
/// builders (`xml`) are kept in these tests as an oracle: both must give the same bytes for
/// every document the project has, and the direct bytes must parse back to the same document.
@Suite struct DirectWriterTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every XML file of the golden vectors, the PIDF fixtures and the shared spec examples.
    static let files: [String] = {
        let fm = FileManager.default
        var dirs = ["Tests/PresenceDocumentsTests/Fixtures/pidf", "../shared/spec/examples", "../shared/spec/ietf-schemas/examples"]
        for group in ["table", "examples", "ua"] {
            for sub in ["input", "expected"] { dirs.append("Vectors/presence/\(group)/\(sub)") }
        }
        var found: [String] = []
        for dir in dirs {
            let path = root.appendingPathComponent(dir).standardizedFileURL.path
            for name in ((try? fm.contentsOfDirectory(atPath: path)) ?? []).sorted() where name.hasSuffix(".xml") {
                found.append(path + "/" + name)
            }
        }
        return found
    }()

    /// The documents found anywhere in a tree (batch responses and roaming data embed categories).
    static func documents(in e: XMLElement, into out: inout [Document]) {
        switch (e.name.namespace, e.name.local) {
        case (NS.pidf, "presence"): if let d = try? PIDFDocument(xml: e) { out.append(.pidf(d)) }
        case (NS.categories, "categories"): if let d = try? CategoriesDocument(xml: e) { out.append(.categories(d)) }
        case (NS.categories, "category"), ("", "category"):
            if let c = try? Category(xml: e) { out.append(.categories(CategoriesDocument(uri: "sip:x@example.com", categories: [c]))) }
        case (NS.msrtcPresence, "presentity"): if let d = try? MSRTCPresentity(xml: e) { out.append(.msrtc(d)) }
        case (NS.batchSubscribe, "batchSub"): if let d = try? BatchSubscribe(xml: e) { out.append(.batchSub(d)) }
        case (NS.rlmi, "list"): if let d = try? RLMIList(xml: e) { out.append(.rlmi(d)) }
        case (NS.richPresence, "publish"): if let d = try? CategoryPublish(xml: e) { out.append(.publish(d)) }
        case ("", "Fault"): if let d = try? PublishFault(xml: e) { out.append(.fault(d)) }
        default: break
        }
        for child in e.elements { documents(in: child, into: &out) }
    }

    enum Document {
        case pidf(PIDFDocument), categories(CategoriesDocument), msrtc(MSRTCPresentity)
        case batchSub(BatchSubscribe), rlmi(RLMIList), publish(CategoryPublish), fault(PublishFault)

        var direct: [UInt8] {
            switch self {
            case .pidf(let d): d.serialized()
            case .categories(let d): d.serialized()
            case .msrtc(let d): d.serialized()
            case .batchSub(let d): d.serialized()
            case .rlmi(let d): d.serialized()
            case .publish(let d): d.serialized()
            case .fault(let d): d.serialized()
            }
        }

        var viaTree: [UInt8] {
            switch self {
            case .pidf(let d): XMLWriter().bytes(d.xml)
            case .categories(let d): XMLWriter().bytes(d.xml)
            case .msrtc(let d): XMLWriter().bytes(d.xml)
            case .batchSub(let d): XMLWriter().bytes(d.xml)
            case .rlmi(let d): XMLWriter().bytes(d.xml)
            case .publish(let d): XMLWriter().bytes(d.xml)
            case .fault(let d): XMLWriter().bytes(d.xml)
            }
        }

        func reparsesEqual() throws -> Bool {
            switch self {
            case .pidf(let d): try PIDFDocument(bytes: d.serialized()) == d
            case .categories(let d): try CategoriesDocument(bytes: d.serialized()) == d
            case .msrtc(let d): try MSRTCPresentity(bytes: d.serialized()) == d
            case .batchSub(let d): try BatchSubscribe(bytes: d.serialized()) == d
            case .rlmi(let d): try RLMIList(bytes: d.serialized()) == d
            case .publish(let d): try CategoryPublish(bytes: d.serialized()) == d
            case .fault(let d): try PublishFault(bytes: d.serialized()) == d
            }
        }
    }

    static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> String {
        let i = (0..<min(a.count, b.count)).first { a[$0] != b[$0] } ?? min(a.count, b.count)
        let around = { (x: [UInt8]) in String(decoding: x[max(0, i - 60)..<min(x.count, i + 60)], as: UTF8.self) }
        return "at byte \(i):\n direct: \(around(a))\n tree:   \(around(b))"
    }

    @Test("the vector and example files hold documents of every kind")
    func corpusIsNotEmpty() throws {
        var docs: [Document] = []
        for file in Self.files {
            guard let tree = try? XMLParser.parse([UInt8](Data(contentsOf: URL(fileURLWithPath: file))), vocabulary: .presence) else { continue }
            Self.documents(in: tree, into: &docs)
        }
        #expect(docs.contains { if case .pidf = $0 { true } else { false } })
        #expect(docs.contains { if case .categories = $0 { true } else { false } })
        #expect(docs.contains { if case .msrtc = $0 { true } else { false } })
        #expect(docs.contains { if case .batchSub = $0 { true } else { false } })
        #expect(docs.contains { if case .rlmi = $0 { true } else { false } })
        #expect(docs.contains { if case .publish = $0 { true } else { false } })
        #expect(docs.contains { if case .fault = $0 { true } else { false } })
    }

    @Test("direct writing gives the tree writer's bytes and parses back to the same document", arguments: files)
    func directBytesEqualTreeBytes(_ file: String) throws {
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        // Files that are not well-formed XML (negative vectors) hold no documents to write.
        guard let tree = try? XMLParser.parse(bytes, vocabulary: .presence) else { return }
        var docs: [Document] = []
        Self.documents(in: tree, into: &docs)
        for doc in docs {
            let direct = doc.direct, viaTree = doc.viaTree
            #expect(direct == viaTree, "\(Self.firstDifference(direct, viaTree))")
            #expect(try doc.reparsesEqual())
        }
    }

    @Test("hostile text and attribute values are escaped as the tree writer escapes them")
    func escapingMatchesTreeWriter() throws {
        let nasty = "a&b<c>d\"e\tf\ng\rh\u{01}i\u{1F}j ]]> é"
        var person = PIDFPerson(id: "p\"1", notes: [PIDFNote(nasty, lang: "en\"")])
        person.rpid.activities = [RPIDTokens(values: [.text(nasty), .token("busy")])]
        person.rpid.statusIcon = RPIDStatusIcon(uri: nasty, id: nasty)
        let pidf = PIDFDocument(entity: nasty, persons: [person], cid: nasty)
        #expect(pidf.serialized() == XMLWriter().bytes(pidf.xml))
        // XML 1.0 §2.2: no C0 control other than TAB, LF, CR appears, not even as a reference.
        let text = String(decoding: pidf.serialized(), as: UTF8.self)
        #expect(!text.contains("\u{01}") && !text.contains("&#1;") && text.contains("\u{FFFD}"))
        #expect(text.contains("&#13;"))
        #expect(try PIDFDocument(bytes: pidf.serialized()).entity == nasty.replacingOccurrences(of: "\u{01}", with: "\u{FFFD}").replacingOccurrences(of: "\u{1F}", with: "\u{FFFD}"))

        let note = MSNote(bodies: [MSNote.Body(text: nasty, type: "personal", uri: nasty)])
        let categories = CategoriesDocument(uri: nasty, categories: [Category(name: .note, instance: 0, payload: .note(note))])
        #expect(categories.serialized() == XMLWriter().bytes(categories.xml))
    }

    @Test("namespaced attributes kept from the input are declared before the attributes, as the tree writer does")
    func namespacedAttributesMatchTreeWriter() throws {
        let foreign = XMLAttribute(XMLName("urn:example:x", "flag"), "1", prefix: "x")
        var extensionElement = XMLElement(XMLName("urn:example:x", "thing"), prefix: "x")
        extensionElement.attributes = [XMLAttribute(XMLName("", "a"), "1"), XMLAttribute(XMLName("urn:example:y", "b"), "2")]
        extensionElement.append(XMLElement(XMLName(NS.rpid, "nested"), prefix: "r"))
        let category = Category(
            name: .note, instance: 1, otherAttributes: [XMLAttribute(XMLName("", "z"), "3"), foreign],
            payload: .other([.element(extensionElement)]))
        let services = MSServices(services: [.init(uri: "sip:a@example.com", capabilities: [
            MSCapability(name: "text", attributes: ["render": "true", "{urn:example:y}extra": "1"]),
        ])])
        let note = MSNote(bodies: [MSNote.Body(text: "n", type: "personal", otherAttributes: [foreign])])
        let categories = CategoriesDocument(uri: "sip:a@example.com", categories: [
            category, Category(name: .services, instance: 0, payload: .services(services)),
            Category(name: .note, instance: 0, payload: .note(note)),
        ])
        #expect(categories.serialized() == XMLWriter().bytes(categories.xml))
        let pidf = PIDFDocument(entity: "pres:a@example.com", tuples: [PIDFTuple(id: "t", extensions: [extensionElement])])
        #expect(pidf.serialized() == XMLWriter().bytes(pidf.xml))
        #expect(try PIDFDocument(bytes: pidf.serialized()) == pidf)
    }

    @Test("capability attributes are written in name order, however many there are")
    func capabilityAttributesInNameOrder() {
        // [MS-PRES] §2.2.2.7.3: capability elements carry attributes only; the
        // writer's order is by name, for few attributes and for many.
        let few = MSCapability(name: "text", attributes: ["render": "true", "capture": "false", "deviceAvailability": "3500"])
        let many = MSCapability(name: "voice", attributes: ["render": "true", "capture": "true", "deviceAvailability": "3500", "a": "1", "z": "2"])
        let doc = CategoriesDocument(uri: "sip:a@example.com", categories: [
            Category(name: .services, instance: 0, payload: .services(MSServices(services: [.init(uri: "sip:a@example.com", capabilities: [few, many])]))),
        ])
        let text = String(decoding: doc.serialized(), as: UTF8.self)
        #expect(text.contains(#"<text capture="false" deviceAvailability="3500" render="true"/>"#))
        #expect(text.contains(#"<voice a="1" capture="true" deviceAvailability="3500" render="true" z="2"/>"#))
        #expect(doc.serialized() == XMLWriter().bytes(doc.xml))
    }

    /// A capability holds its attributes sorted by key: set one by one (repeats included) it
    /// holds what a dictionary would, compares as it, and decodes from any attribute order.
    @Test func capabilityAttributesHoldWhatADictionaryWould() throws {
        let keys = ["render", "capture", "deviceAvailability", "a", "z", "{urn:x}b", "Zeta", "é", "e\u{301}"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var capability = MSCapability(name: "text")
            var reference: [String: String] = [:]
            for _ in 0..<Int.random(in: 0...8, using: &generator) {
                let key = keys.randomElement(using: &generator)!, value = String(Int.random(in: 0...9, using: &generator))
                capability.setAttribute(key, value)
                reference[key] = value
            }
            #expect(capability.attributes == reference)
            #expect(capability.sortedAttributes.map(\.key) == reference.keys.sorted())
            #expect(capability == MSCapability(name: "text", attributes: reference))
            #expect(capability.hashValue == MSCapability(name: "text", attributes: reference).hashValue)
            for key in keys { #expect(capability[attribute: key] == reference[key]) }
        }
        let body = #"<text xmlns="urn:s" xmlns:x="urn:x" render="true" x:b="2" capture="false" deviceAvailability="3500"/>"#
        let decoded = try MSCapability(cursor: XMLParser.events(Array(body.utf8), vocabulary: .presence).root)
        #expect(decoded.attributes == ["render": "true", "{urn:x}b": "2", "capture": "false", "deviceAvailability": "3500"])
        #expect(decoded.render == true && decoded.capture == false && decoded.name == "text")
    }

    /// The writer orders a servcaps' children in place (a stable insertion sort by schema
    /// rank): flags, descriptions, type lists, other lists and extensions in any order and with
    /// repeated ranks write the bytes of the tree, whose builder sorts a copy.
    @Test func servcapsChildrenInAnyOrderWriteAsTheTree() {
        let flagNames = ["audio", "application", "data", "control", "video", "text", "message", "automata", "isfocus"]
        let listNames = ["methods", "schemes", "languages", "duplex", "priority"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            var caps = ServiceCapabilities()
            for _ in 0..<Int.random(in: 0...8, using: &generator) {
                caps.flags.append(.init(flagNames.randomElement(using: &generator)!, Bool.random(using: &generator)))
            }
            for _ in 0..<Int.random(in: 0...2, using: &generator) {
                caps.descriptions.append(PIDFNote("d\(Int.random(in: 0...9, using: &generator))"))
            }
            for _ in 0..<Int.random(in: 0...3, using: &generator) {
                if Bool.random(using: &generator) {
                    caps.lists.append(.init("type", supported: ["text/plain", "audio/x"].shuffled(using: &generator)))
                } else {
                    caps.lists.append(.init(listNames.randomElement(using: &generator)!, supported: ["a"], notSupported: ["b"]))
                }
            }
            if Bool.random(using: &generator) {
                caps.extensions.append(XMLElement(XMLName("urn:other", "x")))
            }
            caps.flags.shuffle(using: &generator)
            let doc = PIDFDocument(entity: "sip:a@example.com", tuples: [PIDFTuple(id: "t", status: PIDFStatus(basic: .open, capabilities: caps))])
            #expect(doc.serialized() == XMLWriter().bytes(doc.xml))
        }
    }
}
