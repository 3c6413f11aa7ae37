import Testing
import XMLBridge

/// XMLElement keeps its fields in a shared copy-on-write box; these pin that it
/// still behaves as a value, and that a parse vocabulary changes nothing but speed.
struct XMLValueSemanticsTests {
    @Test func mutatingACopyLeavesTheOriginalAlone() throws {
        let original = try XMLParser.parse(#"<a xmlns="urn:x" k="1"><b>t</b></a>"#)
        var copy = original
        copy.children.append(.element(XMLElement(XMLName("urn:x", "c"))))
        copy.setAttribute(XMLName("", "k"), "2")
        copy.name = XMLName("urn:y", "z")
        copy.prefix = "p"
        copy.namespaceDeclarations.append(("p", "urn:y"))
        copy.line = 99

        #expect(original.name == XMLName("urn:x", "a"))
        #expect(original[attribute: "k"] == "1")
        #expect(original.children.count == 1)
        #expect(original.prefix == nil)
        #expect(original.namespaceDeclarations.count == 1)
        #expect(original.line == 1)
        #expect(copy[attribute: "k"] == "2")
        #expect(copy.children.count == 2)
    }

    @Test func childCopiedOutOfATreeIsIndependentOfIt() throws {
        let root = try XMLParser.parse("<a><b>t</b></a>")
        guard var child = root.element(XMLName("", "b")) else {
            Issue.record("no child b")
            return
        }
        child.children = [.text("changed")]
        #expect(root.element(XMLName("", "b"))?.text == "t")
        #expect(child.text == "changed")
    }

    @Test func vocabularyGivesTheSameTreeAsPlainParsing() throws {
        // One URI in the vocabulary, one only sharing its prefix, one absent.
        let document = """
            <p:a xmlns:p="urn:ietf:params:xml:ns:pidf" xmlns:q="urn:ietf:params:xml:ns:pidf:rpid" xmlns="urn:other">
              <q:b x="1"/><c/><p:d/>
            </p:a>
            """
        let vocabulary = XMLVocabulary(namespaces: ["urn:ietf:params:xml:ns:pidf", "urn:ietf:params:xml:ns:pid"])
        let plain = try XMLParser.parse(document)
        let interned = try XMLParser.parse(document, vocabulary: vocabulary)
        #expect(plain == interned)
        #expect(interned.name == XMLName("urn:ietf:params:xml:ns:pidf", "a"))
        let names = interned.elements.map(\.name)
        #expect(names == [
            XMLName("urn:ietf:params:xml:ns:pidf:rpid", "b"), XMLName("urn:other", "c"),
            XMLName("urn:ietf:params:xml:ns:pidf", "d"),
        ])
        #expect(XMLWriter().bytes(plain) == XMLWriter().bytes(interned))
    }
}
