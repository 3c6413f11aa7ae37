import Testing
import XMLBridge

/// Each parse takes a libxml2 parser context of its own from the pool, so parses may run concurrently.
@Suite struct XMLConcurrencyTests {
    static func document(_ n: Int) -> String {
        var s = #"<p:presence xmlns:p="urn:ietf:params:xml:ns:pidf" entity="pres:user\#(n)@example.com">"#
        for t in 0..<50 { s += #"<p:tuple id="t\#(t)"><p:status><p:basic>open</p:basic></p:status><p:note>n\#(n) t\#(t) &amp; &#x263A;</p:note></p:tuple>"# }
        return s + "</p:presence>"
    }

    @Test func fourTasksParsingConcurrentlyGetTheirOwnResults() async throws {
        let pidf = "urn:ietf:params:xml:ns:pidf"
        let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            for n in 0..<4 {
                group.addTask {
                    let text = Self.document(n)
                    var ok = true
                    for round in 0..<200 {
                        // Every fourth round also exercises an error path concurrently.
                        if round % 4 == 3 {
                            do { _ = try XMLParser.parse("<a>\n<b></c></a>"); ok = false } catch let error as XMLError { ok = ok && error.line == 2 }
                            continue
                        }
                        let root = try XMLParser.parse(text)
                        let tuples = root.elements(XMLName(pidf, "tuple"))
                        ok = ok && root[attribute: "entity"] == "pres:user\(n)@example.com"
                            && tuples.count == 50
                            && tuples.last?.element(XMLName(pidf, "note"))?.text == "n\(n) t49 & ☺"
                    }
                    return (n, ok)
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(outcomes == [0: true, 1: true, 2: true, 3: true])
    }
}
