import Testing
@testable import XMLBridge

/// `XMLByteSink` (the writer's output buffer) against an array doing the
/// same appends: runs of every length around the small-copy sizes (1-16
/// bytes, copied with overlapping loads and stores) and longer ones, single
/// bytes, and growth from a tiny capacity.
@Suite struct XMLByteSinkTests {
    @Test func randomAppendsMatchAnArray() {
        var state: UInt64 = 11
        func next() -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(truncatingIfNeeded: state >> 33)
        }
        for _ in 0..<300 {
            var sink = XMLByteSink(capacity: 1 + next() % 8)
            var reference: [UInt8] = []
            for _ in 0..<(next() % 60) {
                if next() % 5 == 0 {
                    let byte = UInt8(truncatingIfNeeded: next())
                    sink.append(byte)
                    reference.append(byte)
                } else {
                    let run = (0..<(next() % 40)).map { _ in UInt8(truncatingIfNeeded: next()) }
                    run.withUnsafeBufferPointer { sink.append($0) }
                    reference += run
                }
            }
            let count = sink.count
            #expect(count == reference.count)
            #expect(sink.array == reference)
        }
    }

    @Test func everySmallLengthIsCopiedExactly() {
        let source = (0..<40).map { UInt8($0 + 1) }
        for length in 0...20 {
            for offset in 0..<4 {
                var sink = XMLByteSink(capacity: 16)
                sink.append(0xAA)
                source.withUnsafeBufferPointer { sink.append(UnsafeBufferPointer(rebasing: $0[offset..<(offset + length)])) }
                sink.append(0xBB)
                #expect(sink.array == [0xAA] + source[offset..<(offset + length)] + [0xBB])
            }
        }
    }
}
