import Testing
import XMLBridge

/// The in-place reads of XMLCursor+Attributes.swift give what the reads that make values give.
@Suite struct XMLCursorAttributesTests {
    /// Attribute values in place: names, text and bytes as `forEachAttribute` gives them, and
    /// `plainUInt32` the number `UInt32(text)` reads whenever it gives one (nil only for forms
    /// other than plain digits), over random values of digits, signs, spaces and letters.
    @Test func attributeValuesReadAsTheirText() throws {
        var random = Random(state: 7)
        let pieces = ["0", "1", "7", "9", "5", "+", "-", " ", "\t", "a", "é", "00", "4294967295", "4294967296", "999999999"]
        for _ in 0..<400 {
            var attributes: [(String, String)] = []
            for i in 0..<random.below(5) {
                var value = ""
                for _ in 0..<random.below(6) { value += pieces[random.below(pieces.count)] }
                attributes.append(("a\(i)", value))
            }
            let text = "<r xmlns:p=\"urn:p\" p:q=\"9\"" + attributes.map { " \($0.0)=\"\($0.1)\"" }.joined() + "/>"
            let root = try XMLParser.events(Array(text.utf8)).root
            var expected: [(XMLName, String)] = []
            root.forEachAttribute { expected.append(($0, $1)) }
            var found: [(XMLName, String)] = []
            root.forEachAttributeValue { name, value in
                let text = root.string(value)
                found.append((name, text))
                #expect(root.withUTF8(value) { bytes in bytes.indices.map { bytes[$0] } } == Array(text.utf8))
                let reference = UInt32(text)
                if let plain = root.plainUInt32(value) {
                    #expect(plain == reference, "\(text)")
                } else {
                    let digitsOnly = !text.isEmpty && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
                    #expect(!(digitsOnly && text.utf8.count <= 9), "\(text)")
                }
            }
            #expect(found.map(\.0) == expected.map(\.0))
            #expect(found.map(\.1) == expected.map(\.1))
        }
    }

    /// `hasSameAttributes(as:)` holds exactly when two elements' attributes, as
    /// `forEachAttribute` gives them, have the same names in the same order and the same value
    /// bytes, over random siblings (one recording) and elements of two recordings, with names in
    /// and out of namespaces under different prefixes, and values of the same length.
    @Test func sameAttributesAsTheAttributeLists() throws {
        var random = Random(state: 29)
        let names = ["a", "b", "p:a", "q:a", "r:b", "render"]
        let values = ["1", "2", "é", "e\u{301}", "", "true", "ture", "3500"]
        func element() -> String {
            var seen = Set<String>()
            var text = "<e"
            for _ in 0..<random.below(4) {
                let name = names[random.below(names.count)]
                // p and q are one namespace: p:a and q:a are one name, written once.
                guard seen.insert(name == "q:a" ? "p:a" : name).inserted else { continue }
                text += " \(name)=\"\(values[random.below(values.count)])\""
            }
            return text + "/>"
        }
        func list(_ e: XMLCursor) -> [(XMLName, [UInt8])] {
            var found: [(XMLName, [UInt8])] = []
            e.forEachAttribute { found.append(($0, Array($1.utf8))) }
            return found
        }
        let root = #"<r xmlns:p="urn:p" xmlns:q="urn:p" xmlns:r="urn:r">"#
        for _ in 0..<300 {
            let one = try XMLParser.events(Array((root + (0..<6).map { _ in element() }.joined() + "</r>").utf8)).root
            let two = try XMLParser.events(Array((root + (0..<3).map { _ in element() }.joined() + "</r>").utf8)).root
            let elements = Array(one.elements) + Array(two.elements)
            for a in elements {
                for b in elements {
                    let expected = list(a).map(\.0) == list(b).map(\.0) && list(a).map(\.1) == list(b).map(\.1)
                    #expect(a.hasSameAttributes(as: b) == expected, "\(list(a)) \(list(b))")
                }
            }
        }
    }

    /// `forEachAttributeValue(in:)` gives each attribute's position in the table, the first
    /// entry equal to its name as `forEachAttribute` gives it (nil for none), and its value, and
    /// `allAttributes(in:)` tells whether all are there, over random attributes in and out of
    /// namespaces with names of the same length and prefix.
    @Test func attributePositionsInANameTable() throws {
        var random = Random(state: 17)
        let locals = ["a", "b", "ab", "ba", "abc", "type", "typo", "deviceAvailability", "deviceAvailabilitx"]
        let namespaces = ["", "urn:p", "urn:q"]
        for _ in 0..<400 {
            var entries: [XMLName] = []
            for _ in 0..<random.below(6) {
                entries.append(XMLName(namespaces[random.below(namespaces.count)], locals[random.below(locals.count)]))
            }
            let table = XMLNameTable(entries)
            var seen = Set<XMLName>()
            var attributes = ""
            for i in 0..<random.below(6) {
                let name = XMLName(namespaces[random.below(namespaces.count)], locals[random.below(locals.count)])
                guard seen.insert(name).inserted else { continue }
                let qualified = name.namespace == "urn:p" ? "p:" : name.namespace == "urn:q" ? "q:" : ""
                attributes += " \(qualified)\(name.local)=\"v\(i)\""
            }
            let root = try XMLParser.events(Array("<r xmlns:p=\"urn:p\" xmlns:q=\"urn:q\"\(attributes)/>".utf8)).root
            var expected: [(Int?, String)] = []
            root.forEachAttribute { name, value in expected.append((entries.firstIndex(of: name), value)) }
            var found: [(Int?, String)] = []
            root.forEachAttributeValue(in: table) { position, value in found.append((position, root.string(value))) }
            #expect(found.map(\.0) == expected.map(\.0), "\(entries) \(attributes)")
            #expect(found.map(\.1) == expected.map(\.1))
            #expect(root.allAttributes(in: table) == expected.allSatisfy { $0.0 != nil })
        }
        #expect(XMLNameTable(unqualified: ["x", "y"]).names == [XMLName("", "x"), XMLName("", "y")])
    }

    /// `position(in:)` is the first entry equal to the element's name (nil for none and for
    /// text), over random children in and out of namespaces and random tables.
    @Test func elementPositionsInANameTable() throws {
        var random = Random(state: 19)
        let locals = ["a", "b", "ab", "ba", "state", "stale", "meetingLocation", "meetingLocatioN"]
        let namespaces = ["", "urn:p", "urn:q"]
        for _ in 0..<300 {
            var entries: [XMLName] = []
            for _ in 0..<random.below(6) {
                entries.append(XMLName(namespaces[random.below(namespaces.count)], locals[random.below(locals.count)]))
            }
            let table = XMLNameTable(entries)
            var body = ""
            for _ in 0..<random.below(6) {
                let namespace = namespaces[random.below(namespaces.count)], local = locals[random.below(locals.count)]
                body += namespace.isEmpty ? "<\(local)/> t" : "<\(local) xmlns=\"\(namespace)\"/>"
            }
            let root = try XMLParser.events(Array("<r>\(body)</r>".utf8)).root
            #expect(root.position(in: table) == entries.firstIndex(of: XMLName("", "r")))
            for child in root.children {
                #expect(child.position(in: table) == (child.isText ? nil : entries.firstIndex(of: child.name)), "\(body)")
            }
        }
    }

    /// Names given as enum cases: each element and attribute is matched to the case named by its
    /// (namespace, local name), in the namespace given or through the naming closure.
    @Test func namesAsCases() throws {
        enum Local: String, CaseIterable { case a, placeIs = "place-is", b }
        enum Mixed: CaseIterable { case qA, plainB }
        let local = XMLNameCases<Local>(namespace: "urn:q")
        let mixed = XMLNameCases<Mixed> { $0 == .qA ? XMLName("urn:q", "a") : XMLName("", "b") }
        #expect(local.table.names == [XMLName("urn:q", "a"), XMLName("urn:q", "place-is"), XMLName("urn:q", "b")])
        let root = try XMLParser.events(Array(
            #"<r xmlns:q="urn:q" q:b="1" b="2" c="3"><q:a/>t<b/><q:place-is/><q:c/></r>"#.utf8)).root
        #expect(root.children.map { $0.match(in: local) } == [.a, nil, nil, .placeIs, nil])
        #expect(root.children.map { $0.match(in: mixed) } == [.qA, nil, .plainB, nil, nil])
        var found: [(Local?, Mixed?, String)] = []
        root.forEachAttributeValue(in: local) { attribute, value in found.append((attribute, nil, root.string(value))) }
        var index = 0
        root.forEachAttributeValue(in: mixed) { attribute, _ in found[index].1 = attribute; index += 1 }
        #expect(found.map(\.0) == [.b, nil, nil])
        #expect(found.map(\.1) == [nil, .plainB, nil])
        #expect(found.map(\.2) == ["1", "2", "3"])
    }

    /// Attribute values and text read from a recording are the strings recorded, over random
    /// texts of 0 to 40 characters of ASCII, two-, three- and four-byte UTF-8 (short ones are
    /// small strings, long ones are not).
    @Test func valuesAndTextReadAsRecorded() throws {
        var random = Random(state: 23)
        let pieces = ["a", "Z", "0", " ", "é", "ß", "€", "中", "😀", "e\u{301}", "<", "&", "\""]
        for _ in 0..<400 {
            var value = "", text = ""
            for _ in 0..<random.below(41) { value += pieces[random.below(pieces.count)] }
            for _ in 0..<random.below(41) { text += pieces[random.below(pieces.count)] }
            var element = XMLElement(XMLName("", "r"), attributes: [XMLAttribute(XMLName("", "v"), value)])
            if !text.isEmpty { element.children = [.text(text)] }
            let root = XMLEvents(replaying: element).root
            #expect(root[attribute: "v"] == value)
            var found: String?
            root.forEachAttributeValue { _, v in found = root.string(v) }
            #expect(found == value)
            #expect(root.text == text)
            #expect(root.trimmedText == text.trimmingXMLWhitespace())
        }
    }

    /// `soleElement` is the one child element when every other child is white-space text,
    /// as the children themselves say, over random mixes of elements, white space and text.
    @Test func soleElementIsTheOnlySignificantChild() throws {
        var random = Random(state: 11)
        let pieces = ["<a/>", "<b>x</b>", " ", "\n  ", "t", "<c><d/></c>", "<![CDATA[ ]]>", "<!-- c -->", "&#32;"]
        for _ in 0..<500 {
            var body = ""
            for _ in 0..<random.below(5) { body += pieces[random.below(pieces.count)] }
            let root = try XMLParser.events(Array("<r>\(body)</r>".utf8)).root
            let significant = root.children.filter { !($0.isText && $0.hasOnlyWhitespace) }
            let expected = significant.count == 1 && !significant[0].isText ? significant[0] : nil
            let found = root.soleElement
            #expect((found == nil) == (expected == nil), "\(body)")
            if let found, let expected {
                #expect(found.subtree == expected.subtree && found.line == expected.line && found.column == expected.column)
            }
            for child in root.children where child.isText { #expect(child.soleElement == nil) }
        }
    }

    /// `forEachElement` lends a cursor at each child element, the ones `elements` gives, in order.
    @Test func forEachElementVisitsTheElements() throws {
        var random = Random(state: 13)
        let pieces = ["<a/>", "<b>x<i/></b>", " ", "t", "<c><d/><e/></c>", "<![CDATA[x]]>", "<!-- c -->", "<?p i?>"]
        for _ in 0..<300 {
            var body = ""
            for _ in 0..<random.below(7) { body += pieces[random.below(pieces.count)] }
            let root = try XMLParser.events(Array("<r>\(body)</r>".utf8)).root
            for parent in [root] + Array(root.children) {
                var found: [XMLCursor] = []
                parent.forEachElement { found.append($0) }
                let expected = Array(parent.elements)
                #expect(found.count == expected.count, "\(body)")
                for (f, e) in zip(found, expected) {
                    #expect(f.subtree == e.subtree && f.line == e.line && f.column == e.column)
                }
            }
        }
    }
}
