import Foundation
import Testing
@testable import XMLBridge

/// Memory reused from one parse to the next: a parser context's input buffer (refilled with
/// each document it parses). It may not change a result: a shorter document after a longer
/// one sees none of its bytes, a document libxml2 transcodes or rejects is parsed as on a
/// fresh context, and a recording still held is never overwritten by a later one.
@Suite struct XMLReusedMemoryTests {
    /// The outcome of a parse: the tree, or the error (with its position).
    enum Outcome: Equatable {
        case tree(XMLElement)
        case error(XMLError)
    }

    static func outcome(_ bytes: [UInt8], _ pool: XMLParserContextPool) -> Outcome {
        do {
            return .tree(try XMLParser.events(bytes, limits: XMLLimits(), vocabulary: XMLVocabulary(), pool: pool).root.subtree)
        } catch {
            return .error(error)
        }
    }

    static func utf8(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A document of `count` elements with values and text, about 60 bytes each.
    static func document(_ count: Int, label: String = "v") -> [UInt8] {
        var text = #"<r xmlns="urn:r" xmlns:p="urn:p">"#
        for i in 0..<count { text += "\n  <p:e n=\"\(label)\(i)\" m='x&amp;y'>text \(i) &lt; \(label)</p:e>" }
        return utf8(text + "\n</r>")
    }

    @Test("documents of every size, encoding and outcome, one context after the other, each parsed as on a fresh one")
    func inputBufferReuse() {
        let units: [UInt8] = Array(#"<a xmlns="urn:a">é<b c="ü"/></a>"#.utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let utf16: [UInt8] = [0xFF, 0xFE] + units
        let latin1: [UInt8] = Self.utf8(#"<?xml version="1.0" encoding="ISO-8859-1"?><a>"#) + [0xE9] + Self.utf8("</a>")
        let documents: [[UInt8]] = [
            Self.document(40),
            Self.utf8("<a/>"),  // far shorter than the last: none of its bytes may be read
            Self.utf8("<a>"),  // truncated
            Self.document(3),
            Self.document(2_000),  // larger than the buffer a context keeps
            Self.utf8(#"<r xmlns="urn:r"><e>"#),
            utf16,
            Self.document(5, label: "w"),
            latin1,
            Self.utf8("<a><b></a>"),  // not well-formed
            Self.utf8("<a/>"),
            Self.utf8("\u{FEFF}<a>bom</a>"),
            Self.utf8(#"<?xml version="1.0" encoding="UTF-8"?><a>declared</a>"#),
            Self.utf8("<!DOCTYPE a><a/>"),
            Self.document(1),
        ]
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 1))
        for round in 0..<3 {
            for (i, bytes) in documents.enumerated() {
                let fresh = Self.outcome(bytes, XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 0)))
                #expect(Self.outcome(bytes, pool) == fresh, "round \(round), document \(i)")
            }
        }
    }

    @Test("a prefix of the last document, on the same context, ends where its own bytes end")
    func prefixesOfTheLastDocument() {
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 1))
        let full = Self.document(30)
        for cut in stride(from: full.count, to: 0, by: -97) {
            let bytes = Array(full[..<cut])
            let fresh = Self.outcome(bytes, XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 0)))
            #expect(Self.outcome(full, pool) == Self.outcome(full, XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 0))))
            #expect(Self.outcome(bytes, pool) == fresh, "cut at \(cut)")
        }
    }

    @Test("recordings and detached subtrees held while later ones are made and freed keep their content")
    func heldRecordings() throws {
        var held: [(XMLEvents, XMLElement)] = []
        var detached: [(XMLCursor, XMLElement)] = []
        for i in 0..<30 {
            let count = [1, 200, 3, 1_500, 40][i % 5]
            let events = try XMLParser.events(Self.document(count, label: "h\(i)-"))
            let tree = events.root.subtree
            if i % 3 == 0 { held.append((events, tree)) }
            var child = events.root.children.makeIterator()
            if i % 2 == 0, let first = child.next() {
                let d = first.detached
                detached.append((d, d.subtree))
            }
            // A recording made and freed at once, from a different document.
            _ = try XMLParser.events(Self.document(count / 2 + 1, label: "x"))
        }
        for (events, tree) in held { #expect(events.root.subtree == tree) }
        for (cursor, tree) in detached { #expect(cursor.subtree == tree) }
    }

    @Test("threads parsing at once each read their own recordings")
    func concurrentThreads() async {
        await withTaskGroup(of: Bool.self) { group in
            for t in 0..<8 {
                group.addTask {
                    var ok = true
                    for i in 0..<100 {
                        let bytes = Self.document((t * 13 + i * 7) % 90, label: "t\(t)-\(i)-")
                        guard let events = try? XMLParser.events(bytes), let again = try? XMLParser.parse(bytes) else { return false }
                        let d = events.root.detached
                        ok = ok && events.root.subtree == again && d.subtree == again
                    }
                    return ok
                }
            }
            for await ok in group { #expect(ok) }
        }
    }

    @Test("threads that end free the recording storage they keep")
    func threadsEnding() throws {
        let done = DispatchSemaphore(value: 0)
        for n in 0..<4 {
            Thread {
                _ = try? XMLParser.events(Self.document(10 + n))
                done.signal()
            }.start()
        }
        for _ in 0..<4 { done.wait() }
        usleep(50_000)
        #expect(try XMLParser.events(Self.document(2)).root.subtree == XMLParser.parse(Self.document(2)))
    }
}
