import XMLBridge

/// A fixed set of local names, each with a value, for decoders that tell an
/// element's children apart by name: an ``XMLNameTable`` of names in no
/// namespace (looked up lengths first, where a `switch` on the name compares it
/// with each case in turn through a string comparison call) and their values.
struct LocalNameTable<Value: Sendable>: Sendable, ExpressibleByDictionaryLiteral {
    private let table: XMLNameTable
    private let values: [Value]

    init(_ entries: [(name: String, value: Value)]) {
        table = XMLNameTable(unqualified: entries.map(\.name))
        values = entries.map(\.value)
    }

    init(dictionaryLiteral entries: (String, Value)...) {
        self.init(entries.map { (name: $0.0, value: $0.1) })
    }

    /// The names, in the order given.
    var names: [String] { table.names.map(\.local) }

    /// The value of the first entry named `local`, or nil.
    subscript(local: String) -> Value? {
        table.position(of: XMLName("", local)).map { values[$0] }
    }
}
