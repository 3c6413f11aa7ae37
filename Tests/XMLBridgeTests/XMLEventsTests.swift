import Testing
import XMLBridge

/// The event recording (`XMLParser.events`) and its cursor: the same safety
/// rules and limits as the tree parse, names matched by namespace URI and
/// local name (Namespaces in XML 1.0 §6), character data as XML 1.0 §2.4 and
/// §2.7 define it, and unknown subtrees captured as the tree parse builds them.
@Suite struct XMLEventsTests {
    private func eventsError(_ text: String, limits: XMLLimits = XMLLimits()) -> XMLError? {
        do {
            _ = try XMLParser.events(Array(text.utf8), limits: limits)
            return nil
        } catch {
            return error
        }
    }

    private func root(_ text: String) throws -> XMLCursor {
        try XMLParser.events(Array(text.utf8)).root
    }

    // MARK: Safety and limits (the same rules as XMLParser.parse)

    @Test func doctypeWithAnInternalSubsetIsRefusedBeforeAnyEntityIsDeclared() throws {
        let xxe = #"<?xml version="1.0"?><!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><foo>&xxe;</foo>"#
        let error = try #require(eventsError(xxe))
        #expect(error.code == .doctypeForbidden)
        #expect(error.line == 1)
    }

    @Test func doctypeWithoutAnInternalSubsetIsRefused() {
        #expect(eventsError(#"<!DOCTYPE x SYSTEM "http://127.0.0.1:9/x.dtd"><x/>"#)?.code == .doctypeForbidden)
    }

    @Test func nestingOf4IsAcceptedAnd5IsTooDeepWithMaxDepth4() throws {
        let limits = XMLLimits(maxDepth: 4)
        #expect(eventsError("<a><b><c><d/></c></b></a>", limits: limits) == nil)
        let error = try #require(eventsError("<a><b><c><d>\n<e/></d></c></b></a>", limits: limits))
        #expect(error.code == .tooDeep)
        #expect(error.line == 2)
    }

    @Test func elementCountLimitCountsTheRootToo() {
        let limits = XMLLimits(maxElements: 3)
        #expect(eventsError("<a><b/><c/></a>", limits: limits) == nil)
        #expect(eventsError("<a><b/><c/><d/></a>", limits: limits)?.code == .tooManyElements)
    }

    @Test func documentLargerThanMaxBytesIsRefusedBeforeParsing() {
        let doc = "<a>" + String(repeating: "x", count: 100) + "</a>"
        #expect(eventsError(doc, limits: XMLLimits(maxBytes: doc.utf8.count - 1))?.code == .tooLarge)
        #expect(eventsError(doc, limits: XMLLimits(maxBytes: doc.utf8.count)) == nil)
    }

    @Test func undefinedEntityIsNotWellFormedAtItsLine() throws {
        let error = try #require(eventsError("<a>\n\n<b>&nbsp;</b></a>"))
        #expect(error.code == .notWellFormed)
        #expect(error.line == 3)
        #expect(error.column > 0)
    }

    @Test(arguments: ["", "<a>", "<a></b>", "<a/><b/>", "text"])
    func nonDocumentsAreNotWellFormed(_ input: String) {
        #expect(eventsError(input)?.code == .notWellFormed)
    }

    // MARK: Reading

    @Test func namesAreMatchedByNamespaceURIWhateverThePrefix() throws {
        let a = try root(#"<p:r xmlns:p="urn:x"><p:c/></p:r>"#)
        let b = try root(#"<r xmlns="urn:x"><c/></r>"#)
        for r in [a, b] {
            #expect(r.is("urn:x", "r"))
            #expect(!r.is("", "r"))
            #expect(r.element(XMLName("urn:x", "c")) != nil)
            #expect(r.element(XMLName("urn:y", "c")) == nil)
        }
        #expect(a.prefix == "p")
        #expect(b.prefix == nil)
    }

    @Test func unprefixedAttributesAreInNoNamespaceAndPrefixedOnesInTheirs() throws {
        let r = try root(#"<r xmlns="urn:d" xmlns:q="urn:q" a="1" q:a="2" xml:lang="en"/>"#)
        #expect(r[attribute: "a"] == "1")
        #expect(r.attribute(XMLName("urn:q", "a")) == "2")
        #expect(r.attribute(XMLName("http://www.w3.org/XML/1998/namespace", "lang")) == "en")
        #expect(r.attributeCount == 3)
        #expect(r.attributes(where: { $0.namespace.isEmpty }).map(\.value) == ["1"])
    }

    @Test func referencesInAttributesAndTextAreDecoded() throws {
        let r = try root(#"<r a="x&amp;y&#38;z&lt;&#x41;">1 &lt; 2 &amp;&amp; &#65;<![CDATA[<b>]]></r>"#)
        #expect(r[attribute: "a"] == "x&y&z<A")
        // Text and a CDATA section run together into one text child (XML 1.0 §2.7).
        #expect(r.text == "1 < 2 && A<b>")
        #expect(Array(r.children).count == 1)
    }

    @Test func textIsConcatenatedAcrossCommentsAndTrimmedOfXMLWhitespaceOnly() throws {
        let r = try root("<r>\n\t a<!-- c --> b\u{A0}\r\n</r>")
        // Comments are dropped; the line end is normalized (XML 1.0 §2.11); U+00A0 is not S (§2.3).
        #expect(r.trimmedText == "a b\u{A0}")
    }

    @Test func childrenStepOverNestedContentAndKeepDocumentOrder() throws {
        let r = try root("<r> <a><x/><y>t</y></a>mid<b/> </r>")
        #expect(r.elements.map(\.name.local) == ["a", "b"])
        let kinds = r.children.map { $0.isText ? "text" : $0.name.local }
        #expect(kinds == ["text", "a", "text", "b", "text"])
        #expect(r.hasElementChildren)
        #expect(!r.hasOnlyWhitespace)
        let b = try #require(r.element(XMLName("", "b")))
        #expect(!b.hasElementChildren)
        #expect(b.hasOnlyWhitespace)
    }

    @Test func errorsAreLocatedAtTheStartTagOfTheElement() throws {
        let r = try root("<r>\n  <a/>\n      <b/>\n</r>")
        let b = try #require(r.element(XMLName("", "b")))
        let error = b.error("bad")
        #expect(error.line == 3)
        #expect(error.column > 0)
        #expect(error.code == .unexpectedContent)
        #expect(error.message.contains("<b>"))
    }

    // MARK: Capturing unknown subtrees

    @Test func capturedSubtreeEqualsWhatTheTreeParseBuilds() throws {
        let doc = """
            <r xmlns="urn:d"><x:ext xmlns:x="urn:x" x:k="v" plain="p">
              <x:item>one</x:item><!-- dropped --><x:item>two &amp; <![CDATA[three]]></x:item>
              <inner xmlns=""/>
            </x:ext></r>
            """
        let tree = try XMLParser.parse(doc)
        let fromEvents = try #require(try root(doc).elements.first { _ in true }).subtree
        let fromTree = try #require(tree.elements.first { _ in true })
        #expect(fromEvents == fromTree)
        // Source spelling kept for writing back: prefix, declarations, attribute prefixes, position.
        #expect(fromEvents.prefix == "x")
        #expect(fromEvents.namespaceDeclarations.map(\.uri) == ["urn:x"])
        #expect(fromEvents.attributes.first?.prefix == "x")
        #expect(fromEvents.line == 1)
        #expect(XMLWriter().bytes(fromEvents) == XMLWriter().bytes(fromTree))
        let inner = try #require(fromEvents.element(XMLName("", "inner")))
        #expect(inner.namespaceDeclarations.count == 1)
        #expect(inner.namespaceDeclarations.first?.uri == "")
    }

    @Test func replayingATreeGivesTheSameReadingAsParsingIt() throws {
        let doc = #"<r xmlns="urn:d" a="1"><b c="2">t<d/>u</b><e/></r>"#
        let parsed = try root(doc)
        let replayed = XMLEvents(replaying: try XMLParser.parse(doc)).root
        for r in [parsed, replayed] {
            #expect(r.is("urn:d", "r"))
            #expect(r[attribute: "a"] == "1")
            let b = try #require(r.element(XMLName("urn:d", "b")))
            #expect(b.text == "tu")
            #expect(b[attribute: "c"] == "2")
            #expect(r.elements.map(\.name.local) == ["b", "e"])
        }
        #expect(replayed.subtree == parsed.subtree)
    }
}
