import Testing
@testable import XMLBridge

/// Parser contexts are reused between parses (libxml2 `xmlCtxtReadMemory`),
/// with their dictionary and the names already converted. Reuse must never
/// change a result: a parse after a failed one is clean, errors keep their
/// positions, names from an earlier document never leak into a later one,
/// and the bounds on what a context keeps (dictionary size, uses, name table)
/// retire it.
@Suite struct XMLParserContextPoolTests {
    private func events(_ text: String, _ pool: XMLParserContextPool) throws(XMLError) -> XMLEvents {
        try XMLParser.events(Array(text.utf8), limits: XMLLimits(), vocabulary: XMLVocabulary(), pool: pool)
    }

    private func error(_ text: String, _ pool: XMLParserContextPool) -> XMLError? {
        do {
            _ = try events(text, pool)
            return nil
        } catch {
            return error
        }
    }

    @Test func secondParseReusesTheContextOfTheFirst() throws {
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 1))
        _ = try events(#"<a xmlns="urn:one"><b/></a>"#, pool)
        _ = try events(#"<a xmlns="urn:one"><b/></a>"#, pool)
        let s = pool.statistics
        #expect(s.created == 1 && s.reused == 1 && s.discarded == 0 && s.idle == 1)
    }

    /// A reused context records into the recorder its last parse emptied:
    /// nothing of that document (nodes, attributes, declarations, text, an
    /// open element) may show in the next, whatever their sizes, and a
    /// recorder grown past what a context keeps is dropped without effect.
    @Test func reusedRecorderRecordsEachDocumentAsAFreshOneDoes() throws {
        var state: UInt64 = 7
        func below(_ n: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(n))
        }
        func document() -> String {
            var text = #"<r xmlns="urn:r" xmlns:p="urn:p" a="1">"#
            for i in 0..<below(below(10) == 0 ? 3_000 : 40) {
                let name = ["a", "p:b", "c"][below(3)]
                let attributes = (0..<below(4)).map { j in #" x\#(j)="\#(String(repeating: "v", count: below(30)))&amp;""# }
                text += "\n  <\(name)\(attributes.joined())>\(String(repeating: "t", count: below(50)))\(i)</\(name)>"
            }
            return text + "\n</r>"
        }
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 1))
        for round in 0..<40 {
            let text = document()
            let reused = try events(text, pool)
            let fresh = try events(text, XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 0)))
            #expect(Self.dump(reused) == Self.dump(fresh), "round \(round)")
        }
        #expect(pool.statistics.created == 1)
    }

    /// Everything a recording holds, names and prefixes spelled out (their
    /// table indices depend on what the context parsed before).
    private static func dump(_ e: XMLEvents) -> [String] {
        var lines: [String] = []
        for i in 0..<e.nodes.count {
            var n = e.nodes[i]
            let name = e.names[Int(n.name)], prefix = e.prefix(n.prefix)
            n.name = 0
            n.prefix = 0
            lines.append("\(name) \(prefix ?? "-") \(n)")
        }
        for i in 0..<e.attributes.count {
            var a = e.attributes[i]
            let name = e.names[Int(a.name)], prefix = e.prefix(a.prefix)
            a.name = 0
            a.prefix = 0
            lines.append("\(name) \(prefix ?? "-") \(a)")
        }
        for i in 0..<e.declarations.count {
            let d = e.declarations[i]
            lines.append("xmlns \(e.prefix(d.prefix) ?? "-") \(e.uris[Int(d.uri)])")
        }
        lines.append(e.bytes.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) })
        return lines
    }

    @Test func namesOfAnEarlierDocumentDoNotLeakIntoTheNext() throws {
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 1))
        _ = try events(#"<a xmlns="urn:one" xmlns:p="urn:p"><b p:x="1"/></a>"#, pool)
        // Same local names in other namespaces, one prefix bound elsewhere, and new names.
        let root = try events(#"<b xmlns="urn:two" xmlns:p="urn:q"><a p:x="2"/><c/></b>"#, pool).root
        #expect(pool.statistics.reused == 1)
        #expect(root.name == XMLName("urn:two", "b"))
        #expect(root.elements.map(\.name) == [XMLName("urn:two", "a"), XMLName("urn:two", "c")])
        let a = try #require(root.element(XMLName("urn:two", "a")))
        #expect(a.attribute(XMLName("urn:q", "x")) == "2")
        #expect(a.attribute(XMLName("urn:p", "x")) == nil)
        #expect(a.prefix == nil)
        #expect(root.subtree.namespaceDeclarations.map(\.uri) == ["urn:two", "urn:q"])
    }

    /// A parse that stops inside `xmlns:p` scope must not let `p:` resolve
    /// in the next document (Namespaces in XML 1.0 §5: an undeclared prefix
    /// is an error); libxml2 2.9's `xmlCtxtReset` does not list its namespace
    /// stack among what it resets, so the failed context is retired.
    @Test func failedParseInsideANamespaceScopeThenGoodParseIsClean() throws {
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 1))
        _ = try events("<warm/>", pool)
        let failed = error("<a xmlns:p=\"urn:stale\">\n<p:b></c></a>", pool)
        #expect(failed?.code == .notWellFormed)
        #expect(failed?.line == 2)
        #expect(pool.statistics.discarded == 1)
        // The undeclared prefix is still an error in the next document ...
        let undeclared = error("<p:b/>", pool)
        #expect(undeclared?.code == .notWellFormed)
        #expect(undeclared?.line == 1)
        // ... and a well-formed document parses as itself.
        let root = try events(#"<q:b xmlns:q="urn:fresh">x</q:b>"#, pool).root
        #expect(root.name == XMLName("urn:fresh", "b"))
        #expect(root.text == "x")
    }

    @Test func errorsOnAReusedContextCarryLineAndColumn() throws {
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 1))
        _ = try events("<a><b/></a>", pool)
        let e = try #require(error("<a>\n  <b></c></a>", pool))
        #expect(pool.statistics.reused == 1)
        #expect(e.code == .notWellFormed)
        #expect(e.line == 2)
        #expect(e.column > 0)
    }

    @Test func doctypeIsRefusedOnAReusedContextAndTheNextParseIsClean() throws {
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 1))
        _ = try events("<a/>", pool)
        let e = error("<!DOCTYPE a [<!ENTITY x \"boom\">]>\n<a>&x;</a>", pool)
        #expect(e?.code == .doctypeForbidden)
        #expect(e?.line == 1)
        let root = try events("<a>&amp;</a>", pool).root
        #expect(root.text == "&")
    }

    @Test func contextWhoseDictionaryPassesTheBoundIsRetired() throws {
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 1, maxDictionaryEntries: 40))
        _ = try events("<a><b/></a>", pool)
        #expect(pool.statistics.idle == 1)
        // 60 distinct element names: the dictionary ends past 40 entries.
        let many = "<r>" + (0..<60).map { "<e\($0)/>" }.joined() + "</r>"
        let root = try events(many, pool).root
        #expect(root.elements.map(\.name.local).last == "e59")
        var s = pool.statistics
        #expect(s.reused == 1 && s.discarded == 1 && s.idle == 0)
        // The next parse gets a fresh context, which is kept again.
        _ = try events("<a><b/></a>", pool)
        s = pool.statistics
        #expect(s.created == 2 && s.idle == 1)
    }

    @Test func contextIsRetiredAfterMaxUses() throws {
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 1, maxUses: 3))
        for _ in 0..<5 { _ = try events("<a/>", pool) }
        let s = pool.statistics
        #expect(s.created == 2 && s.reused == 3 && s.discarded == 1 && s.idle == 1)
    }

    @Test func nameTablePastItsBoundStillRecordsEveryNameAndRetiresTheContext() throws {
        let pool = XMLParserContextPool(
            limits: XMLParserPoolLimits(maxIdleContexts: 1, maxDictionaryEntries: 1_000_000))
        let count = InternTable.maxSlots
        let many = "<r>" + (0..<count).map { "<e\($0) a\($0)=\"\($0)\"/>" }.joined() + "</r>"
        let root = try events(many, pool).root
        let last = try #require(root.elements.map { $0 }.last)
        #expect(last.name.local == "e\(count - 1)")
        #expect(last[attribute: "a\(count - 1)"] == "\(count - 1)")
        #expect(pool.statistics.discarded == 1)
    }

    @Test func recordingsShareTheirContextsTablesUntilANewNameIsMet() throws {
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 1))
        let first = try events(#"<a xmlns="urn:x" p:b="1" xmlns:p="urn:p"><c/></a>"#, pool)
        let second = try events(#"<a xmlns="urn:x"><c/></a>"#, pool)
        #expect(first.tables === second.tables)
        // A new name, prefix or URI gives the next recording tables of its own; the earlier ones still read theirs.
        let third = try events(#"<a xmlns="urn:x"><d/></a>"#, pool)
        let fourth = try events(#"<q:a xmlns:q="urn:x"/>"#, pool)
        let fifth = try events(#"<a xmlns="urn:y"/>"#, pool)
        #expect(third.tables !== second.tables && fourth.tables !== third.tables && fifth.tables !== fourth.tables)
        #expect(first.root.name == XMLName("urn:x", "a") && first.root.elements.map(\.name) == [XMLName("urn:x", "c")])
        #expect(first.root.attribute(XMLName("urn:p", "b")) == "1")
        #expect(third.root.elements.map(\.name) == [XMLName("urn:x", "d")])
        #expect(fourth.root.name == XMLName("urn:x", "a") && fourth.root.prefix == "q")
        #expect(fifth.root.name == XMLName("urn:y", "a"))
        #expect(try events(#"<a xmlns="urn:y"/>"#, pool).tables === fifth.tables)
    }

    @Test func fullPoolFreesTheExtraContext() throws {
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 0))
        _ = try events("<a/>", pool)
        _ = try events("<a/>", pool)
        let s = pool.statistics
        #expect(s.created == 2 && s.reused == 0 && s.discarded == 2 && s.idle == 0)
    }

    @Test func vocabularyInstancesAreUsedAfterAParseWithoutTheVocabulary() throws {
        let pool = XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 1))
        let uri = "urn:example:vocabulary:namespace"
        let text = Array(#"<a xmlns="urn:example:vocabulary:namespace"/>"#.utf8)
        _ = try XMLParser.events(text, limits: XMLLimits(), vocabulary: XMLVocabulary(), pool: pool)
        let root = try XMLParser.events(
            text, limits: XMLLimits(), vocabulary: XMLVocabulary(namespaces: [uri]), pool: pool).root
        #expect(root.name == XMLName(uri, "a"))
    }
}

/// The parser reads UTF-8 in place and lets libxml2 transcode anything else
/// (XML 1.0 §4.3.3 and Appendix F: a byte order mark or the `encoding`
/// declaration names the encoding).
@Suite struct XMLParserEncodingTests {
    private static let text = "caf\u{E9} \u{263A}"

    @Test func utf8DeclaredInAnyCaseIsReadAsIs() throws {
        for name in ["UTF-8", "utf-8"] {
            let root = try XMLParser.events(Array("<?xml version=\"1.0\" encoding=\"\(name)\"?><a>\(Self.text)</a>".utf8)).root
            #expect(root.text == Self.text)
        }
    }

    @Test func utf8ByteOrderMarkIsSkipped() throws {
        let root = try XMLParser.events([0xEF, 0xBB, 0xBF] + Array("<a>\(Self.text)</a>".utf8)).root
        #expect(root.text == Self.text)
    }

    @Test func latin1DeclaredDocumentIsTranscodedThroughItsLastByte() throws {
        // Longer than libxml2's first conversion step, so the whole input must be transcoded.
        let filler = String(repeating: "x", count: 9_000)
        var bytes = Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<a b=\"".utf8) + [0xE9]
        bytes += Array("\">\(filler)".utf8) + [0xE9] + Array("</a>".utf8)
        let root = try XMLParser.events(bytes).root
        #expect(root[attribute: "b"] == "\u{E9}")
        #expect(root.text == filler + "\u{E9}")
    }

    @Test func utf16WithByteOrderMarkIsTranscoded() throws {
        let source = "<a x=\"\(Self.text)\">" + String(repeating: "y", count: 5_000) + "\(Self.text)</a>"
        var bytes: [UInt8] = [0xFF, 0xFE]
        for unit in source.utf16 { bytes += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        let root = try XMLParser.events(bytes).root
        #expect(root[attribute: "x"] == Self.text)
        #expect(root.text.hasSuffix(Self.text))
        #expect(root.text.count == 5_000 + Self.text.count)
    }

    @Test func errorInATranscodedDocumentKeepsItsLine() throws {
        var bytes = Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n<a>".utf8) + [0xE9]
        bytes += Array("\n<b></c></a>".utf8)
        #expect(throws: XMLError.self) { try XMLParser.events(bytes) }
        do {
            _ = try XMLParser.events(bytes)
        } catch {
            #expect(error.code == .notWellFormed)
            #expect(error.line == 3)
        }
    }
}
