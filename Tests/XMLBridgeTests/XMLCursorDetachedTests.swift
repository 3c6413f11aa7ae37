import Testing
import XMLBridge

/// `XMLCursor.detached` keeps one element of a recording on its own, and
/// `XMLStreamWriter.element(_: XMLCursor)` writes a recorded element: both
/// must give exactly what the tree of that element (`subtree`) gives.
@Suite struct XMLCursorDetachedTests {
    static let documents: [String] = [
        // Exchange WorkingHours as [MS-PRES] §4.5 carries it: default namespace, indentation, nested text.
        """
        <calendarData xmlns="http://schemas.microsoft.com/2006/09/sip/calendarData" mailboxID="john@contoso.com">
          <WorkingHours xmlns="http://schemas.microsoft.com/exchange/services/2006/types">
            <TimeZone><Bias>480</Bias><StandardTime><Bias>0</Bias><Time>02:00:00</Time></StandardTime></TimeZone>
            <WorkingPeriodArray><WorkingPeriod><DayOfWeek>Monday Friday</DayOfWeek></WorkingPeriod></WorkingPeriodArray>
          </WorkingHours>
        </calendarData>
        """,
        // Prefixes, a redeclared prefix, namespaced and plain attributes, references that must be escaped again.
        #"""
        <r xmlns:a="urn:a"><x><a:k a:one="1 &amp; 2" two="&lt;&quot;&#13;&#9;&#10;" xmlns:b="urn:b"><b:l b:z="z">t&amp;u&lt;v&#13;w</b:l><a:m xmlns:a="urn:other"/>tail</a:k></x><y/></r>
        """#,
        // Empty elements and an element holding only an empty-looking CDATA run.
        "<r><e/><f></f><g><![CDATA[ ]]></g></r>",
        // Declarations whose prefixes no element or attribute uses, and the same URI declared twice.
        #"<r xmlns:p="urn:p"><s xmlns:q="urn:q" xmlns="urn:d" xmlns:u="urn:p"><t xmlns:v="urn:q"/></s></r>"#,
    ]

    private func firstElementChildren(_ text: String) throws -> [XMLCursor] {
        let root = try XMLParser.events(Array(text.utf8)).root
        return [root] + root.elements.map { $0 } + root.elements.flatMap { $0.elements.map { $0 } }
    }

    @Test(arguments: documents)
    func detachedElementReadsAsTheOriginal(_ text: String) throws {
        for original in try firstElementChildren(text) {
            let copy = original.detached
            #expect(copy.subtree == original.subtree)
            #expect(copy.name == original.name)
            #expect(copy.prefix == original.prefix)
            #expect(copy.line == original.line && copy.column == original.column)
            #expect(copy.attributes.map(\.value) == original.attributes.map(\.value))
            #expect(copy.attributes.map(\.prefix) == original.attributes.map(\.prefix))
            #expect(copy.subtree.namespaceDeclarations.map(\.uri) == original.subtree.namespaceDeclarations.map(\.uri))
            #expect(copy.subtree.namespaceDeclarations.map(\.prefix) == original.subtree.namespaceDeclarations.map(\.prefix))
            #expect(copy.elements.map(\.line) == original.elements.map(\.line))
            #expect(copy.text == original.text)
        }
    }

    @Test(arguments: documents)
    func writingARecordedElementGivesTheBytesOfItsTree(_ text: String) throws {
        for original in try firstElementChildren(text) {
            for verbatim in [false, true] {
                var fromTree = XMLStreamWriter()
                fromTree.startElement("urn:outer", "outer", prefix: "o")
                fromTree.element(original.subtree, verbatim: verbatim)
                var fromEvents = XMLStreamWriter()
                fromEvents.startElement("urn:outer", "outer", prefix: "o")
                fromEvents.element(original, verbatim: verbatim)
                var fromDetached = XMLStreamWriter()
                fromDetached.startElement("urn:outer", "outer", prefix: "o")
                fromDetached.element(original.detached, verbatim: verbatim)
                let expected = String(decoding: fromTree.finish(), as: UTF8.self)
                #expect(String(decoding: fromEvents.finish(), as: UTF8.self) == expected)
                #expect(String(decoding: fromDetached.finish(), as: UTF8.self) == expected)
            }
        }
    }

    /// Random documents (prefixes declared at any level, namespaced and plain
    /// attributes, text runs, empty elements): every element kept on its own
    /// writes the bytes, and keeps the positions, of the element in place.
    @Test func everyElementOfRandomDocumentsDetachesAsItself() throws {
        var random = Random(state: 11)
        func below(_ n: Int) -> Int { random.below(n) }
        func element(_ depth: Int) -> String {
            let name = ["a", "p:b", "q:c", "d"][below(4)]
            var text = "<\(name)"
            if below(3) == 0 { text += #" xmlns:q="urn:q\#(below(3))""# }
            if below(4) == 0 { text += #" xmlns="urn:d\#(below(2))""# }
            for i in 0..<below(3) { text += #" \#(["x", "p:y", "q:z"][i])="\#(String(repeating: "v", count: below(6)))&lt;""# }
            text += ">"
            for _ in 0..<(depth < 4 ? below(4) : 0) {
                text += below(3) == 0 ? String(repeating: "t", count: below(4)) + "&amp;\n" : element(depth + 1)
            }
            return text + "</\(name)>"
        }
        for round in 0..<100 {
            let text = #"<r xmlns:p="urn:p" xmlns:q="urn:q">"# + element(0) + element(0) + "</r>"
            var all: [XMLCursor] = []
            func collect(_ e: XMLCursor) {
                all.append(e)
                for child in e.elements { collect(child) }
            }
            collect(try XMLParser.events(Array(text.utf8)).root)
            for original in all {
                let copy = original.detached
                var fromOriginal = XMLStreamWriter(indent: nil, declaration: false)
                fromOriginal.element(original, verbatim: true)
                var fromCopy = XMLStreamWriter(indent: nil, declaration: false)
                fromCopy.element(copy, verbatim: true)
                let expected = fromOriginal.finish(), written = fromCopy.finish()
                #expect(written == expected, "round \(round): \(text)")
                #expect(copy.line == original.line && copy.column == original.column)
                #expect(copy.elements.map(\.column) == original.elements.map(\.column))
            }
        }
    }

    @Test func detachedElementOutlivesItsDocumentsOtherContent() throws {
        var kept: XMLCursor?
        do {
            let root = try XMLParser.events(Array(#"<r><big>\#(String(repeating: "x", count: 10_000))</big><keep a="1">k</keep></r>"#.utf8)).root
            kept = root.element(XMLName("", "keep"))?.detached
        }
        let keep = try #require(kept)
        #expect(keep[attribute: "a"] == "1")
        #expect(keep.text == "k")
        #expect(keep.subtree == XMLElement(XMLName("", "keep"), attributes: [XMLAttribute(XMLName("", "a"), "1")], children: [.text("k")]))
    }
}
