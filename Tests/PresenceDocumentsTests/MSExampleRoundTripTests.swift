import Foundation
import PresenceDocuments
import Testing
import XMLBridge

/// `/work/shared/spec/examples` (CI keeps `shared/` beside the clone): the
/// package root is two levels above this file's directory.
let msExamplesDirectory: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("../shared/spec/examples").standardizedFileURL

/// The 116 [MS-PRES] example bodies (see examples/README.md).
let exampleFiles: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: msExamplesDirectory.path)) ?? [])
    .filter { $0.hasSuffix(".xml") }.sorted()

func loadExample(_ file: String) throws -> [UInt8] {
    Array(try Data(contentsOf: msExamplesDirectory.appendingPathComponent(file)))
}

/// The category whose payload a bare root element is, if the codec types it.
func payloadCategory(forRoot name: XMLName) -> CategoryName? {
    switch (name.namespace, name.local) {
    case (NS.state, "state"): .state
    case (NS.note, "note"): .note
    case (NS.contactCard, "contactCard"): .contactCard
    case (NS.calendarData, "calendarData"): .calendarData
    case (NS.services, "services"): .services
    case (NS.device, "device"): .device
    case (NS.categories, "userProperties"), ("", "userProperties"): .userProperties
    case (NS.categories, "legacyInterop"), ("", "legacyInterop"): .legacyInterop
    default: nil
    }
}

/// Every attribute value and non-blank text of a tree, keyed by its element
/// path (local names), white space collapsed; `ct:delimiter`/`ct:end` are
/// structure and skipped. Equal multisets mean the codec kept every datum,
/// whatever the element order or indentation.
func leafCounts(_ e: XMLElement, path: String = "") -> [String: Int] {
    var counts: [String: Int] = [:]
    func visit(_ e: XMLElement, _ path: String) {
        let p = path + "/" + e.name.local
        for a in e.attributes { counts[p + "@" + a.name.local + "=" + a.value.trimmingXMLWhitespace(), default: 0] += 1 }
        let text = e.text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }).joined(separator: " ")
        if !text.isEmpty { counts[p + "=" + text, default: 0] += 1 }
        for c in e.elements where c.name.namespace != NS.commonTypes || (c.name.local != "delimiter" && c.name.local != "end") {
            visit(c, p)
        }
    }
    visit(e, path)
    return counts
}

/// Expects that the codec's output holds the same data as its input.
func expectNothingLost(_ original: XMLElement, _ written: XMLElement, _ file: String) {
    #expect(leafCounts(original) == leafCounts(written), "\(file): \(original.name.local) lost or added data")
}

/// Writes `element` with the default writer and parses it back.
func rewrite(_ element: XMLElement) throws -> XMLElement {
    try XMLParser.parse(XMLWriter().bytes(element))
}

/// Round-trips one element through the codec its name calls for and returns
/// which codec was used; `#expect`s value equality after serializing.
@discardableResult
func roundTripElement(_ e: XMLElement, file: String) throws -> String {
    if e.name.local == "category", e.name.namespace == NS.categories || e.name.namespace.isEmpty {
        let value = try Category(xml: e)
        #expect(try Category(xml: rewrite(value.xml)) == value, "\(file): category \(value.name)")
        expectNothingLost(e, value.xml, file)
        return "category"
    }
    if let name = payloadCategory(forRoot: e.name) {
        let value = try CategoryPayload(categoryChildren: [.element(e)], name: name)
        if case .other = value { Issue.record("\(file): \(e.name) was not typed") }
        let again = try CategoryPayload(categoryChildren: [.element(try rewrite(value.xmlNodes.first?.elementValue ?? e))], name: name)
        #expect(again == value, "\(file): payload \(name)")
        if let written = value.xmlNodes.first?.elementValue { expectNothingLost(e, written, file) }
        return "payload"
    }
    switch PresenceDocumentKind.detect(root: e) {
    case .categories:
        let v = try CategoriesDocument(xml: e)
        #expect(try CategoriesDocument(bytes: v.serialized()) == v, "\(file)")
        expectNothingLost(e, v.xml, file)
        for c in v.categories where CategoryPayload.typedNames.contains(c.name) && !isKnownMisnested(c, file) {
            if case .other = c.payload { Issue.record("\(file): category \(c.name) instance \(c.instance ?? 0) not typed") }
        }
        return "categories"
    case .msrtcPresentity:
        let v = try MSRTCPresentity(xml: e)
        #expect(try MSRTCPresentity(bytes: v.serialized()) == v, "\(file)")
        expectNothingLost(e, v.xml, file)
        return "msrtc"
    case .batchSubscribe:
        let v = try BatchSubscribe(xml: e)
        #expect(try BatchSubscribe(bytes: v.serialized()) == v, "\(file)")
        expectNothingLost(e, v.xml, file)
        return "batchSub"
    case .rlmiList:
        let v = try RLMIList(xml: e)
        #expect(try RLMIList(bytes: v.serialized()) == v, "\(file)")
        expectNothingLost(e, v.xml, file)
        return "rlmi"
    case .publish:
        let v = try CategoryPublish(xml: e)
        #expect(try CategoryPublish(bytes: v.serialized()) == v, "\(file)")
        expectNothingLost(e, v.xml, file)
        return "publish"
    case .fault:
        let v = try PublishFault(xml: e)
        #expect(try PublishFault(bytes: v.serialized()) == v, "\(file)")
        expectNothingLost(e, v.xml, file)
        return "fault"
    case .roamingData, .pidf, .other:
        #expect(try rewrite(e) == e, "\(file): \(e.name)")
        // Categories documents nested in roamingData go through their codec too.
        for child in e.elements where PresenceDocumentKind.detect(root: child) == .categories {
            try roundTripElement(child, file: file)
        }
        if e.name == XMLName("", "fragment") {
            for child in e.elements { try roundTripElement(child, file: file) }
        }
        return "generic"
    }
}

/// The one category the codec cannot type: see `misnestedMachineStateIsKeptVerbatim`.
func isKnownMisnested(_ c: Category, _ file: String) -> Bool {
    file == "4.3.1-publish-200ok-aggregated.xml" && c.instance == 809938687 && c.container == 2
}

extension CategoryPayload {
    /// Category names whose payload the codec types.
    static let typedNames: Set<CategoryName> = [
        .state, .dndState, .note, .contactCard, .calendarData, .workingHours, .services, .device,
        .userProperties, .legacyInterop,
    ]
}

extension XMLNode {
    var elementValue: XMLElement? { if case .element(let e) = self { e } else { nil } }
}

@Suite struct MSExampleRoundTripTests {
    @Test func allExampleBodiesArePresent() {
        #expect(exampleFiles.count == 116, "looked in \(msExamplesDirectory.path)")
    }

    @Test(arguments: exampleFiles)
    func exampleParsesAndRoundTrips(file: String) throws {
        let root = try XMLParser.parse(try loadExample(file))
        try roundTripElement(root, file: file)
    }

    /// In §4.3.1 a machineState's `</state>` closes before
    /// its delimiter block, so that category's content stays verbatim.
    @Test func misnestedMachineStateIsKeptVerbatim() throws {
        let root = try XMLParser.parse(try loadExample("4.3.1-publish-200ok-aggregated.xml"))
        let categories = try #require(root.element(XMLName(NS.categories, "categories")))
        let doc = try CategoriesDocument(xml: categories)
        let odd = doc.categories.filter { if case .other = $0.payload { true } else { false } }
        #expect(odd.count == 1)
        guard let category = odd.first, case .other(let nodes) = category.payload else { return }
        #expect(category.instance == 809938687 && category.container == 2)
        let names = nodes.compactMap(\.elementValue).map(\.name.local)
        #expect(names == ["state", "delimiter", "timeZoneBias", "timeZoneName", "timeZoneAbbreviation", "device", "end"])
    }
}
