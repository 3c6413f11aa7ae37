/// Rarely set fields of a document value, held out of line and shared between copies of the
/// value: the value stays a few words and copying it costs a retain (``MSState``'s details,
/// ``RPID``'s elements). Written only while uniquely referenced (the owner copies it first), so
/// sharing it between values and threads is safe. Compared and hashed by value.
final class SharedFields<Value: Hashable & Sendable>: Hashable, @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }

    static func == (a: SharedFields, b: SharedFields) -> Bool { a === b || a.value == b.value }
    func hash(into hasher: inout Hasher) { hasher.combine(value) }
}

/// Fields a value keeps in a ``SharedFields`` box, and only while any of them is set.
protocol RareFields: Hashable, Sendable {
    init()
    /// True when every field is absent (such fields are not kept).
    var isEmpty: Bool { get }
}

extension Optional {
    /// A box holding `fields`, or none when all of them are absent.
    init<Fields: RareFields>(keeping fields: Fields) where Wrapped == SharedFields<Fields> {
        self = fields.isEmpty ? nil : SharedFields(fields)
    }

    /// Changes the boxed fields in place when the owner holds the only reference to them, else
    /// on a copy; no box is kept when all are absent. `emptying` is false when the change sets a
    /// value (the fields cannot have become empty, so they are not all checked again).
    mutating func update<Fields: RareFields>(emptying: Bool, _ body: (inout Fields) -> Void)
    where Wrapped == SharedFields<Fields> {
        if isKnownUniquelyReferenced(&self), let box = self {
            body(&box.value)
            if emptying && box.value.isEmpty { self = nil }
        } else {
            var updated = self?.value ?? Fields()
            body(&updated)
            self = emptying && updated.isEmpty ? nil : SharedFields(updated)
        }
    }
}
