extension SIPResolver {
    /// Orders SRV records for trying (RFC 2782, "Usage rules"): priority ascending; among equal
    /// priority, a weighted random order.
    ///
    /// > To select a target to be contacted next, arrange all SRV RRs (that have not been
    /// > ordered yet) in any order, except that all those with weight 0 are placed at the
    /// > beginning of the list. Compute the sum of the weights of those RRs, and with each RR
    /// > associate the running sum in the selected order. Then choose a uniform random number
    /// > between 0 and the sum computed (inclusive), and select the RR whose running sum value
    /// > is the first in the selected order which is greater than or equal to the random
    /// > number selected.
    ///
    /// Records keep their received order otherwise. A value from `random` outside `0...sum` is
    /// clamped.
    public static func orderSRV(_ records: [DNSSRVRecord], random: RandomSource) -> [DNSSRVRecord] {
        let priorities = Set(records.map(\.priority)).sorted()
        var ordered: [DNSSRVRecord] = []
        ordered.reserveCapacity(records.count)
        for priority in priorities {
            let group = records.filter { $0.priority == priority }
            var remaining = group.filter { $0.weight == 0 } + group.filter { $0.weight != 0 }
            while !remaining.isEmpty {
                let sum = remaining.reduce(0) { $0 + Int($1.weight) }
                let pick = min(max(random.next(sum), 0), sum)
                var running = 0
                var chosen = remaining.count - 1
                for (index, record) in remaining.enumerated() {
                    running += Int(record.weight)
                    if running >= pick {
                        chosen = index
                        break
                    }
                }
                ordered.append(remaining.remove(at: chosen))
            }
        }
        return ordered
    }
}
