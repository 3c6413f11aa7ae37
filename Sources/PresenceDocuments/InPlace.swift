// Reading a document's values where they lie, for the writers. A method called on a value
// held in an array, an optional or a box takes a copy of it first: a retain and a release for
// each of its strings, arrays and boxes, set or not. Read in place, through the array's buffer
// or a pointer to where the value lies, only the fields the writer loads are touched.

extension Array {
    /// Calls `body` with each element, in order, read in place through the
    /// array's buffer: a `for x in array` loop copies each element out first
    /// (a retain and a release for each of its strings, arrays and boxes),
    /// where here only the parts `body` reads are loaded.
    @inline(__always)
    func forEachInPlace(_ body: (Element) -> Void) {
        withUnsafeBufferPointer { elements in
            for i in elements.indices { body(elements[i]) }
        }
    }

    /// Calls `body` with a pointer to each element, in order, in the array's buffer.
    @inline(__always)
    func forEachPointer(_ body: (UnsafePointer<Element>) -> Void) {
        withUnsafeBufferPointer { elements in
            guard let base = elements.baseAddress else { return }
            for i in elements.indices { body(base + i) }
        }
    }
}

extension UnsafePointer {
    /// A pointer to the value held by the optional this points to, nil when it holds none.
    /// An optional's value lies at its start (a single-payload enum's payload is at offset 0),
    /// so the pointer is this one's address.
    @inline(__always)
    func unwrapped<Wrapped>() -> UnsafePointer<Wrapped>? where Pointee == Wrapped? {
        guard case .some = pointee else { return nil }
        return UnsafeRawPointer(self).assumingMemoryBound(to: Wrapped.self)
    }

    /// Calls `body` with a pointer to each element of the array in `field`, in order, in the
    /// array's buffer. An empty array (most of a document's are) is tested without being
    /// loaded: loading one, even empty, cost a retain and a release.
    @inline(__always)
    func forEach<Element>(_ field: KeyPath<Pointee, [Element]>, _ body: (UnsafePointer<Element>) -> Void) {
        let array = pointer(to: field)!
        if array.pointee.isEmpty { return }
        array.pointee.forEachPointer(body)
    }
}
