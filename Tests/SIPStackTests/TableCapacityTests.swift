import Foundation
import NIOCore
import NIOEmbedded
import SIPStack
import Testing
import _GatewayInternals

/// A busy edge's tables grow with a burst (each answered UDP transaction is kept 64·T1, RFC 3261
/// §17.2.2) and must give that room back when the burst is over.
@Suite struct TableCapacityTests {
    @Test func sparseDictionaryShrinksAndKeepsEveryEntry() {
        var table: [Int: String] = [:]
        for key in 0..<20_000 { table[key] = "v\(key)" }
        let peak = table.capacity
        for key in 100..<20_000 { table[key] = nil }
        table.releaseSparseCapacity()
        #expect(table.capacity < peak / 8)
        #expect(table.count == 100)
        #expect((0..<100).allSatisfy { table[$0] == "v\($0)" })
    }

    @Test func dictionaryStillInUseOrSmallIsLeftAlone() {
        var busy: [Int: Int] = [:]
        for key in 0..<20_000 { busy[key] = key }
        for key in 0..<10_000 { busy[key] = nil }
        let capacity = busy.capacity
        busy.releaseSparseCapacity()
        #expect(busy.capacity == capacity)  // half full: no rebuild

        var small: [Int: Int] = [:]
        for key in 0..<600 { small[key] = key }
        for key in 0..<600 { small[key] = nil }
        let smallCapacity = small.capacity
        small.releaseSparseCapacity()
        #expect(small.capacity == smallCapacity)  // at or under the floor of 1,024
    }

    @Test func timerQueueDropsStaleEntriesAndStillFiresInDeadlineOrder() {
        let loop = EmbeddedEventLoop()
        let t0 = loop.now
        var queue = TimerQueue<Int>()
        // 1,000 owners at deadlines in scrambled order; the even ones stop.
        for owner in 0..<1_000 {
            queue.add(owner, at: t0 + .seconds(Int64((owner * 7_919) % 1_000 + 1)), on: loop) {}
        }
        queue.removeAll { _, owner in owner % 2 == 0 }
        #expect(queue.count == 500)
        let due = queue.due(now: t0 + .seconds(2_000))
        #expect(due.map(\.owner).allSatisfy { $0 % 2 == 1 })
        #expect(due.count == 500)
        #expect(zip(due, due.dropFirst()).allSatisfy { $0.deadline <= $1.deadline })
    }

    @Test func timerSlotKnowsWhichQueueEntryIsItsOwn() {
        let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var slot = TimerSlot()
        #expect(slot.schedule(at: t0 + .seconds(10)) == t0 + .seconds(10))
        #expect(slot.isQueued(at: t0 + .seconds(10)))
        // Moved later: the queued entry stays and stands for the slot.
        #expect(slot.schedule(at: t0 + .seconds(20)) == nil)
        #expect(slot.isQueued(at: t0 + .seconds(10)))
        #expect(!slot.isQueued(at: t0 + .seconds(20)))
        // When it comes up early it is queued again for the real deadline.
        #expect(slot.came(t0 + .seconds(10), now: t0 + .seconds(10)) == .requeue(at: t0 + .seconds(20)))
        #expect(slot.isQueued(at: t0 + .seconds(20)))
        #expect(slot.came(t0 + .seconds(20), now: t0 + .seconds(20)) == .fire)
    }
}

/// `SmallMap`: the maps a subscription holds for hours (usually one entry) without a hash table.
@Suite struct SmallMapTests {
    @Test func behavesAsADictionaryThroughEveryStorage() {
        var map: SmallMap<String, Int> = [:]
        var reference: [String: Int] = [:]
        #expect(map.isEmpty)
        // One entry inline, a few as pairs, past the limit a table, and back down again.
        for i in 0..<(SmallMap<String, Int>.arrayLimit + 4) {
            map["k\(i)"] = i
            reference["k\(i)"] = i
            #expect(map.count == reference.count)
            #expect(Dictionary(uniqueKeysWithValues: map.map { ($0.key, $0.value) }) == reference)
        }
        map["k0"] = 100
        reference["k0"] = 100
        for i in stride(from: SmallMap<String, Int>.arrayLimit + 3, through: 1, by: -1) {
            #expect(map.removeValue(forKey: "k\(i)") == i)
            reference["k\(i)"] = nil
            #expect(map.count == reference.count)
            #expect(Set(map.keys) == Set(reference.keys) && Set(map.values) == Set(reference.values))
        }
        #expect(map["k0"] == 100 && map["k1"] == nil)
        #expect(map.removeValue(forKey: "absent") == nil)
        map["k0"] = nil
        #expect(map.isEmpty && map.count == 0)
    }

    /// Equal with the same entries in any order, in every storage; unequal by one value or key.
    @Test func equalityIsByEntriesInEveryStorage() throws {
        for count in [1, 3, SmallMap<String, Int>.arrayLimit + 2] {
            var forward: SmallMap<String, Int> = [:]
            var backward: SmallMap<String, Int> = [:]
            for i in 0..<count { forward["k\(i)"] = i }
            for i in (0..<count).reversed() { backward["k\(i)"] = i }
            #expect(forward == backward, "\(count)")
            var changed = backward
            changed["k0"] = 99
            #expect(forward != changed, "\(count)")
            var renamed = backward
            renamed["k0"] = nil
            renamed["other"] = 0
            #expect(forward != renamed, "\(count)")
            var shorter = backward
            shorter["k0"] = nil
            #expect(forward != shorter && shorter != forward, "\(count)")
        }
    }

    /// Written as a dictionary, read back in the order of its keys.
    @Test func codedAsADictionary() throws {
        var map: SmallMap<String, Int> = [:]
        for key in ["c", "a", "b"] { map[key] = key.count }
        let data = try JSONEncoder().encode(map)
        #expect(try JSONDecoder().decode([String: Int].self, from: data) == ["a": 1, "b": 1, "c": 1])
        let back = try JSONDecoder().decode(SmallMap<String, Int>.self, from: data)
        #expect(back == map && back.keys == ["a", "b", "c"])
    }

    @Test func firstKeyFindsAKeyInEveryStorage() {
        var map: SmallMap<String, Int> = [:]
        #expect(map.firstKey { _ in true } == nil)
        for count in [1, 3, SmallMap<String, Int>.arrayLimit + 2] {
            for i in 0..<count { map["k\(i)"] = i }
            #expect(map.firstKey { $0 == "k\(count - 1)" } == "k\(count - 1)")
            #expect(map.firstKey { $0 == "absent" } == nil)
            #expect(map.firstKey { _ in true }.map { map[$0] != nil } == true)
        }
    }
}

/// `PackedTable`: the same answers as a dictionary under any mix of inserts, updates and
/// removals, with fewer buckets.
@Suite struct PackedTableTests {
    @Test func agreesWithADictionaryUnderRandomOperations() {
        var generator = SystemRandomNumberGenerator()
        var table = PackedTable<Int, Int>(filler: -1)
        var reference: [Int: Int] = [:]
        // Small key ranges force long probe runs, wrap-around and back-shifting on removal;
        // Int.min ... and -1 (all ones: the free-bucket pattern) are keys like any other.
        let keys = Array(0..<300) + [-1, Int.min, Int.max]
        for step in 0..<60_000 {
            let key = keys.randomElement(using: &generator)!
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<5:
                table[key] = step
                reference[key] = step
            case 5..<9:
                #expect(table.removeValue(forKey: key) == reference.removeValue(forKey: key))
            default:
                #expect(table[key] == reference[key])
            }
            #expect(table.count == reference.count)
        }
        for key in keys { #expect(table[key] == reference[key]) }
        #expect(Dictionary(uniqueKeysWithValues: table.entries.map { ($0.key, $0.value) }) == reference)
        #expect(table.first { $0.value == -7 } == nil)
        if let (key, value) = reference.first {
            #expect(table.first { $0.key == key }?.value == value)
        }
    }

    @Test func growsByHalfAndGivesBackRoomWhenEmptied() {
        var table = PackedTable<Int, Int>(filler: 0)
        for key in 0..<200_000 { table[key] = key }
        // 200,000 entries: a dictionary would hold 524,288 buckets.
        #expect(table.capacity < 200_000 * 2 && table.capacity >= 200_000 * 8 / 7)
        for key in 0..<200_000 { #expect(table[key] == key) }
        for key in 100..<200_000 { table[key] = nil }
        #expect(table.capacity < 1_000)
        for key in 0..<100 { #expect(table[key] == key) }
        for key in 0..<100 { table[key] = nil }
        #expect(table.isEmpty && table.capacity == 0)
    }
}
