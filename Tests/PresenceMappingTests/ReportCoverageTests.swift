import Foundation
import PresenceDocuments
import PresenceMapping
import Testing
import XMLBridge

/// `--report` names every input element and attribute: each one of every golden vector's
/// input is either mapped or reported as dropped (with a reason), so nothing vanishes
/// unreported (RFC 3863 §4.1.5 contact priority, §4.1.7 timestamp, §4.4 status and person
/// extensions included).
///
/// A report entry's field is a path (`tuple[t0]/contact`, `state/availability=3500`); its
/// last step names what the entry is about. An input node is accounted for when
/// - its local name is the last step of an entry (an attribute also as `@name`), or
/// - an ancestor's is (the element was mapped or dropped as a whole), or
/// - it is an element without text of its own whose attributes and children are each
///   accounted for.
/// An element with text, an empty element or an attribute that no entry names fails the test.
struct ReportCoverageTests {
    /// The names a field's last step gives: `{ns}local`, `name[...]`, `name=value`, `@name`,
    /// `prefix:name`, alternatives `a|b`, `a+b` and words are each reduced to their local names.
    static func names(_ field: String) -> Set<String> {
        // Namespace URIs (`{http://...}local`) hold slashes of their own: removed first.
        let local = field.replacingOccurrences(of: #"\{[^}]*\}"#, with: "", options: .regularExpression)
        guard let last = local.split(separator: "/").last else { return [] }
        var result: Set<String> = []
        for word in last.split(whereSeparator: { $0 == " " || $0 == "|" || $0 == "+" }) {
            var name = Substring(word)
            if let bracket = name.firstIndex(of: "[") { name = name[..<bracket] }
            if let equals = name.firstIndex(of: "=") { name = name[..<equals] }
            if name.hasPrefix("@") { name = name.dropFirst() }
            if let colon = name.lastIndex(of: ":") { name = name[name.index(after: colon)...] }
            if !name.isEmpty { result.insert(String(name)) }
        }
        return result
    }

    /// The paths (`presence/tuple/contact/@priority`) of the nodes under `element` that no
    /// report entry accounts for.
    static func unaccounted(_ element: XMLElement, named: Set<String>, path: String = "") -> [String] {
        let here = path.isEmpty ? element.name.local : "\(path)/\(element.name.local)"
        if named.contains(element.name.local) { return [] }
        var missing: [String] = []
        let children = Array(element.elements)
        // An element with text of its own, or an empty one, carries data: it needs an entry.
        if !element.trimmedText.isEmpty || (children.isEmpty && element.attributes.isEmpty) { missing.append(here) }
        for attribute in element.attributes where !named.contains(attribute.name.local) {
            missing.append("\(here)/@\(attribute.name.local)")
        }
        for child in children { missing += unaccounted(child, named: named, path: here) }
        return missing
    }

    static func report(_ v: GoldenVectorTests.Vector, _ bytes: [UInt8], _ mapper: PresenceMapper) throws -> MappingReport {
        switch (v.from, v.to) {
        case ("categories", "pidf-rfc"): return mapper.pidf(from: try CategoriesDocument(bytes: bytes), dialect: .rfc).1
        case ("categories", "pidf-rfc-extended"):
            return mapper.pidf(from: try CategoriesDocument(bytes: bytes), dialect: .rfc, rpidExtensions: true).1
        case ("categories", "pidf-microsoft"): return mapper.pidf(from: try CategoriesDocument(bytes: bytes), dialect: .microsoft).1
        case ("categories", "msrtc"): return mapper.msrtc(from: try CategoriesDocument(bytes: bytes)).1
        case ("pidf", "categories"): return mapper.categories(from: try PIDFDocument(bytes: bytes)).1
        case ("pidf", "msrtc"): return mapper.msrtc(from: try PIDFDocument(bytes: bytes)).1
        case ("msrtc", "categories"): return mapper.categories(from: try MSRTCPresentity(bytes: bytes)).1
        case ("msrtc", "pidf-rfc"): return mapper.pidf(from: try MSRTCPresentity(bytes: bytes), dialect: .rfc).1
        case ("msrtc", "pidf-microsoft"): return mapper.pidf(from: try MSRTCPresentity(bytes: bytes), dialect: .microsoft).1
        default: throw XMLError(.unexpectedContent, "unknown direction \(v.direction)")
        }
    }

    static let convertible = GoldenVectorTests.manifest.filter { $0.outcome == "ok" }

    @Test("every input element and attribute is mapped or reported", arguments: convertible)
    func everyInputNodeIsMappedOrReported(_ v: GoldenVectorTests.Vector) throws {
        let mapper = try #require(GoldenVectorTests.mapper)
        let bytes = try Array(Data(contentsOf: GoldenVectorTests.vectors.appendingPathComponent(v.input)))
        let report = try Self.report(v, bytes, mapper)
        for entry in report.dropped { #expect(!entry.detail.isEmpty, "\(v.id): \(entry.field) dropped without a reason") }
        for entry in report.mapped { #expect(!entry.detail.isEmpty, "\(v.id): \(entry.field) mapped to nothing named") }
        let named = (report.mapped + report.dropped).reduce(into: Set<String>()) { $0.formUnion(Self.names($1.field)) }
        let missing = Self.unaccounted(try XMLParser.parse(bytes), named: named)
        #expect(missing.isEmpty, "\(v.id): neither mapped nor reported: \(missing.joined(separator: ", "))\n\(report)")
    }

    /// The rule itself: a node no entry names is found, a named one is not.
    @Test func aNodeNoEntryNamesIsFound() throws {
        let root = try XMLParser.parse(Array("""
            <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="sip:a@example.com">
            <tuple id="t"><status><basic>open</basic></status><contact priority="0.8">sip:a@h</contact></tuple>
            </presence>
            """.utf8))
        let some = ["presence/@entity", "tuple[t]/status/basic", "tuple/@id"].reduce(into: Set<String>()) { $0.formUnion(Self.names($1)) }
        #expect(Self.unaccounted(root, named: some) == ["presence/tuple/contact", "presence/tuple/contact/@priority"])
        #expect(Self.unaccounted(root, named: some.union(Self.names("tuple[t]/contact"))).isEmpty)
        #expect(Self.names("tuple[t]/status/{http://www.linphone.org/xsds/pidfonline.xsd}online") == ["online"])
        #expect(Self.names("state/@manual|@startTime") == ["manual", "startTime"])
        #expect(Self.names("state/@xsi:type=aggregateState") == ["type"])
    }
}
