import Foundation
import PresenceDocuments
import Testing
import XMLBridge

/// Event notification filters (RFC 4661): a filter-set read, the parts of a PIDF document it
/// selects, its triggers, and what it cannot evaluate refused with line and column.
@Suite struct SimpleFilterTests {
    static func filterSet(_ body: String, bindings: String = #"<ns-binding prefix="pidf" urn="urn:ietf:params:xml:ns:pidf"/><ns-binding prefix="dm" urn="urn:ietf:params:xml:ns:pidf:data-model"/><ns-binding prefix="rpid" urn="urn:ietf:params:xml:ns:pidf:rpid"/>"#) -> [UInt8] {
        Array("""
            <filter-set xmlns="urn:ietf:params:xml:ns:simple-filter" package="presence">
            <ns-bindings>\(bindings)</ns-bindings>
            \(body)
            </filter-set>
            """.utf8)
    }

    static func presence(activity: String, basic: String = "open", note: String = "lunch") throws -> XMLElement {
        try XMLParser.parse(Array("""
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" \
            xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="sip:bob@contoso.com">\
            <tuple id="t0"><status><basic>\(basic)</basic></status><contact>sip:bob@contoso.com</contact></tuple>\
            <dm:person id="p0"><rpid:activities><rpid:\(activity)/></rpid:activities><dm:note>\(note)</dm:note></dm:person>\
            </presence>
            """.utf8))
    }

    static func text(_ e: XMLElement) -> String { XMLWriter(indent: nil, declaration: false).string(e) }

    /// RFC 4661 §3.5: the basic status and the note, inside their ancestors; nothing else.
    @Test func includesKeepTheSelectedElementsInsideTheirAncestors() throws {
        let filters = try SimpleFilter.filters(bytes: Self.filterSet("""
            <filter id="1" uri="sip:bob@contoso.com"><what>
            <include type="xpath">/pidf:presence/pidf:tuple/pidf:status/pidf:basic</include>
            <include>/pidf:presence/dm:person/dm:note</include>
            </what></filter>
            """))
        let filter = try #require(filters.first)
        #expect(filter.id == "1" && filter.uri == "sip:bob@contoso.com" && filter.enabled && !filter.remove)
        let cut = filter.apply(to: try Self.presence(activity: "busy"))
        #expect(Self.text(cut) == """
            <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="sip:bob@contoso.com"><tuple id="t0"><status><basic>open</basic>\
            </status></tuple><dm:person xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" id="p0"><dm:note>lunch</dm:note>\
            </dm:person></presence>
            """)
        // The result is still a PIDF document.
        #expect(try PIDFDocument(bytes: XMLWriter().bytes(cut)).tuples.first?.status.basic == .open)
    }

    /// Excludes take elements away; a kept tuple keeps its status; a namespace selects all its elements.
    @Test func excludesAndNamespaces() throws {
        let filters = try SimpleFilter.filters(bytes: Self.filterSet("""
            <filter id="a"><what><exclude>/pidf:presence/dm:person/rpid:activities</exclude></what></filter>
            <filter id="b"><what><include type="namespace">urn:ietf:params:xml:ns:pidf:rpid</include>\
            <include>/pidf:presence/pidf:tuple/pidf:contact</include></what></filter>
            """))
        let document = try Self.presence(activity: "away")
        #expect(!Self.text(filters[0].apply(to: document)).contains("activities"))
        #expect(Self.text(filters[0].apply(to: document)).contains("<dm:note>lunch</dm:note>"))
        let b = Self.text(filters[1].apply(to: document))
        #expect(b.contains(#"<rpid:away/></rpid:activities>"#) && !b.contains("note"), "\(b)")
        #expect(b.contains("<status><basic>open</basic></status><contact>sip:bob@contoso.com</contact>"))
    }

    /// RFC 4661 §3.6: a change is notified when a trigger fires.
    @Test func triggersDecideWhatIsNotified() throws {
        let filters = try SimpleFilter.filters(bytes: Self.filterSet("""
            <filter id="basic"><trigger><changed>/pidf:presence/pidf:tuple/pidf:status/pidf:basic</changed></trigger></filter>
            <filter id="closing"><trigger><changed from="open" to="closed">/pidf:presence/pidf:tuple/pidf:status/pidf:basic</changed></trigger></filter>
            <filter id="tuples"><trigger><added>/pidf:presence/pidf:tuple</added><removed>/pidf:presence/pidf:tuple</removed></trigger></filter>
            """))
        let open = try Self.presence(activity: "busy")
        let busyToAway = try Self.presence(activity: "away")
        let closed = try Self.presence(activity: "away", basic: "closed")
        #expect(filters[0].triggered(from: nil, to: open))
        #expect(!filters[0].triggered(from: open, to: busyToAway))
        #expect(filters[0].triggered(from: busyToAway, to: closed))
        #expect(filters[1].triggered(from: open, to: closed))
        #expect(!filters[1].triggered(from: closed, to: open))
        var twoTuples = open
        twoTuples.children.insert(.element(XMLElement(XMLName(NS.pidf, "tuple"), attributes: [XMLAttribute(XMLName("", "id"), "t1")])), at: 0)
        #expect(filters[2].triggered(from: open, to: twoTuples) && filters[2].triggered(from: twoTuples, to: open))
        #expect(!filters[2].triggered(from: open, to: closed))
    }

    @Test(arguments: [
        (#"<filter id="1"><what><include>//pidf:tuple</include></what></filter>"#, "absolute paths"),
        (#"<filter id="1"><what><include>/pidf:presence/pidf:tuple/@id</include></what></filter>"#, "not served here"),
        (#"<filter id="1"><what><include>/pidf:presence/pidf:tuple/@id</include></what></filter>"#, "attribute"),
        (#"<filter id="1"><what><include type="xquery">x</include></what></filter>"#, "not served here"),
        (#"<filter id="1" domain="example.com"/>"#, "not served here"),
        (#"<filter id="1"><what><include>/x:presence</include></what></filter>"#, "prefix x"),
        (#"<filter id="1"><trigger><changed by="-1">/pidf:presence</changed></trigger></filter>"#, "positive"),
        (#"<filter><what/></filter>"#, "id"),
    ])
    func whatCannotBeEvaluatedIsALocatedError(_ body: String, _ mentioned: String) throws {
        let error = try #require(throws: XMLError.self) { try SimpleFilter.filters(bytes: Self.filterSet(body)) }
        #expect(error.line >= 1 && error.message.contains(mentioned), "\(error)")
    }

    @Test func otherPackagesAndRootsAreRefused() throws {
        // What cannot be evaluated is told apart from what is wrong (RFC 4660: 488, not 400).
        let other = #"<filter-set xmlns="urn:ietf:params:xml:ns:simple-filter" package="reg"/>"#
        let unserved = try #require(throws: XMLError.self) { try SimpleFilter.filters(bytes: Array(other.utf8)) }
        #expect(unserved.code == .notServed)
        let wrong = try #require(throws: XMLError.self) { try SimpleFilter.filters(bytes: Array("<presence/>".utf8)) }
        #expect(wrong.code == .unexpectedContent)
    }
}
