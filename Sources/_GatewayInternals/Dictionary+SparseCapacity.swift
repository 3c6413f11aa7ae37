extension Dictionary {
    /// Gives the storage of a table that has mostly emptied back to the allocator.
    ///
    /// A Swift dictionary keeps the capacity of its largest size: a transaction table that held
    /// a burst of setups (each answered transaction is kept 32 s, RFC 3261 §17.2.2 Timer J)
    /// would hold that burst's buckets for the life of the process. When fewer than an eighth of
    /// the buckets are used, the table is rebuilt at twice its count; it then has to empty by
    /// about another factor of three before the next rebuild, so the copying costs O(1) per
    /// removal. Tables of at most `floor` buckets are left alone.
    package mutating func releaseSparseCapacity(floor: Int = 1024) {
        guard capacity > floor, count * 8 < capacity else { return }
        var smaller = Self(minimumCapacity: count * 2)
        for (key, value) in self { smaller[key] = value }
        self = smaller
    }
}
