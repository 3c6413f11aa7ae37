import NIOConcurrencyHelpers
import SIPTransport
import Testing

/// RFC 2782 "Usage rules": priority ascending, weighted random among equal priority.
@Suite struct SIPResolverSRVOrderingTests {
    /// Returns the given values in turn and records each upper bound asked for.
    final class Script: Sendable {
        let state: NIOLockedValueBox<(values: [Int], bounds: [Int])>
        init(_ values: [Int]) { state = NIOLockedValueBox((values, [])) }
        var source: SIPResolver.RandomSource {
            SIPResolver.RandomSource { bound in
                self.state.withLockedValue { state in
                    state.bounds.append(bound)
                    return state.values.isEmpty ? 0 : state.values.removeFirst()
                }
            }
        }
        var bounds: [Int] { state.withLockedValue { $0.bounds } }
    }

    static func srv(_ priority: UInt16, _ weight: UInt16, _ name: DNSName) -> DNSSRVRecord {
        DNSSRVRecord(priority: priority, weight: weight, port: 5060, target: name)
    }

    @Test func lowerPriorityComesFirstWhateverTheWeights() {
        let records = [Self.srv(20, 65_535, "c"), Self.srv(10, 0, "a"), Self.srv(15, 1, "b")]
        let ordered = SIPResolver.orderSRV(records, random: Script([]).source)
        #expect(ordered.map(\.target) == ["a", "b", "c"])
    }

    @Test func weightedSelectionPicksTheFirstRunningSumAtLeastTheRandomNumber() {
        // Arranged with weight 0 first: a(0) b(10) c(30); running sums 0, 10, 40.
        // 25 → c; then a(0) b(10), sums 0, 10: 0 → a; then b alone.
        let script = Script([25, 0, 10])
        let records = [Self.srv(0, 10, "b"), Self.srv(0, 30, "c"), Self.srv(0, 0, "a")]
        let ordered = SIPResolver.orderSRV(records, random: script.source)
        #expect(ordered.map(\.target) == ["c", "a", "b"])
        // The random number is drawn from 0 up to the sum of the remaining weights, inclusive.
        #expect(script.bounds == [40, 10, 10])
    }

    @Test func aRandomNumberEqualToARunningSumSelectsThatRecord() {
        // b(10) c(30): sums 10, 40. 10 → b (10 >= 10), not c.
        let ordered = SIPResolver.orderSRV([Self.srv(0, 10, "b"), Self.srv(0, 30, "c")], random: Script([10]).source)
        #expect(ordered.map(\.target) == ["b", "c"])
        // 11 → c.
        let other = SIPResolver.orderSRV([Self.srv(0, 10, "b"), Self.srv(0, 30, "c")], random: Script([11]).source)
        #expect(other.map(\.target) == ["c", "b"])
    }

    @Test func outOfRangeRandomNumbersAreClampedNotTrapped() {
        let ordered = SIPResolver.orderSRV([Self.srv(0, 1, "a"), Self.srv(0, 1, "b")], random: Script([-5, 99]).source)
        #expect(ordered.map(\.target) == ["a", "b"])
    }

    @Test func theSystemSourceStillOrdersByPriority() {
        let records = (0..<20).map { Self.srv(UInt16($0 % 3), UInt16($0), DNSName(stringLiteral: "h\($0).test")) }
        let ordered = SIPResolver.orderSRV(records, random: .system)
        #expect(ordered.count == 20)
        #expect(ordered.map(\.priority) == ordered.map(\.priority).sorted())
        #expect(Set(ordered.map(\.target)) == Set(records.map(\.target)))
    }
}
