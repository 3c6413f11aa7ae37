import Testing
import XMLBridge

/// XMLStreamWriter writes elements straight to bytes with XMLWriter's rules
/// (Namespaces in XML 1.0 §3 declarations, XML 1.0 §2.4/§3.3.3 escaping).
@Suite struct XMLStreamWriterTests {
    static func string(_ w: consuming XMLStreamWriter) -> String {
        String(decoding: w.finish(), as: UTF8.self)
    }

    @Test("element-only content is indented, text content is written as it is, empty elements are self-closed")
    func indentationFollowsContent() {
        var w = XMLStreamWriter()
        w.startElement("urn:ietf:params:xml:ns:pidf", "presence", prefix: nil)
        w.attribute("entity", "pres:a@example.com")
        w.startElement("urn:ietf:params:xml:ns:pidf", "tuple", prefix: nil)
        w.attribute("id", "t1")
        w.startElement("urn:ietf:params:xml:ns:pidf", "status", prefix: nil)
        w.endElement()
        w.startElement("urn:ietf:params:xml:ns:pidf", "note", prefix: nil, indentsChildren: false)
        w.text("")
        w.endElement()
        w.endElement()
        w.endElement()
        #expect(Self.string(w) == """
            <?xml version="1.0" encoding="UTF-8"?>
            <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="pres:a@example.com">
              <tuple id="t1">
                <status/>
                <note></note>
              </tuple>
            </presence>

            """)
    }

    @Test("a prefix is declared where it is first bound and not again inside, and finish closes open elements")
    func declaresPrefixOnce() {
        var w = XMLStreamWriter(indent: nil, declaration: false)
        w.startElement("urn:a", "root", prefix: nil, declarations: [("dm", "urn:dm")])
        w.startElement("urn:dm", "person", prefix: "dm")
        w.startElement("urn:other", "x", prefix: nil, indentsChildren: false)
        w.text("1")
        w.endElement()
        #expect(Self.string(w) == #"<root xmlns:dm="urn:dm" xmlns="urn:a"><dm:person><x xmlns="urn:other">1</x></dm:person></root>"#)
    }

    @Test("siblings each in a namespace of their own, under prefixes met again and again, each declare theirs, also past thousands met")
    func manyNamespacesMet() {
        var w = XMLStreamWriter(indent: nil, declaration: false)
        var expected = #"<root xmlns="urn:root">"#
        w.startElement("urn:root", "root", prefix: nil)
        for i in 0..<3000 {
            // A prefix from a few, a URI never met before, and then one met 1000 siblings earlier.
            let prefix = "p\(i % 7)", uri = "urn:n:\(i)", again = "urn:n:\(max(0, i - 1000))"
            w.startElement(uri, "e", prefix: prefix)
            w.startElement(again, "f", prefix: nil)
            w.endElement()
            w.endElement()
            expected += #"<\#(prefix):e xmlns:\#(prefix)="\#(uri)"><f xmlns="\#(again)"/></\#(prefix):e>"#
        }
        expected += "</root>"
        #expect(Self.string(w) == expected)
    }

    @Test("an element whose prefix is bound to its namespace declares nothing; other prefixes, the default, xml, xmlns and no namespace follow the full rules")
    func bindingInForce() {
        var w = XMLStreamWriter(indent: nil, declaration: false)
        w.startElement("urn:a", "root", prefix: nil, declarations: [("p", "urn:p")])
        w.startElement("urn:a", "child", prefix: nil)
        w.startElement("urn:p", "x", prefix: "p")
        w.endElement()
        w.startElement("urn:p", "y", prefix: nil)
        w.startElement("urn:p", "z", prefix: nil)
        w.endElement()
        w.endElement()
        w.startElement("urn:a", "q", prefix: "p")
        w.startElement("urn:a", "r", prefix: "p")
        w.endElement()
        w.endElement()
        w.startElement("http://www.w3.org/XML/1998/namespace", "e", prefix: "x")
        w.endElement()
        w.startElement("", "n", prefix: nil)
        w.startElement("", "m", prefix: nil)
        w.endElement()
        w.endElement()
        w.endElement()
        w.endElement()
        #expect(Self.string(w) == """
            <root xmlns:p="urn:p" xmlns="urn:a"><child><p:x/><y xmlns="urn:p"><z/></y>\
            <p:q xmlns:p="urn:a"><p:r/></p:q><xml:e/><n xmlns=""><m/></n></child></root>
            """)

        // An attribute in the xmlns namespace gets a made-up `ns` prefix, which may
        // not be declared for an element: the element takes the default namespace.
        var v = XMLStreamWriter(indent: nil, declaration: false)
        v.startElement("urn:a", "root", prefix: nil)
        v.attribute(XMLName("http://www.w3.org/2000/xmlns/", "b"), "v")
        v.startElement("http://www.w3.org/2000/xmlns/", "e", prefix: "ns")
        v.endElement()
        v.endElement()
        #expect(Self.string(v) == """
            <root xmlns="urn:a" xmlns:ns="http://www.w3.org/2000/xmlns/" ns:b="v">\
            <e xmlns="http://www.w3.org/2000/xmlns/"/></root>
            """)
    }

    @Test("attribute values escape quotes, TAB, LF and CR; text escapes CR; other C0 controls become U+FFFD")
    func escapesAsXMLWriter() {
        var w = XMLStreamWriter(indent: nil, declaration: false)
        w.startElement("", "a", prefix: nil, indentsChildren: false)
        w.attribute("v", "\"<&>\t\n\r\u{1}")
        w.text("<&>\t\n\r\u{1}")
        w.endElement()
        #expect(Self.string(w) == "<a v=\"&quot;&lt;&amp;&gt;&#9;&#10;&#13;\u{FFFD}\">&lt;&amp;&gt;\t\n&#13;\u{FFFD}</a>")
    }

    @Test("a character to escape is replaced wherever it stands in a long value, and clean runs around it are kept")
    func escapesAtEveryPosition() {
        // XML 1.0 §2.4 and §3.3.3: the replacement does not depend on where
        // the character is; values longer than a machine word are read in words.
        let special: [(Character, attribute: String, text: String)] = [
            ("&", "&amp;", "&amp;"), ("<", "&lt;", "&lt;"), (">", "&gt;", "&gt;"),
            ("\"", "&quot;", "\""), ("\t", "&#9;", "\t"), ("\n", "&#10;", "\n"), ("\r", "&#13;", "&#13;"),
            ("\u{1}", "\u{FFFD}", "\u{FFFD}"),
        ]
        let clean = "abcdefghijklmnopqrstuvwxyz0123 :/.-_" // 36 bytes, none escaped
        for (character, inAttribute, inText) in special {
            for position in 0...clean.count {
                let index = clean.index(clean.startIndex, offsetBy: position)
                let value = String(clean[..<index]) + String(character) + String(clean[index...])
                var w = XMLStreamWriter(indent: nil, declaration: false)
                w.startElement("", "a", prefix: nil, indentsChildren: false)
                w.attribute("v", value)
                w.text(value)
                w.endElement()
                let head = String(clean[..<index]), tail = String(clean[index...])
                #expect(Self.string(w) == "<a v=\"\(head)\(inAttribute)\(tail)\">\(head)\(inText)\(tail)</a>")
            }
        }
        var w = XMLStreamWriter(indent: nil, declaration: false)
        w.startElement("", "a", prefix: nil, indentsChildren: false)
        w.text(clean + clean + "é€😀")
        w.endElement()
        #expect(Self.string(w) == "<a>\(clean)\(clean)é€😀</a>")
    }

    @Test("random values of every ASCII byte (and some non-ASCII) escape as a byte-by-byte reference does")
    func escapesAsAReferenceOnRandomValues() {
        // The reference: XML 1.0 §2.4 and §3.3.3, one character at a time.
        func reference(_ value: String, attribute: Bool) -> String {
            var out = ""
            for scalar in value.unicodeScalars {
                switch scalar {
                case "&": out += "&amp;"
                case "<": out += "&lt;"
                case ">": out += "&gt;"
                case "\"" where attribute: out += "&quot;"
                case "\t" where attribute: out += "&#9;"
                case "\n" where attribute: out += "&#10;"
                case "\r": out += "&#13;"
                case "\t", "\n": out.unicodeScalars.append(scalar)
                default: out.unicodeScalars.append(scalar.value < 0x20 ? "\u{FFFD}" : scalar)
                }
            }
            return out
        }
        var state: UInt64 = 7
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: state >> 33)
        }
        let pool: [Unicode.Scalar] = (0..<0x80).compactMap(Unicode.Scalar.init) + ["é", "€", "😀"]
        for round in 0..<4_000 {
            // Mostly plain letters, so that long clean runs (read in words) occur;
            // every other value longer and sparser, so that runs of sixteen (read
            // in word pairs) occur too, with a replacement in either word.
            // Every third value is short (under nine bytes: four to seven are tested as one word).
            let sparse = round % 2 == 1
            let length = round % 3 == 0 ? next() % 9 : sparse ? next() % 120 : next() % 40
            var value = ""
            for _ in 0..<length {
                let special = sparse ? next() % 24 == 0 : next() % 4 == 0
                value.unicodeScalars.append(special ? pool[next() % pool.count] : Unicode.Scalar(UInt8(0x61 + next() % 26)))
            }
            var w = XMLStreamWriter(indent: nil, declaration: false)
            w.startElement("", "a", prefix: nil, indentsChildren: false)
            w.attribute("v", value)
            w.text(value)
            w.endElement()
            #expect(Self.string(w) == "<a v=\"\(reference(value, attribute: true))\">\(reference(value, attribute: false))</a>")
        }
    }

    @Test("indentation grows two spaces per level also deeper than sixteen levels")
    func deepIndentation() {
        var w = XMLStreamWriter(declaration: false)
        for _ in 0..<20 { w.startElement("", "e", prefix: nil) }
        let bytes = w.finish()
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
        // 19 opening tags, one self-closed innermost element, 19 closing tags.
        #expect(lines.count == 39)
        for (depth, line) in lines.prefix(20).enumerated() {
            #expect(line == Substring(String(repeating: "  ", count: depth) + (depth == 19 ? "<e/>" : "<e>")))
        }
        for (i, line) in lines.dropFirst(20).enumerated() {
            #expect(line == Substring(String(repeating: "  ", count: 18 - i) + "</e>"))
        }
    }

    @Test("a namespaced attribute without a binding gets a declaration; xml:lang needs none")
    func declaresAttributeNamespace() {
        var w = XMLStreamWriter(indent: nil, declaration: false)
        w.startElement("urn:a", "a", prefix: nil)
        w.attribute(XMLName("urn:x", "flag"), "1", prefix: "x")
        w.attribute(XMLName("http://www.w3.org/XML/1998/namespace", "lang"), "en", prefix: "xml")
        w.endElement()
        #expect(Self.string(w) == #"<a xmlns="urn:a" xmlns:x="urn:x" x:flag="1" xml:lang="en"/>"#)
    }

    @Test("a tree written through the stream writer gives XMLWriter's bytes")
    func treeThroughStreamWriter() throws {
        let tree = try XMLParser.parse(Array(#"<r xmlns="urn:a" xmlns:p="urn:p"><p:c p:x="1" y="2"><d>t</d></p:c><e/></r>"#.utf8))
        var w = XMLStreamWriter()
        w.element(tree)
        #expect(w.finish() == XMLWriter().bytes(tree))
    }

    @Test("a codec's names and namespaced attributes write the bytes of their strings, in a writer made with their namespaces or not, over random documents")
    func namesWriteAsTheirStrings() {
        // Two namespaces share a prefix, two the default namespace; others come by string.
        let table: [(uri: String, prefix: String?)] = [
            ("urn:a", nil), ("urn:b", "b"), ("urn:c", "p"), ("urn:d", "p"), ("urn:e", nil), ("urn:f", "f"),
        ]
        let namespaces = XMLStreamWriter.Namespaces(table)
        let locals = ["x", "yy", "a-rather-long-local-name"]
        let others: [(uri: String, prefix: String?)] = [
            ("urn:a", "b"), ("urn:b", nil), ("urn:g", "g"), ("urn:c", "f"), ("", nil),
            ("http://www.w3.org/XML/1998/namespace", "q"),
        ]
        enum Step {
            case name(entry: Int, local: String, declaring: UInt64, indents: Bool)
            case local(entry: Int, local: String)
            case strings(uri: String, local: String, prefix: String?)
            case attribute(uri: String, prefix: String?), codecAttribute(entry: Int), text(String), end
        }
        /// Writes `steps` by strings only (`byName` false) or by names where a step has one;
        /// without the declarations a name's step asks for when not `declaring` (a writer
        /// made without the namespaces has none to declare by position).
        func write(_ steps: [Step], into w: inout XMLStreamWriter, byName: Bool, declaring: Bool = true) {
            for step in steps {
                switch step {
                case .name(let entry, let local, let bits, let indents):
                    let declaring = declaring ? bits : 0
                    if byName {
                        w.startElement(XMLStreamWriter.Name(local, in: namespaces[entry]), declaring: declaring, indentsChildren: indents)
                    } else {
                        let declarations = table.indices.filter { declaring & (1 << UInt64($0)) != 0 }.map { (prefix: table[$0].prefix, uri: table[$0].uri) }
                        w.startElement(table[entry].uri, local, prefix: table[entry].prefix, declarations: declarations, indentsChildren: indents)
                    }
                case .local(let entry, let local):
                    if byName {
                        w.startElement(local, in: namespaces[entry])
                    } else {
                        w.startElement(table[entry].uri, local, prefix: table[entry].prefix)
                    }
                case .strings(let uri, let local, let prefix): w.startElement(uri, local, prefix: prefix)
                case .attribute(let uri, let prefix): w.attribute(XMLName(uri, "at"), "v", prefix: prefix)
                case .codecAttribute(let entry):
                    if byName {
                        w.attribute("at", in: namespaces[entry], "v")
                    } else {
                        w.attribute(XMLName(table[entry].uri, "at"), "v", prefix: table[entry].prefix)
                    }
                case .text(let t): w.text(t)
                case .end: w.endElement()
                }
            }
        }
        var random = Random(state: 12)
        for _ in 0..<2_000 {
            var steps: [Step] = []
            var depth = 0
            for _ in 0..<(1 + random.below(24)) {
                switch random.below(9) {
                case 0, 1, 2:
                    let declaring = random.below(3) == 0 ? random.next() & 0x3F : 0
                    steps.append(.name(
                        entry: random.below(table.count), local: locals[random.below(locals.count)], declaring: declaring,
                        indents: random.below(4) != 0))
                    depth += 1
                case 3:
                    steps.append(.local(entry: random.below(table.count), local: locals[random.below(locals.count)]))
                    depth += 1
                case 4:
                    let other = random.below(2) == 0 ? others[random.below(others.count)] : table[random.below(table.count)]
                    steps.append(.strings(uri: other.uri, local: locals[random.below(locals.count)], prefix: other.prefix))
                    depth += 1
                case 5:
                    let other = random.below(2) == 0 ? others[random.below(others.count)] : table[random.below(table.count)]
                    steps.append(.attribute(uri: other.uri, prefix: other.prefix))
                case 6: steps.append(.text("t"))
                case 7: steps.append(.codecAttribute(entry: random.below(table.count)))
                default:
                    if depth > 0 { steps.append(.end); depth -= 1 }
                }
            }
            var byStrings = XMLStreamWriter(indent: " ", declaration: false)
            write(steps, into: &byStrings, byName: false)
            var byNames = XMLStreamWriter(indent: " ", declaration: false, namespaces: namespaces)
            write(steps, into: &byNames, byName: true)
            var byStringsUndeclared = XMLStreamWriter(indent: " ", declaration: false)
            write(steps, into: &byStringsUndeclared, byName: false, declaring: false)
            var namesElsewhere = XMLStreamWriter(indent: " ", declaration: false)
            write(steps, into: &namesElsewhere, byName: true, declaring: false)
            // Finished outside #expect, whose closures cannot consume a writer.
            let expected = byStrings.finish(), expectedUndeclared = byStringsUndeclared.finish()
            let written = byNames.finish(), writtenElsewhere = namesElsewhere.finish()
            #expect(written == expected)
            #expect(writtenElsewhere == expectedUndeclared)
        }
    }
}
