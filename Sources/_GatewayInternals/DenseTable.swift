/// A table of values by key whose values sit densely in a few arrays, with a small index from
/// key to position: for the state of many long-lived subscriptions.
///
/// A `Dictionary` keeps its values in its hash buckets, so each value's bytes are paid for every
/// bucket — with capacity a power of two and at most ¾ full, 1.3 to 2.7 times the number of
/// values. Here the buckets only hold the key and a position; the values take one slot each
/// (freed slots are reused), in chunks of ``chunkSize`` slots: the table grows a chunk at a time,
/// so at most one chunk stands unused, where one doubling array would leave up to half its
/// capacity unused and copy every value at each growth. Iteration order is unspecified, as for a
/// dictionary.
package struct DenseTable<Key: PackedTableKey, Value: Sendable>: Sendable {
    /// Slots per chunk (a power of two). The first chunk grows as an array up to this size.
    static var chunkSize: Int { 1 << chunkShift }
    private static var chunkShift: Int { 10 }
    private var chunks: [ContiguousArray<Value?>] = []
    /// Positions handed out so far (the next new slot's position).
    private var slotCount = 0
    /// Positions as 32 bits: 4 bytes per bucket instead of 8; in a ``PackedTable``, which
    /// holds 1.14 to 2 buckets per entry where a dictionary holds 1.33 to 2.67.
    private var index = PackedTable<Key, Int32>(filler: 0)
    private var free: [Int32] = []

    package init() {}

    /// The number of values.
    package var count: Int { index.count }
    package var isEmpty: Bool { index.isEmpty }

    /// The value for `key`; setting nil removes it.
    package subscript(key: Key) -> Value? {
        get {
            guard let position = index[key] else { return nil }
            return self[slot: position]
        }
        set {
            if let position = index[key] {
                if let newValue {
                    self[slot: position] = newValue
                } else {
                    remove(key, at: position)
                }
            } else if let newValue {
                if let position = free.popLast() {
                    self[slot: position] = newValue
                    index[key] = position
                } else {
                    // 2³¹ values would take hundreds of gigabytes: positions fit in 32 bits.
                    index[key] = Int32(truncatingIfNeeded: slotCount)
                    if slotCount >> Self.chunkShift == chunks.count {
                        var chunk = ContiguousArray<Value?>()
                        if !chunks.isEmpty { chunk.reserveCapacity(Self.chunkSize) }
                        chunks.append(chunk)
                    }
                    chunks[chunks.count - 1].append(newValue)
                    slotCount += 1
                }
            }
        }
    }

    /// Changes the value for `key` in place (no copy of it, so its storage is not copied on
    /// write); nil when there is none.
    package mutating func modify<R>(_ key: Key, _ body: (inout Value) throws -> R) rethrows -> R? {
        guard let position = index[key] else { return nil }
        let chunk = Int(position) >> Self.chunkShift
        let slot = Int(position) & (Self.chunkSize - 1)
        // Moved out and back: the value is the only reference to its storage while it changes.
        guard var value = chunks[chunk][slot].take() else { return nil }
        defer { chunks[chunk][slot] = value }
        return try body(&value)
    }

    /// Removes and returns the value for `key`.
    @discardableResult
    package mutating func removeValue(forKey key: Key) -> Value? {
        guard let position = index[key] else { return nil }
        let value = self[slot: position]
        remove(key, at: position)
        return value
    }

    private mutating func remove(_ key: Key, at position: Int32) {
        index[key] = nil
        self[slot: position] = nil
        if index.isEmpty {
            // Empty again: give the slots back.
            chunks = []
            slotCount = 0
            free = []
        } else {
            free.append(position)
        }
    }

    /// The keys, in unspecified order.
    package var keys: [Key] { index.entries.map(\.key) }

    /// The values, in unspecified order.
    package var values: [Value] { chunks.flatMap { $0.compactMap { $0 } } }

    /// The first key and value (in unspecified order) that satisfy `predicate`.
    package func first(where predicate: ((key: Key, value: Value)) throws -> Bool) rethrows -> (key: Key, value: Value)?
    {
        var found: (key: Key, value: Value)?
        _ = try index.first { entry in
            guard let value = self[slot: entry.value], try predicate((entry.key, value)) else { return false }
            found = (entry.key, value)
            return true
        }
        return found
    }

    private subscript(slot position: Int32) -> Value? {
        get { chunks[Int(position) >> Self.chunkShift][Int(position) & (Self.chunkSize - 1)] }
        set { chunks[Int(position) >> Self.chunkShift][Int(position) & (Self.chunkSize - 1)] = newValue }
    }
}
