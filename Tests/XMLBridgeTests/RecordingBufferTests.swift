import Testing
@testable import XMLBridge

/// `RecordingBuffer` (the event recorder's growable storage) against an
/// `Array` doing the same operations: appends of single values and of runs,
/// in-place writes, pops, emptying for reuse, growth from a tiny capacity, and the exact-size copy.
@Suite struct RecordingBufferTests {
    @Test func randomOperationsMatchAnArray() {
        var random = Random(state: 42)
        for round in 0..<200 {
            var buffer = RecordingBuffer<UInt8>(capacity: random.below(6))
            var reference: [UInt8] = []
            for _ in 0..<random.below(400) {
                switch random.below(10) {
                case 0...3:
                    let value = UInt8(truncatingIfNeeded: random.next())
                    buffer.append(value)
                    reference.append(value)
                case 4...5:
                    let run = (0..<random.below(40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                    run.withUnsafeBufferPointer { buffer.append($0) }
                    reference += run
                case 6:
                    let popped = buffer.popLast()
                    #expect(popped == reference.popLast())
                case 7 where !reference.isEmpty:
                    let i = random.below(reference.count)
                    let value = UInt8(truncatingIfNeeded: random.next())
                    buffer[i] = value
                    reference[i] = value
                case 8 where !reference.isEmpty:
                    let i = random.below(reference.count)
                    buffer[i] &+= 1
                    reference[i] &+= 1
                default:
                    break
                }
                let count = buffer.count, isEmpty = buffer.isEmpty
                #expect(count == reference.count)
                #expect(isEmpty == reference.isEmpty)
            }
            let copied = buffer.array
            #expect(copied == reference, "round \(round)")
            #expect(copied.capacity >= copied.count)
            var differing: Int?
            for i in reference.indices where buffer[i] != reference[i] {
                differing = i
                break
            }
            #expect(differing == nil, "round \(round)")
        }
    }

    @Test func structElementsAreWrittenInPlace() {
        var nodes = RecordingBuffer<XMLEvents.Node>(capacity: 1)
        for i in 0..<100 {
            nodes.append(XMLEvents.Node(
                end: Int32(i), name: 0, prefix: -1, line: 0, column: 0, attributeStart: 0, attributeCount: 0,
                declarationStart: 0, declarationCount: 0, textStart: 0, textCount: 0))
        }
        for i in 0..<100 { nodes[i].textCount += Int32(i) }
        let array = nodes.array
        #expect(array.count == 100)
        #expect(array.enumerated().allSatisfy { $0.element.end == Int32($0.offset) && $0.element.textCount == Int32($0.offset) })
    }

    /// The memory comes from `malloc`/`realloc`: values of 16-byte alignment stay aligned and
    /// keep their values as the buffer grows (moved by `realloc`) and is replaced.
    @Test func sixteenByteAlignedElementsSurviveGrowth() {
        var buffer = RecordingBuffer<SIMD4<Float>>(capacity: 1)
        var reference: [SIMD4<Float>] = []
        for i in 0..<3000 {
            let value = SIMD4<Float>(Float(i), Float(i * 2), Float(-i), 0.5)
            buffer.append(value)
            reference.append(value)
            let address = UInt(bitPattern: buffer.buffer.baseAddress)
            #expect(address % 16 == 0)
        }
        #expect(buffer.array == reference)
    }

    @Test func emptyBufferCopiesToAnEmptyArray() {
        var buffer = RecordingBuffer<Int32>(capacity: 0)
        let array = buffer.array
        #expect(array.isEmpty)
        let popped = buffer.popLast()
        #expect(popped == nil)
        buffer.append(UnsafeBufferPointer<Int32>(start: nil, count: 0))
        let isEmpty = buffer.isEmpty
        #expect(isEmpty)
    }
}

/// `XMLEvents` keeps nodes, attributes, declarations and bytes in one
/// allocation (`FixedRun`s at offsets in it): random parts of random sizes,
/// empty ones included, read back as the arrays they were made from.
@Suite struct XMLEventsStorageTests {
    @Test func partsReadBackAsTheArraysTheyWereMadeFrom() {
        var random = Random(state: 7)
        for round in 0..<300 {
            // Sizes of 0 for any part, and odd byte counts before nothing else.
            let nodes = (0..<random.below(4) * random.below(30)).map { _ in
                XMLEvents.Node(
                    end: random.int32(), name: random.int32(), prefix: random.int32(), line: random.int32(),
                    column: random.int32(), attributeStart: random.int32(), attributeCount: random.int32(),
                    declarationStart: random.int32(), declarationCount: random.int32(), textStart: random.int32(),
                    textCount: random.int32())
            }
            let attributes = (0..<random.below(3) * random.below(20)).map { _ in
                XMLEvents.Attribute(name: random.int32(), prefix: random.int32(), valueStart: random.int32(), valueCount: random.int32())
            }
            let declarations = (0..<random.below(3) * random.below(5)).map { _ in
                XMLEvents.Declaration(prefix: random.int32(), uri: random.int32())
            }
            let bytes = (0..<random.below(3) * random.below(300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let events = XMLEvents.copying(
                nodes: nodes, names: [XMLName("", "")], prefixes: [], attributes: attributes,
                declarations: declarations, uris: [], bytes: bytes)
            #expect(events.nodes.count == nodes.count, "round \(round)")
            #expect(events.attributes.count == attributes.count, "round \(round)")
            #expect(events.declarations.count == declarations.count, "round \(round)")
            #expect(events.bytes.count == bytes.count, "round \(round)")
            for i in nodes.indices {
                let a = events.nodes[i], b = nodes[i]
                #expect(
                    a.end == b.end && a.name == b.name && a.prefix == b.prefix && a.line == b.line && a.column == b.column
                        && a.attributeStart == b.attributeStart && a.attributeCount == b.attributeCount
                        && a.declarationStart == b.declarationStart && a.declarationCount == b.declarationCount
                        && a.textStart == b.textStart && a.textCount == b.textCount, "round \(round) node \(i)")
            }
            for i in attributes.indices {
                let a = events.attributes[i], b = attributes[i]
                #expect(a.name == b.name && a.prefix == b.prefix && a.valueStart == b.valueStart && a.valueCount == b.valueCount)
            }
            for i in declarations.indices {
                #expect(events.declarations[i].prefix == declarations[i].prefix && events.declarations[i].uri == declarations[i].uri)
            }
            #expect(Array(events.bytes[0..<bytes.count]) == bytes, "round \(round)")
            #expect(events.bytes.withUnsafeBufferPointer { Array($0) } == bytes, "round \(round)")
            if !bytes.isEmpty {
                let lower = random.below(bytes.count), upper = lower + random.below(bytes.count - lower + 1)
                #expect(Array(events.bytes[lower..<upper]) == Array(bytes[lower..<upper]), "round \(round)")
            }
        }
    }
}
