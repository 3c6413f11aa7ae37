import Testing
@testable import XMLBridge

/// `RecordingBuffer` (the event recorder's growable storage) against an
/// `Array` doing the same operations: appends of single values and of runs,
/// in-place writes, pops, growth from a tiny capacity, and the exact-size copy.
@Suite struct RecordingBufferTests {
    /// A small deterministic generator (SplitMix64), so a failure repeats.
    private struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

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
