import CXMLRecorder
import Testing
@testable import XMLBridge

/// The C half of the event recording (CXMLRecorder): its entry types lie as
/// their Swift twins in `XMLEvents`, its name table finds what a dictionary
/// finds, and its `&` test answers as a test of each byte.
@Suite struct CXMLRecorderTests {
    @Test func entryTypesHaveTheLayoutOfTheirSwiftTwins() {
        typealias N = XMLEvents.Node
        #expect(MemoryLayout<N>.size == MemoryLayout<pg_node>.size)
        #expect(MemoryLayout<N>.stride == MemoryLayout<pg_node>.stride)
        let nodeFields: [(PartialKeyPath<N>, PartialKeyPath<pg_node>)] = [
            (\N.end, \pg_node.end), (\N.name, \pg_node.name), (\N.prefix, \pg_node.prefix), (\N.line, \pg_node.line),
            (\N.column, \pg_node.column), (\N.attributeStart, \pg_node.attributeStart),
            (\N.attributeCount, \pg_node.attributeCount), (\N.declarationStart, \pg_node.declarationStart),
            (\N.declarationCount, \pg_node.declarationCount), (\N.textStart, \pg_node.textStart),
            (\N.textCount, \pg_node.textCount),
        ]
        for (swift, c) in nodeFields {
            #expect(MemoryLayout<N>.offset(of: swift) == MemoryLayout<pg_node>.offset(of: c))
        }
        typealias A = XMLEvents.Attribute
        #expect(MemoryLayout<A>.stride == MemoryLayout<pg_attribute>.stride)
        let attributeFields: [(PartialKeyPath<A>, PartialKeyPath<pg_attribute>)] = [
            (\A.name, \pg_attribute.name), (\A.prefix, \pg_attribute.prefix),
            (\A.valueStart, \pg_attribute.valueStart), (\A.valueCount, \pg_attribute.valueCount),
        ]
        for (swift, c) in attributeFields {
            #expect(MemoryLayout<A>.offset(of: swift) == MemoryLayout<pg_attribute>.offset(of: c))
        }
        typealias D = XMLEvents.Declaration
        #expect(MemoryLayout<D>.stride == MemoryLayout<pg_declaration>.stride)
        #expect(MemoryLayout<D>.offset(of: \D.prefix) == MemoryLayout<pg_declaration>.offset(of: \pg_declaration.prefix))
        #expect(MemoryLayout<D>.offset(of: \D.uri) == MemoryLayout<pg_declaration>.offset(of: \pg_declaration.uri))
    }

    /// Random (address, address) keys, many sharing an address, remembered
    /// and looked up against a dictionary, through growth up to the bound
    /// and past it (saturated: later keys are not remembered).
    @Test func internTableFindsWhatADictionaryFinds() {
        var random = Random(state: 5)
        var table = pg_intern()
        defer { pg_intern_clear(&table) }
        var reference: [[UInt]: Int32] = [:]
        let addresses = (0..<3_000).map { _ in UInt(random.next() % (1 << 40)) * 8 + 16 }
        func key(_ i: Int) -> UInt { addresses[i % addresses.count] }
        var id: Int32 = 0
        while reference.count < InternTable.maxSlots {
            let a = key(random.below(addresses.count)), b = random.below(4) == 0 ? 0 : key(random.below(addresses.count))
            let pa = UnsafeRawPointer(bitPattern: a)!, pb = UnsafeRawPointer(bitPattern: b)
            let found = pg_intern_lookup(&table, pa, pb)
            if let known = reference[[a, b]] {
                #expect(found == known)
                continue
            }
            #expect(found == -1)
            pg_intern_remember(&table, pa, pb, id)
            if !table.saturated { reference[[a, b]] = id }
            id += 1
            if reference.count % 1_000 == 0 {
                for (k, v) in reference {
                    #expect(pg_intern_lookup(&table, UnsafeRawPointer(bitPattern: k[0])!, UnsafeRawPointer(bitPattern: k[1])) == v)
                }
            }
            if table.saturated { break }
        }
        #expect(table.saturated)
        #expect(reference.count == InternTable.maxSlots * 3 / 4)
        for (k, v) in reference {
            #expect(pg_intern_lookup(&table, UnsafeRawPointer(bitPattern: k[0])!, UnsafeRawPointer(bitPattern: k[1])) == v)
        }
        pg_intern_clear(&table)
        #expect(!table.saturated && table.used == 0)
        let (k, _) = reference.first!
        #expect(pg_intern_lookup(&table, UnsafeRawPointer(bitPattern: k[0])!, UnsafeRawPointer(bitPattern: k[1])) == -1)
    }

    /// The word-at-a-time `&` test gives what a test of each byte gives, for
    /// every length up to 40 and a `&` (or a byte next to it in value) at any place.
    @Test func containsAmpersandMatchesAByteByByteTest() {
        var random = Random(state: 11)
        let alphabet: [UInt8] = [0x26, 0x25, 0x27, 0xA6, 0x00, 0xFF, 0x61, 0x23, 0x3B, 0x80, 0x7F, 0x01]
        func test(_ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBufferPointer { pg_contains_ampersand($0.baseAddress, $0.count) }
        }
        for length in 0...40 {
            for _ in 0..<200 {
                // Mostly bytes other than `&` (or'ed with 0x40), so that a single one at any place is common.
                let bytes = (0..<length).map { _ in
                    random.below(4) == 0 ? alphabet[random.below(alphabet.count)] : UInt8(truncatingIfNeeded: random.next()) | 0x40
                }
                #expect(test(bytes) == bytes.contains(0x26), "\(bytes)")
            }
            // Exactly one `&`, at each place in turn, among bytes next to it in value.
            for place in 0..<length {
                var bytes = [UInt8](repeating: 0x25, count: length)
                bytes[place] = 0x26
                #expect(test(bytes))
                bytes[place] = 0x27
                #expect(!test(bytes))
            }
        }
    }

    /// The short copy the start-tag callback makes of each value (1 to 32 bytes) copies every
    /// byte, touches nothing past them, and tells of a `&` as a test of each byte does; other
    /// lengths are refused (false, nothing written).
    @Test func shortCopyCopiesAndFindsAmpersands() {
        var random = Random(state: 17)
        let alphabet: [UInt8] = [0x26, 0x25, 0x27, 0xA6, 0x00, 0xFF, 0x61, 0x23, 0x3B, 0x80, 0x7F, 0x01]
        for length in 1...32 {
            for trial in 0..<200 {
                var bytes = (0..<length).map { _ in
                    random.below(4) == 0 ? alphabet[random.below(alphabet.count)] : UInt8(truncatingIfNeeded: random.next()) | 0x40
                }
                // Exactly one `&` at each place in turn, besides the random ones.
                if trial < length {
                    bytes = bytes.map { $0 == 0x26 ? 0x27 : $0 }
                    bytes[trial] = 0x26
                }
                var out = [UInt8](repeating: 0xEE, count: length + 2)
                let found = bytes.withUnsafeBufferPointer { from in
                    out.withUnsafeMutableBufferPointer { to in pg_copy_short(to.baseAddress! + 1, from.baseAddress, length) }
                }
                #expect(found == bytes.contains(0x26), "\(bytes)")
                #expect(Array(out[1...length]) == bytes)
                #expect(out[0] == 0xEE && out[length + 1] == 0xEE)
            }
        }
        var out = [UInt8](repeating: 0xEE, count: 40)
        let source = [UInt8](repeating: 0x26, count: 40)
        for length in [-1, 0, 33, 40] {
            let found = source.withUnsafeBufferPointer { from in
                out.withUnsafeMutableBufferPointer { to in pg_copy_short(to.baseAddress, from.baseAddress, length) }
            }
            #expect(!found)
        }
        #expect(out.allSatisfy { $0 == 0xEE })
    }

    /// Attribute values and texts of every length up to 40 (across the short copy's sizes and
    /// past them), with no `&` or one at each place, and a run of text split by references, read
    /// back as written.
    @Test func valuesAndTextsOfEveryLengthReadBack() throws {
        for length in 0...40 {
            for place in -1..<length {
                var value = String(repeating: "v", count: length)
                if place >= 0 {
                    value = String(repeating: "v", count: place) + "&" + String(repeating: "w", count: length - place - 1)
                }
                let escaped = value.map { $0 == "&" ? "&amp;" : String($0) }.joined()
                let events = try XMLParser.events(Array(#"<r a="\#(escaped)" b="\#(escaped)x">\#(escaped)<e/>\#(escaped)</r>"#.utf8))
                let root = events.root
                #expect(root[attribute: "a"] == value)
                #expect(root[attribute: "b"] == value + "x")
                #expect(root.children.filter(\.isText).map(\.text) == (length == 0 ? [] : [value, value]))
            }
        }
    }
}
