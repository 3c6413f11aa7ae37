import Foundation
import Testing
import XMLBridge

/// Writers one after another, inside one another and on several threads: each document is
/// written as if alone, whatever size the one before it had.
@Suite struct XMLStreamWriterSequenceTests {
    /// A document of `count` elements, each with an attribute and text, nested `depth` deep.
    static func document(_ label: String, count: Int, depth: Int, textBytes: Int = 3) -> [UInt8] {
        var w = XMLStreamWriter(namespaces: .none)
        w.startElement("urn:test", "root", prefix: "t")
        for d in 0..<depth { w.startElement("urn:test:\(d)", "level", prefix: "p\(d)") }
        for i in 0..<count {
            w.startElement("urn:test", "item", prefix: "t", indentsChildren: false)
            w.attribute("n", "\(label)\(i)")
            w.text(String(repeating: "x", count: textBytes))
            w.endElement()
        }
        return w.finish()
    }

    /// The same document spelled out.
    static func expected(_ label: String, count: Int, depth: Int, textBytes: Int = 3) -> [UInt8] {
        func line(_ level: Int, _ text: String) -> String { String(repeating: "  ", count: level) + text + "\n" }
        var s = #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
        if count == 0 && depth == 0 { return Array((s + #"<t:root xmlns:t="urn:test"/>"# + "\n").utf8) }
        s += line(0, #"<t:root xmlns:t="urn:test">"#)
        for d in 0..<depth {
            let open = #"<p\#(d):level xmlns:p\#(d)="urn:test:\#(d)""#
            s += line(d + 1, count == 0 && d == depth - 1 ? open + "/>" : open + ">")
        }
        for i in 0..<count {
            s += line(depth + 1, #"<t:item n="\#(label)\#(i)">"# + String(repeating: "x", count: textBytes) + "</t:item>")
        }
        for d in (0..<depth).reversed() where !(count == 0 && d == depth - 1) { s += line(d + 1, "</p\(d):level>") }
        s += "</t:root>\n"
        return Array(s.utf8)
    }

    @Test("documents of every size, one after the other, each written as if alone")
    func reusedBuffersDoNotLeak() {
        // Small, then large, then small again.
        for (count, depth, text) in [(1, 0, 3), (40, 20, 3), (2, 1, 0), (3000, 40, 30), (1, 0, 3), (5, 300, 1), (0, 0, 0)] {
            #expect(Self.document("a", count: count, depth: depth, textBytes: text)
                == Self.expected("a", count: count, depth: depth, textBytes: text))
        }
    }

    @Test("a writer made and finished inside another")
    func nestedWriters() {
        var outer = XMLStreamWriter()
        outer.startElement("urn:test", "outer", prefix: nil)
        let inner = Self.document("in", count: 10, depth: 2)
        outer.attribute("inner", String(decoding: inner, as: UTF8.self))
        outer.endElement()
        let bytes = outer.finish()
        #expect(inner == Self.expected("in", count: 10, depth: 2))
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix(#"<?xml version="1.0" encoding="UTF-8"?>"# + "\n<outer xmlns=\"urn:test\" inner=\"&lt;?xml"))
        #expect(Self.document("b", count: 3, depth: 1) == Self.expected("b", count: 3, depth: 1))
    }

    @Test("threads writing at once each get their own output")
    func concurrentThreads() async {
        await withTaskGroup(of: Bool.self) { group in
            for t in 0..<8 {
                group.addTask {
                    var ok = true
                    for i in 0..<200 {
                        let count = (t * 7 + i) % 50, depth = i % 9
                        ok = ok && Self.document("t\(t)-", count: count, depth: depth) == Self.expected("t\(t)-", count: count, depth: depth)
                    }
                    return ok
                }
            }
            for await ok in group { #expect(ok) }
        }
    }

    @Test("threads that end free the set they keep")
    func threadsEnding() {
        // Each thread keeps a set when its writer finishes, freed as the thread ends (after
        // the semaphore is signalled: waited for a little, then the threads are gone).
        let done = DispatchSemaphore(value: 0)
        for n in 0..<4 {
            Thread {
                _ = Self.document("x\(n)", count: 5, depth: 1)
                done.signal()
            }.start()
        }
        for _ in 0..<4 { done.wait() }
        usleep(50_000)
        #expect(Self.document("y", count: 2, depth: 0) == Self.expected("y", count: 2, depth: 0))
    }
}
