import Foundation
import PresenceDocuments
import Testing
import XMLBridge

/// Partial PIDF (RFC 5262) with RFC 5261 patch operations: the RFC's own full and diff examples
/// applied to each other give what the RFC says they do; diffs the gateway writes are valid
/// against the RFC's schema and give back the new document; bad diffs are errors.
@Suite struct PIDFDiffTests {
    static let full = PIDFFixture.ietfExamples + "rfc5262-pidf-full.xml"
    static let diff = PIDFFixture.ietfExamples + "rfc5262-pidf-diff.xml"

    static func presence(_ relative: String) throws -> (UInt32?, XMLElement) {
        guard case .full(let version, let presence) = try PIDFDiff(bytes: PIDFFixture.bytes(relative)) else {
            throw XMLError(.unexpectedContent, "not pidf-full")
        }
        return (version, presence)
    }

    /// RFC 5262 §5: version 568 adds tuple ert4773 before the note, opens r1230d, removes the
    /// busy activity and sets cg231jcr's contact priority to 0.7.
    @Test func rfc5262DiffAppliedToItsFullState() throws {
        let (version, presence) = try Self.presence(Self.full)
        #expect(version == 567)
        let parsed = try PIDFDiff(bytes: PIDFFixture.bytes(Self.diff))
        guard case .diff(let diffVersion, let operations) = parsed else {
            Issue.record("not a pidf-diff")
            return
        }
        #expect(diffVersion == 568)
        #expect(operations.map(\.kind) == [.add, .replace, .remove, .replace])
        var patched = presence
        try PIDFDiff.apply(operations, to: &patched)
        let before = try PIDFDocument(xml: presence)
        let after = try PIDFDocument(xml: patched)
        #expect(after.entity == "pres:someone@example.com")
        #expect(after.tuples.map(\.id) == ["sg89ae", "cg231jcr", "r1230d", "ert4773"])
        #expect(after.tuples.first { $0.id == "ert4773" }?.contact?.uri == "mailto:pep@example.com")
        #expect(after.tuples.first { $0.id == "r1230d" }?.status.basic == .open)
        #expect(before.tuples.first { $0.id == "r1230d" }?.status.basic == .closed)
        #expect(after.tuples.first { $0.id == "cg231jcr" }?.contact?.priority == "0.7")
        let elements = Array(patched.elements).map(\.name.local)
        #expect(elements == ["tuple", "tuple", "tuple", "tuple", "note", "person", "device"])
        let activities = Array(try #require(patched.elements.first { $0.name.local == "person" }).elements)
            .flatMap { Array($0.elements) }.map(\.name.local)
        #expect(activities == ["on-the-phone"])
    }

    static func tuple(_ id: String, _ basic: String) -> String {
        "<tuple id=\"\(id)\"><status><basic>\(basic)</basic></status><contact>sip:\(id)@oma.example</contact></tuple>"
    }

    static func document(_ children: String) throws -> XMLElement {
        try XMLParser.parse(Array("""
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" \
            xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="sip:bob@contoso.com">\(children)</presence>
            """.utf8))
    }

    static let person = "<dm:person id=\"p1\"><rpid:activities><rpid:away/></rpid:activities></dm:person>"

    /// A changed tuple is replaced, a gone one removed, a new one added after its neighbour:
    /// applying the diff to the old document gives the new one, and the diff is valid.
    @Test func writtenDiffsGiveTheNewDocument() throws {
        // Unchanged tuples around them, so that the diff is the smaller body.
        let unchanged = (1...6).map { Self.tuple("u\($0)", "open") }.joined()
        let old = try Self.document(
            Self.tuple("a", "open") + Self.tuple("b", "open") + Self.tuple("c", "open") + unchanged + Self.person)
        let new = try Self.document(
            Self.tuple("a", "closed") + Self.tuple("c", "open") + Self.tuple("d", "open") + unchanged
                + Self.person.replacingOccurrences(of: "away", with: "busy"))
        let bytes = try #require(PIDFDiff.diff(from: old, to: new, version: 8))
        let schema = try XMLSchema(path: PIDFFixture.path("../shared/spec/ietf-schemas/pidf-diff.xsd"))
        #expect(try schema.validate(bytes) == [])
        guard case .diff(let version, let operations) = try PIDFDiff(bytes: bytes) else {
            Issue.record("not a pidf-diff")
            return
        }
        #expect(version == 8)
        #expect(operations.map(\.kind) == [.remove, .replace, .add, .replace])
        // Changed elements that kept their shape have only their changed children replaced.
        #expect(operations.filter { $0.kind == .replace }.map { $0.selector.split(separator: "/").last ?? "" }
                    == ["status", "n2:activities"], "\(operations.map(\.selector))")
        var patched = old
        try PIDFDiff.apply(operations, to: &patched)
        #expect(try PIDFDocument(xml: patched) == PIDFDocument(xml: new))
        // The full state is valid too, and reads back as the document.
        let full = PIDFDiff.full(new, version: 9)
        #expect(try schema.validate(full) == [])
        guard case .full(9, let presence) = try PIDFDiff(bytes: full) else {
            Issue.record("not pidf-full 9")
            return
        }
        #expect(try PIDFDocument(xml: presence) == PIDFDocument(xml: new))
    }

    /// What cannot be said by id, or is not smaller, is sent as full state (nil); so is nothing.
    @Test func diffsThatCannotBeAddressedAreNotWritten() throws {
        let old = try Self.document(Self.tuple("a", "open") + Self.tuple("b", "open"))
        #expect(PIDFDiff.diff(from: old, to: old, version: 1) == nil)
        // Reordered.
        #expect(PIDFDiff.diff(from: old, to: try Self.document(Self.tuple("b", "open") + Self.tuple("a", "open")), version: 1) == nil)
        // An element without id (a note) changed.
        let noted = try Self.document(Self.tuple("a", "open") + "<note>x</note>")
        #expect(PIDFDiff.diff(from: noted, to: try Self.document(Self.tuple("a", "open") + "<note>y</note>"), version: 1) == nil)
        // Another entity.
        let other = try XMLParser.parse(Array(#"<presence xmlns="urn:ietf:params:xml:ns:pidf" entity="sip:eve@x">"#.utf8) + Array("</presence>".utf8))
        #expect(PIDFDiff.diff(from: old, to: other, version: 1) == nil)
        // A new first element.
        #expect(PIDFDiff.diff(from: old, to: try Self.document(Self.tuple("z", "open") + Self.tuple("a", "open") + Self.tuple("b", "open")), version: 1) == nil)
        // Every element changed whole: the diff would be larger than the document.
        let whole = ["a", "b"].map { "<tuple id=\"\($0)\"><status><basic>closed</basic></status><note>gone</note></tuple>" }
        #expect(PIDFDiff.diff(from: old, to: try Self.document(whole.joined()), version: 1) == nil)
    }

    static func operations(_ ops: String) throws -> [PIDFDiff.Operation] {
        let xml = """
            <p:pidf-diff xmlns="urn:ietf:params:xml:ns:pidf" xmlns:p="urn:ietf:params:xml:ns:pidf-diff" \
            xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" version="2">\(ops)</p:pidf-diff>
            """
        guard case .diff(_, let operations) = try PIDFDiff(bytes: Array(xml.utf8)) else { throw XMLError(.unexpectedContent, "no diff") }
        return operations
    }

    @Test(arguments: [
        (#"<p:replace sel="*/tuple[@id='zz']/status/basic/text()">open</p:replace>"#, "nothing is selected"),
        (#"<p:remove sel="*/tuple"/>"#, "more than one"),
        (#"<p:remove sel="id('a')"/>"#, "not supported"),
        (#"<p:remove sel="*/x:tuple"/>"#, "prefix x"),
        (#"<p:replace sel="*/tuple[@id='a']"><tuple id="q"/><tuple id="r"/></p:replace>"#, "exactly one"),
        (#"<p:add sel="*/tuple[@id='a']" type="@id">x</p:add>"#, "there already"),
        (#"<p:remove sel="presence"/>"#, "root"),
        (#"<p:remove sel="*/tuple[@id='a"/>"#, "unbalanced"),
        // RFC 5261's `type` is `@` and a QName: these would write XML that cannot be read back.
        (#"<p:add sel="*/tuple[@id='a']" type="@e[1]">x</p:add>"#, "not a name"),
        (#"<p:add sel="*/tuple[@id='a']" type="@/">x</p:add>"#, "not a name"),
        (#"<p:add sel="*/tuple[@id='a']" type="@1x">x</p:add>"#, "not a name"),
        (#"<p:add sel="*/tuple[@id='a']" type="@a b">x</p:add>"#, "not a name"),
    ])
    func badOperationsAreErrorsAndChangeNothing(_ op: String, _ mentioned: String) throws {
        let old = try Self.document(Self.tuple("a", "open") + Self.tuple("b", "open"))
        var patched = old
        let error = try #require(throws: XMLError.self) { try PIDFDiff.apply(Self.operations(op), to: &patched) }
        #expect(error.message.contains(mentioned), "\(error.message)")
        #expect(patched == old)
    }

    /// Diffs cannot grow a held document past what one message could carry.
    @Test func aPatchedDocumentIsBounded() throws {
        var tree = try Self.document(Self.tuple("a", "open"))
        let big = String(repeating: "x", count: 70_000)
        try PIDFDiff.apply(try Self.operations(#"<p:add sel="*/tuple[@id='a']"><note>\#(big)</note></p:add>"#), to: &tree)
        #expect(throws: XMLError.self) { try PIDFDiff.document(tree) }
        #expect(try PIDFDiff.document(try Self.document(Self.tuple("a", "open"))).tuples.count == 1)
    }

    @Test func badDocumentsAreLocatedErrors() throws {
        for (xml, mentioned) in [
            (#"<presence xmlns="urn:ietf:params:xml:ns:pidf" entity="sip:a@b"/>"#, "pidf-full or pidf-diff"),
            (#"<p:pidf-diff xmlns:p="urn:ietf:params:xml:ns:pidf-diff" version="x"/>"#, "unsignedInt"),
            ("<p:pidf-diff xmlns:p=\"urn:ietf:params:xml:ns:pidf-diff\">\n<p:move sel=\"a\"/></p:pidf-diff>", "add, replace or remove"),
        ] {
            let error = try #require(throws: XMLError.self) { try PIDFDiff(bytes: Array(xml.utf8)) }
            #expect(error.line >= 1 && error.message.contains(mentioned), "\(error)")
        }
    }
}
