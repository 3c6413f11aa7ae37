import Testing
@testable import XMLBridge

/// `XMLCursor.isIn(namespace:)` answers as `!isText && namespaceURI == namespace` for every node.
@Suite struct XMLCursorIsInNamespaceTests {
    @Test func agreesWithTheNamespaceURIForEveryNode() throws {
        // Same-length URIs, a URI that is a prefix of another, no namespace, text and nesting.
        let text = """
            <r xmlns="urn:a:b" xmlns:x="urn:a:c" xmlns:y="urn:a:bc" >text<x:e/><y:e>t</y:e>
            <e xmlns="">u</e><x:f><z:g xmlns:z="urn:a:b"/>more</x:f><h/></r>
            """
        let root = try XMLParser.events(Array(text.utf8)).root
        let namespaces = ["", "urn:a:b", "urn:a:c", "urn:a:bc", "urn:a:", "urn:a:B", "urn:a:b "]
        var nodes = 0
        func check(_ cursor: XMLCursor) {
            nodes += 1
            for namespace in namespaces {
                #expect(cursor.isIn(namespace: namespace) == (!cursor.isText && cursor.namespaceURI == namespace),
                        "\(cursor.isText ? "text" : cursor.localName) in \(namespace)")
            }
            if !cursor.isText { for child in cursor.children { check(child) } }
        }
        check(root)
        #expect(nodes >= 12)
    }
}
