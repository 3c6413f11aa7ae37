import Testing
import XMLBridge

/// XMLWriter output parses back to the same value (parse → write → parse).
@Suite struct XMLWriterTests {
    static let xmlNS = "http://www.w3.org/XML/1998/namespace"

    static let trickyDocuments = [
        // mixed content
        #"<p xmlns="urn:x">Hello <b>bold</b> and <i>it<b>x</b></i> tail</p>"#,
        // nested default namespace changes
        #"<a xmlns="urn:1"><b xmlns="urn:2"><c xmlns="urn:1"><d/></c><e/></b><f/></a>"#,
        // element in no namespace inside a default-namespaced parent
        #"<a xmlns="urn:1"><b xmlns=""><c/></b><d/></a>"#,
        // prefix rebinding in an inner scope
        #"<p:a xmlns:p="urn:1"><p:b xmlns:p="urn:2"><p:c p:x="1"/></p:b><p:d p:x="2"/></p:a>"#,
        // the same namespace as default and as prefix, with attributes in both forms
        #"<a xmlns="urn:1" xmlns:q="urn:1" q:x="1" x="2"><q:b/></a>"#,
        // escaping in text and attributes, including tab/LF/CR in attributes and CR in text
        "<a t=\"&lt;&amp;&gt;&quot;'&#9;&#10;&#13; x\">&lt;&amp;&gt;\"' ]]&gt; &#13; \t</a>",
        // non-ASCII names and content
        #"<名前 xmlns="urn:example:%C3%BC" 属性="値 ☺">héllo 😀 &#xE9;</名前>"#,
        // xml:lang and an attribute whose namespace is declared only on the root
        #"<r xmlns:z="urn:z"><n xml:lang="fr" z:k="v">texte</n></r>"#,
        // whitespace-only text between elements is kept
        "<a>\n  <b/>\n  <c> </c>\n</a>",
    ]

    static func roundTrip(_ element: XMLElement, writer: XMLWriter) throws -> XMLElement {
        try XMLParser.parse(writer.bytes(element))
    }

    @Test(arguments: trickyDocuments)
    func parsedDocumentSurvivesWriteAndParse(_ text: String) throws {
        let original = try XMLParser.parse(text)
        for writer in [XMLWriter(indent: nil, declaration: false), XMLWriter(), XMLWriter(indent: "\t", declaration: true)] {
            let again = try Self.roundTrip(original, writer: writer)
            #expect(again == original)
        }
        // Without indentation nothing is added, so even white space is preserved.
        #expect(try Self.roundTrip(original, writer: XMLWriter(indent: nil, declaration: false)) == original)
    }

    /// Built trees (not parsed), whose prefix hints the writer has to repair.
    static let builtDocuments: [XMLElement] = {
        var docs: [XMLElement] = []
        // An element in no namespace inside a default-namespaced parent needs xmlns="".
        docs.append(XMLElement(XMLName("urn:1", "a"), children: [
            .element(XMLElement(XMLName("", "b"), prefix: "ignored")),
            .element(XMLElement(XMLName("urn:1", "c"))),
        ]))
        // An attribute namespace without a prefix hint.
        docs.append(XMLElement(XMLName("urn:1", "a"), attributes: [XMLAttribute(XMLName("urn:attr", "x"), "v")]))
        // Two attributes of different namespaces with the same prefix hint (and the same local name).
        docs.append(XMLElement(XMLName("urn:1", "a"), attributes: [
            XMLAttribute(XMLName("urn:p1", "x"), "1", prefix: "p"),
            XMLAttribute(XMLName("urn:p2", "x"), "2", prefix: "p"),
            XMLAttribute(XMLName("urn:p2", "y"), "3", prefix: "p"),
        ]))
        // The element's prefix hint also used by an attribute of another namespace.
        docs.append(XMLElement(XMLName("urn:1", "a"), attributes: [XMLAttribute(XMLName("urn:2", "x"), "1", prefix: "p")], prefix: "p"))
        // A child whose prefix hint clashes with a declaration recorded on the parent.
        docs.append(XMLElement(XMLName("urn:1", "a"), children: [
            .element(XMLElement(XMLName("urn:2", "b"), prefix: "p")),
        ], prefix: "p"))
        // Prefixed parent, child in no namespace: no xmlns="" needed, still no namespace.
        docs.append(XMLElement(XMLName("urn:1", "a"), children: [.element(XMLElement(XMLName("", "b")))], prefix: "p"))
        // xml:lang written without a hint; the xml prefix needs no declaration.
        docs.append(XMLElement(XMLName("urn:1", "a"), attributes: [XMLAttribute(XMLName(xmlNS, "lang"), "en")]))
        // Characters that need escaping, including every XML white-space character in attributes.
        docs.append(XMLElement(XMLName("", "a"),
            attributes: [XMLAttribute(XMLName("", "v"), " <&>\"'\t\n\r ")],
            children: [.text("x]]>y\r\n<&>\t\"'")]))
        // Non-ASCII.
        docs.append(XMLElement(XMLName("urn:example:%C3%BC", "ß"), attributes: [XMLAttribute(XMLName("", "ä"), "☺😀")], children: [.text("ñ")]))
        // Prefix hints that must never be declared (xml for another namespace, xmlns).
        docs.append(XMLElement(XMLName("urn:1", "a"), attributes: [
            XMLAttribute(XMLName("urn:2", "x"), "1", prefix: "xml"),
            XMLAttribute(XMLName("urn:3", "y"), "2", prefix: "xmlns"),
        ], children: [.element(XMLElement(XMLName("urn:4", "b"), prefix: "xml"))], prefix: "xmlns"))
        return docs
    }()

    @Test(arguments: builtDocuments.indices)
    func builtDocumentSurvivesWriteAndParse(_ index: Int) throws {
        let original = Self.builtDocuments[index]
        for writer in [XMLWriter(indent: nil, declaration: false), XMLWriter()] {
            let text = writer.string(original)
            let again = try XMLParser.parse(text)
            #expect(again == original, "\(text)")
        }
    }

    @Test func smallDocumentIsWrittenExactly() {
        // Expected bytes derived from the specs, not from the writer:
        // - Namespaces §6.2: the child in no namespace under a default namespace needs xmlns="".
        // - XML 1.0 §2.4/§3.1: '<' and '&' must be escaped in attribute values and text, '"' inside
        //   a "-delimited value; tab must be a character reference in an attribute (§3.3.3 would
        //   turn a literal tab into a space). '>' may be written as &gt; (required after "]]").
        // - An element with no content is written as an empty-element tag (§3.1 [44]).
        var root = XMLElement(XMLName("urn:example:a", "root"))
        root.setAttribute(XMLName("", "t"), "1<2 & \"q\"\t")
        root.children = [.text("x > y & z"), .element(XMLElement(XMLName("", "e")))]
        let written = XMLWriter(indent: nil, declaration: false).string(root)
        #expect(written == #"<root xmlns="urn:example:a" t="1&lt;2 &amp; &quot;q&quot;&#9;">x &gt; y &amp; z<e xmlns=""/></root>"#)
    }

    @Test func declarationAndIndentation() {
        // Element-only content is indented; the declaration comes first (XML 1.0 §2.8).
        var root = XMLElement(XMLName("urn:a", "r"), prefix: "a")
        root.append(XMLElement(XMLName("urn:a", "c"), prefix: "a"))
        let written = XMLWriter(indent: "  ", declaration: true).string(root)
        #expect(written == "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<a:r xmlns:a=\"urn:a\">\n  <a:c/>\n</a:r>\n")
    }
}
