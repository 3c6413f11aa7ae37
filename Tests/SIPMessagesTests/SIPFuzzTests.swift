import SIPMessages
import Testing

/// SplitMix64: a small seeded PRNG so the mutations are the same on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Fuzz entry point")
struct SIPFuzzTests {
    static let interesting: [UInt8] = Array("\r\n \t:;,<>\"\\%@?=/[]*0123456789zSIP".utf8) + [0x00, 0x7F, 0xC3, 0xFF]

    static func mutate(_ input: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var bytes = input
        let rounds = Int.random(in: 1...8, using: &rng)
        for _ in 0..<rounds {
            if bytes.isEmpty { bytes.append(interesting.randomElement(using: &rng) ?? 0x20); continue }
            let at = Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0..<7, using: &rng) {
            case 0: bytes[at] = UInt8.random(in: 0...255, using: &rng)
            case 1: bytes[at] = interesting.randomElement(using: &rng) ?? 0
            case 2: bytes.insert(interesting.randomElement(using: &rng) ?? 0, at: at)
            case 3: bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...16, using: &rng)))
            case 4:
                let end = min(bytes.count, at + Int.random(in: 1...64, using: &rng))
                bytes.insert(contentsOf: bytes[at..<end], at: Int.random(in: 0...bytes.count, using: &rng))
            case 5: bytes.removeSubrange(at...)
            default:
                // Change a digit run (lengths, CSeq, ports) to something large or negative.
                bytes.insert(contentsOf: Array((["9999999999", "-1", "0", "65536"].randomElement(using: &rng) ?? "0").utf8), at: at)
            }
        }
        return bytes
    }

    @Test func fuzzEntryIsStableOnEveryRFC4475Message() {
        var stable = 0
        for row in Vectors.manifest {
            let outcome = fuzzSIPMessage(Vectors.rfc4475(row.file))
            if case .unstable(let why) = outcome { Issue.record("\(row.file): \(why)") }
            if outcome == .stable { stable += 1 }
        }
        #expect(stable == Vectors.manifest.filter { $0.expected == "parse-ok" }.count)
    }

    @Test func fuzzEntryNeverTrapsOrDriftsOnTwoThousandSeededMutations() {
        var rng = SplitMix64(state: 4475)
        let seeds = Vectors.manifest.map { Vectors.rfc4475($0.file) }
        var counts: [String: Int] = [:]
        for i in 0..<2000 {
            let seed = seeds[i % seeds.count]
            let input = Self.mutate(seed, &rng)
            switch fuzzSIPMessage(input) {
            case .unstable(let why):
                Issue.record("mutation \(i) of \(Vectors.manifest[i % seeds.count].file): \(why)\n\(String(decoding: input, as: UTF8.self).debugDescription)")
            case .stable: counts["stable", default: 0] += 1
            case .rejected(let code): counts[code.rawValue, default: 0] += 1
            }
        }
        // Both paths are exercised.
        #expect(counts["stable", default: 0] > 100)
        #expect(counts.count > 5)
    }

    @Test func fuzzEntryHandlesDegenerateInputs() {
        #expect(fuzzSIPMessage([]) == .rejected(.emptyMessage))
        #expect(fuzzSIPMessage(Array(repeating: 0x0A, count: 10)) == .rejected(.emptyMessage))
        #expect(fuzzSIPMessage(Array(repeating: 0x41, count: 70_000)) == .rejected(.messageTooLarge))
        if case .rejected = fuzzSIPMessage(Array(repeating: 0x41, count: 9_000)) {} else { Issue.record("long line accepted") }
    }
}
