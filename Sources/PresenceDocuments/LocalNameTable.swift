/// A fixed set of local names, each with a value, for decoders that tell an
/// element's children apart by name. Lengths are compared first, read from a
/// table of integers: most names asked about differ in length from most names
/// in the table, and that test is one load, where a `switch` on the name
/// compares it with each case in turn through a string comparison call.
/// The names are ASCII (as the schemas' element names are): no other string
/// is canonically equivalent to one, so a name's bytes, length first, are
/// compared where `==` would compare its characters, with the same result.
struct LocalNameTable<Value: Sendable>: Sendable, ExpressibleByDictionaryLiteral {
    /// The names, in the order given.
    let names: [String]
    private let lengths: [Int]
    private let values: [Value]

    init(_ entries: [(name: String, value: Value)]) {
        names = entries.map(\.name)
        assert(names.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } }, "names must be ASCII")
        lengths = names.map(\.utf8.count)
        values = entries.map(\.value)
    }

    init(dictionaryLiteral entries: (String, Value)...) {
        self.init(entries.map { (name: $0.0, value: $0.1) })
    }

    /// The value of the first entry named `local`, or nil.
    subscript(local: String) -> Value? {
        let length = local.utf8.count
        return lengths.withUnsafeBufferPointer { lengths in
            for i in lengths.indices where lengths[i] == length && names[i] == local { return values[i] }
            return nil
        }
    }
}
