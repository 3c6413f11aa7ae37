extension Array {
    /// The same elements in storage of exactly their count, for arrays kept for a subscription's
    /// life: an array built by appending keeps up to twice the room it needs (a category is 160
    /// bytes), and `Array(self)` would share this storage instead of copying it.
    package func exactCapacityCopy() -> [Element] {
        guard capacity > count else { return self }
        var copy: [Element] = []
        copy.reserveCapacity(count)
        copy.append(contentsOf: self)
        return copy
    }
}
