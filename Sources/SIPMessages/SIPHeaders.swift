/// The header fields of a message, in the order received (RFC 3261 §7.3).
///
/// Lookups take a ``SIPHeaderName`` and match long and compact forms case-insensitively.
/// Typed accessors (Via, From, CSeq, ...) are in `SIPHeaders+Typed.swift`.
public struct SIPHeaders: Sendable, Hashable, RandomAccessCollection, ExpressibleByArrayLiteral {
    public var fields: [SIPHeaderField]

    public init(_ fields: [SIPHeaderField] = []) { self.fields = fields }

    public init(arrayLiteral elements: (SIPHeaderName, String)...) {
        self.fields = elements.map { SIPHeaderField(name: $0.0, value: $0.1) }
    }

    public var startIndex: Int { fields.startIndex }
    public var endIndex: Int { fields.endIndex }
    public subscript(position: Int) -> SIPHeaderField {
        get { fields[position] }
        set { fields[position] = newValue }
    }

    /// The unfolded value of the first field with this name.
    public subscript(name: SIPHeaderName) -> String? {
        fields.first { $0.name == name }?.value
    }

    /// Every field with this name, in order.
    public func fields(named name: SIPHeaderName) -> [SIPHeaderField] {
        fields.filter { $0.name == name }
    }

    /// The unfolded values of every field with this name, in order (one per field line; a
    /// comma-separated list stays one string — the typed accessors split lists).
    public func values(named name: SIPHeaderName) -> [String] {
        fields.compactMap { $0.name == name ? $0.value : nil }
    }

    public func contains(_ name: SIPHeaderName) -> Bool { fields.contains { $0.name == name } }

    public mutating func append(_ name: SIPHeaderName, _ value: String) {
        fields.append(SIPHeaderField(name: name, value: value))
    }

    /// Inserts a field before all others (e.g. a new Via or Record-Route).
    public mutating func prepend(_ name: SIPHeaderName, _ value: String) {
        fields.insert(SIPHeaderField(name: name, value: value), at: 0)
    }

    public mutating func remove(_ name: SIPHeaderName) { fields.removeAll { $0.name == name } }

    /// Sets the value of the first field with this name (keeping its position), removing the
    /// others; appends a field when there is none.
    public mutating func set(_ name: SIPHeaderName, _ value: String) {
        if let first = fields.firstIndex(where: { $0.name == name }) {
            fields[first].value = value
            var i = fields.count - 1
            while i > first {
                if fields[i].name == name { fields.remove(at: i) }
                i -= 1
            }
        } else {
            append(name, value)
        }
    }
}
