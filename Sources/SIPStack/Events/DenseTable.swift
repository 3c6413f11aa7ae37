/// A table of values by key whose values sit densely in one array, with a small index from key
/// to position: for the state of many long-lived subscriptions.
///
/// A `Dictionary` keeps its values in its hash buckets, so each value's bytes are paid for every
/// bucket — with capacity a power of two and at most ¾ full, 1.3 to 2.7 times the number of
/// values. Here the buckets only hold the key and a position; the values take one slot each
/// (freed slots are reused). Iteration order is unspecified, as for a dictionary.
public struct DenseTable<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private var slots: ContiguousArray<Value?> = []
    /// Positions as 32 bits: 4 bytes per bucket instead of 8.
    private var index: [Key: Int32] = [:]
    private var free: [Int32] = []

    public init() {}

    /// The number of values.
    public var count: Int { index.count }
    public var isEmpty: Bool { index.isEmpty }

    /// The value for `key`; setting nil removes it.
    public subscript(key: Key) -> Value? {
        get {
            guard let position = index[key] else { return nil }
            return slots[Int(position)]
        }
        set {
            if let position = index[key] {
                if let newValue {
                    slots[Int(position)] = newValue
                } else {
                    remove(key, at: position)
                }
            } else if let newValue {
                if let position = free.popLast() {
                    slots[Int(position)] = newValue
                    index[key] = position
                } else {
                    // 2³¹ values would take hundreds of gigabytes: positions fit in 32 bits.
                    index[key] = Int32(truncatingIfNeeded: slots.count)
                    slots.append(newValue)
                }
            }
        }
    }

    /// Removes and returns the value for `key`.
    @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        guard let position = index[key] else { return nil }
        let value = slots[Int(position)]
        remove(key, at: position)
        return value
    }

    private mutating func remove(_ key: Key, at position: Int32) {
        index[key] = nil
        slots[Int(position)] = nil
        if index.isEmpty {
            // Empty again: give the slots back.
            slots = []
            free = []
        } else {
            free.append(position)
        }
    }

    /// The keys, in unspecified order.
    public var keys: some Collection<Key> { index.keys }

    /// The values, in unspecified order.
    public var values: [Value] { slots.compactMap { $0 } }

    /// The first key and value (in unspecified order) that satisfy `predicate`.
    public func first(where predicate: ((key: Key, value: Value)) throws -> Bool) rethrows -> (key: Key, value: Value)? {
        for (key, position) in index {
            guard let value = slots[Int(position)] else { continue }
            if try predicate((key, value)) { return (key, value) }
        }
        return nil
    }
}
