import Testing
import XMLBridge

/// Names are (namespace URI, local name) pairs (Namespaces in XML 1.0), never prefixes.
@Suite struct XMLNamespaceTests {
    static let pidf = "urn:ietf:params:xml:ns:pidf"
    static let xmlNS = "http://www.w3.org/XML/1998/namespace"

    static let spellings = [
        // default namespace
        #"<presence xmlns="urn:ietf:params:xml:ns:pidf" entity="pres:a@example.com"><tuple id="t1"><status><basic>open</basic></status><note xml:lang="en">hi</note></tuple></presence>"#,
        // prefix p:
        #"<p:presence xmlns:p="urn:ietf:params:xml:ns:pidf" entity="pres:a@example.com"><p:tuple id="t1"><p:status><p:basic>open</p:basic></p:status><p:note xml:lang="en">hi</p:note></p:tuple></p:presence>"#,
        // another prefix, plus an unused declaration
        #"<pidf:presence xmlns:pidf="urn:ietf:params:xml:ns:pidf" xmlns:x="urn:unused" entity="pres:a@example.com"><pidf:tuple id="t1"><pidf:status><pidf:basic>open</pidf:basic></pidf:status><pidf:note xml:lang="en">hi</pidf:note></pidf:tuple></pidf:presence>"#,
        // redundant re-declarations on inner elements, mixing default and prefixed forms
        #"<presence xmlns="urn:ietf:params:xml:ns:pidf" entity="pres:a@example.com"><tuple xmlns="urn:ietf:params:xml:ns:pidf" id="t1"><q:status xmlns:q="urn:ietf:params:xml:ns:pidf"><basic xmlns="urn:ietf:params:xml:ns:pidf">open</basic></q:status><q:note xmlns:q="urn:ietf:params:xml:ns:pidf" xml:lang="en">hi</q:note></tuple></presence>"#,
    ]

    @Test func sameDocumentSpelledWithDifferentPrefixesParsesEqual() throws {
        let values = try Self.spellings.map { text throws(XMLError) in try XMLParser.parse(text) }
        for value in values.dropFirst() { #expect(value == values[0]) }
        let root = values[0]
        #expect(root.name == XMLName(Self.pidf, "presence"))
        let basic = root.element(XMLName(Self.pidf, "tuple"))?.element(XMLName(Self.pidf, "status"))?.element(XMLName(Self.pidf, "basic"))
        #expect(basic?.text == "open")
    }

    /// Namespaces in XML 1.0 §2: a namespace name is the attribute's normalized value, so
    /// `&amp;` and `&#38;` in it read as `&`, and what is written back reads the same again
    /// (Vectors/fuzz/categories: it was read as `&#38;` and written as `&amp;#38;`).
    @Test func namespaceNameWithAnEscapedAmpersandReadsAsAmpersandAndRoundTrips() throws {
        let root = try XMLParser.parse(#"<a xmlns="urn:x&amp;y" xmlns:p="urn:p&#38;q"><p:b/></a>"#)
        #expect(root.name == XMLName("urn:x&y", "a"))
        #expect(root.element(XMLName("urn:p&q", "b")) != nil)
        let again = try XMLParser.parse(XMLWriter().bytes(root))
        #expect(again == root)
        #expect(XMLWriter().bytes(again) == XMLWriter().bytes(root))
    }

    @Test func sameLocalNamesInAnotherNamespaceAreNotEqual() throws {
        let a = try XMLParser.parse(#"<presence xmlns="urn:ietf:params:xml:ns:pidf"/>"#)
        let b = try XMLParser.parse(#"<presence xmlns="urn:ietf:params:xml:ns:cpim-pidf"/>"#)
        let c = try XMLParser.parse(#"<presence/>"#)
        #expect(a != b)
        #expect(a != c)
    }

    @Test func xmlLangIsInTheXMLNamespace() throws {
        let note = try XMLParser.parse(#"<note xmlns="urn:x" xml:lang="de">Hallo</note>"#)
        #expect(note.attribute(XMLName(Self.xmlNS, "lang")) == "de")
        #expect(note[attribute: "lang"] == nil)
    }

    @Test func unprefixedAttributesAreInNoNamespaceEvenUnderADefaultNamespace() throws {
        // Namespaces in XML 1.0 §6.2: the default namespace does not apply to attributes.
        let e = try XMLParser.parse(#"<e xmlns="urn:x" xmlns:p="urn:x" a="1" p:a="2"/>"#)
        #expect(e.name == XMLName("urn:x", "e"))
        #expect(e.attribute(XMLName("", "a")) == "1")
        #expect(e.attribute(XMLName("urn:x", "a")) == "2")
        #expect(e.attributes.count == 2)
    }

    @Test func emptyDefaultNamespaceDeclarationUndeclaresTheDefault() throws {
        let root = try XMLParser.parse(#"<a xmlns="urn:x"><b xmlns=""><c/></b><d/></a>"#)
        let b = try #require(root.element(XMLName("", "b")))
        #expect(b.element(XMLName("", "c")) != nil)
        #expect(root.element(XMLName("urn:x", "d")) != nil)
    }

    @Test func prefixRebindingOnAnInnerElementIsScoped() throws {
        let root = try XMLParser.parse(#"<p:a xmlns:p="urn:1"><p:b xmlns:p="urn:2"><p:c/></p:b><p:d/></p:a>"#)
        let b = try #require(root.element(XMLName("urn:2", "b")))
        #expect(b.element(XMLName("urn:2", "c")) != nil)
        #expect(root.element(XMLName("urn:1", "d")) != nil)
    }

    @Test func namespaceNameThatIsNotAURIReferenceIsRefused() {
        // Namespaces in XML 1.0 §2.2: a namespace name is a URI reference (RFC 3986: ASCII only);
        // non-ASCII characters must be percent-encoded, as in the second document.
        #expect(throws: XMLError.self) { try XMLParser.parse(#"<a xmlns="urn:ü"/>"#) }
        #expect((try? XMLParser.parse(#"<a xmlns="urn:%C3%BC"/>"#))?.name == XMLName("urn:%C3%BC", "a"))
    }

    @Test(arguments: [
        #"<p:a/>"#,                                        // undeclared prefix
        #"<a xmlns:p="urn:x" p:b="1" p:b="2"/>"#,         // duplicate attribute
        #"<a xmlns:p="urn:x" xmlns:q="urn:x" p:b="1" q:b="2"/>"#,  // same expanded name twice (Namespaces §6.3)
    ])
    func namespaceErrorsAreNotWellFormed(_ text: String) {
        #expect(throws: XMLError.self) { try XMLParser.parse(text) }
        do { _ = try XMLParser.parse(text) } catch { #expect(error.code == .notWellFormed) }
    }
}
