/// A key a ``PackedTable`` can hold: a value that is its own 64 bits.
///
/// Internal to the package: public only because public handles (`SubscriptionAgent.Handle`,
/// `NotifierAgent.Handle`) conform to it.
public protocol PackedTableKey: Hashable, Sendable {
    var tableBits: UInt64 { get }
    init(tableBits: UInt64)
}

extension Int: PackedTableKey {
    public var tableBits: UInt64 { UInt64(bitPattern: Int64(self)) }
    public init(tableBits: UInt64) { self = Int(Int64(bitPattern: tableBits)) }
}

/// A hash table from 64-bit keys to values, for the tables a gateway keeps an entry in per
/// subscription, hundreds of thousands of entries for hours.
///
/// A `Dictionary`'s capacity is a power of two at most ¾ full: past each power of two its
/// buckets double, so a table with 200,000 entries pays for 524,288 buckets (the runtime's
/// timer slots cost 126 bytes per bridged pair that way, at 100,000 pairs). This one probes
/// linearly in one array of any size, grows by half when ⅞ full and shrinks when less than a
/// quarter full, so it holds between 1.14 and 2 buckets per entry (about 1.5 after growth).
/// A removal shifts the following entries back instead of leaving a marker, so lookups stay
/// short however many entries come and go.
///
/// Keys are mixed before use (SplitMix64's finalizer), so sequential numbers and packed fields
/// spread evenly. Keys come from the gateway itself (counters, packed timer keys, seeded
/// hashes), never straight from the network.
package struct PackedTable<Key: PackedTableKey, Value: Sendable>: Sendable {
    /// Bucket keys; ``empty`` marks a free bucket.
    private var keys: [UInt64] = []
    /// Bucket values; `filler` in free buckets.
    private var values: [Value] = []
    /// The entry whose key is ``empty``'s bit pattern, which cannot go in a bucket.
    private var emptyKeyValue: Value?
    private let filler: Value
    package private(set) var count = 0

    private static var empty: UInt64 { .max }
    private static var minimumCapacity: Int { 16 }

    /// `filler` fills free buckets (any value: it is never read as an entry).
    package init(filler: Value) {
        self.filler = filler
    }

    package var isEmpty: Bool { count == 0 }

    /// Buckets allocated (for tests and memory figures).
    package var capacity: Int { keys.count }

    package subscript(key: Key) -> Value? {
        get {
            let bits = key.tableBits
            if bits == Self.empty { return emptyKeyValue }
            guard let bucket = find(bits) else { return nil }
            return values[bucket]
        }
        set {
            if let newValue { insert(key.tableBits, newValue) } else { removeValue(forKey: key) }
        }
    }

    @discardableResult
    package mutating func removeValue(forKey key: Key) -> Value? {
        let bits = key.tableBits
        if bits == Self.empty {
            defer {
                if emptyKeyValue != nil {
                    emptyKeyValue = nil
                    count -= 1
                }
            }
            return emptyKeyValue
        }
        guard let bucket = find(bits) else { return nil }
        let old = values[bucket]
        remove(at: bucket)
        count -= 1
        if count == 0 {
            keys = []
            values = []
        } else if count < keys.count / 4, keys.count > Self.minimumCapacity {
            resize(to: count * 2)
        }
        return old
    }

    /// The entries, in unspecified order.
    package var entries: [(key: Key, value: Value)] {
        var all: [(key: Key, value: Value)] = []
        all.reserveCapacity(count)
        if let emptyKeyValue { all.append((Key(tableBits: Self.empty), emptyKeyValue)) }
        for bucket in keys.indices where keys[bucket] != Self.empty {
            all.append((Key(tableBits: keys[bucket]), values[bucket]))
        }
        return all
    }

    /// The first entry (in unspecified order) that satisfies `predicate`, without copying the
    /// entries out.
    package func first(where predicate: ((key: Key, value: Value)) throws -> Bool) rethrows -> (key: Key, value: Value)?
    {
        if let emptyKeyValue, try predicate((Key(tableBits: Self.empty), emptyKeyValue)) {
            return (Key(tableBits: Self.empty), emptyKeyValue)
        }
        for bucket in keys.indices where keys[bucket] != Self.empty {
            let entry = (key: Key(tableBits: keys[bucket]), value: values[bucket])
            if try predicate(entry) { return entry }
        }
        return nil
    }

    // MARK: - Buckets

    /// The bucket a key starts probing at: the mixed key scaled onto the capacity.
    private func home(_ bits: UInt64) -> Int {
        var x = bits
        x ^= x >> 30
        x &*= 0xbf58_476d_1ce4_e5b9
        x ^= x >> 27
        x &*= 0x94d0_49bb_1331_11eb
        x ^= x >> 31
        return Int(x.multipliedFullWidth(by: UInt64(keys.count)).high)
    }

    private func find(_ bits: UInt64) -> Int? {
        guard !keys.isEmpty else { return nil }
        var bucket = home(bits)
        while true {
            let held = keys[bucket]
            if held == bits { return bucket }
            if held == Self.empty { return nil }
            bucket += 1
            if bucket == keys.count { bucket = 0 }
        }
    }

    private mutating func insert(_ bits: UInt64, _ value: Value) {
        if bits == Self.empty {
            if emptyKeyValue == nil { count += 1 }
            emptyKeyValue = value
            return
        }
        if let bucket = find(bits) {
            values[bucket] = value
            return
        }
        if (count + 1) * 8 > keys.count * 7 {
            resize(to: Swift.max(Self.minimumCapacity, keys.count + keys.count / 2))
        }
        place(bits, value)
        count += 1
    }

    /// Puts a key known to be absent into the first free bucket from its home.
    private mutating func place(_ bits: UInt64, _ value: Value) {
        var bucket = home(bits)
        while keys[bucket] != Self.empty {
            bucket += 1
            if bucket == keys.count { bucket = 0 }
        }
        keys[bucket] = bits
        values[bucket] = value
    }

    /// Empties `bucket` and moves back each following entry that its home allows, so that no
    /// entry sits behind a free bucket on its probe path.
    private mutating func remove(at bucket: Int) {
        var hole = bucket
        var next = bucket
        while true {
            next += 1
            if next == keys.count { next = 0 }
            let bits = keys[next]
            if bits == Self.empty { break }
            let start = home(bits)
            // The entry stays when its home lies cyclically in (hole, next].
            let stays = hole <= next ? (hole < start && start <= next) : (hole < start || start <= next)
            if !stays {
                keys[hole] = bits
                values[hole] = values[next]
                hole = next
            }
        }
        keys[hole] = Self.empty
        values[hole] = filler
    }

    private mutating func resize(to capacity: Int) {
        let oldKeys = keys
        let oldValues = values
        let size = Swift.max(Self.minimumCapacity, capacity)
        keys = [UInt64](repeating: Self.empty, count: size)
        values = [Value](repeating: filler, count: size)
        for bucket in oldKeys.indices where oldKeys[bucket] != Self.empty {
            place(oldKeys[bucket], oldValues[bucket])
        }
    }
}
