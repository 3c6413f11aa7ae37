/// Rarely set fields of a document value, held out of line and shared between copies of the
/// value: the value stays a few words and copying it costs a retain (``MSState``'s details,
/// ``RPID``'s elements). Never changed once made (a change makes a new box), so sharing it between
/// values and threads is safe, and a read of its fields borrows them where they lie: a `var`
/// stored in a class is copied out whole before a method is called on it.
final class SharedFields<Value: Hashable & Sendable>: Hashable, Sendable {
    let value: Value
    init(_ value: consuming Value) { self.value = value }

    /// A new box holding the fields as `body` changes them.
    func changing(_ body: (inout Value) -> Void) -> SharedFields {
        var changed = value
        body(&changed)
        return SharedFields(changed)
    }

    static func == (a: SharedFields, b: SharedFields) -> Bool { a === b || a.value == b.value }
    func hash(into hasher: inout Hasher) { hasher.combine(value) }
}

/// Fields a value keeps in a ``SharedFields`` box, and only while any of them is set.
protocol RareFields: Hashable, Sendable {
    init()
    /// True when every field is absent (such fields are not kept).
    var isEmpty: Bool { get }
}

/// True when `value` is absent, told by its case: `value == nil` compares through the
/// element's `Equatable` conformance when it has one (a runtime conformance lookup and copies
/// of the element, callgrind `presence-bench profile decode-pidf`).
func absent<T>(_ value: T?) -> Bool {
    if case .none = value { true } else { false }
}

extension Optional {
    /// A box holding `fields`, or none when all of them are absent.
    init<Fields: RareFields>(keeping fields: consuming Fields) where Wrapped == SharedFields<Fields> {
        self = fields.isEmpty ? nil : SharedFields(fields)
    }

    /// Replaces the box by one holding the changed fields, none when all are absent. `emptying`
    /// is false when the change sets a value (the fields cannot have become empty, so they are
    /// not all checked again). Decoders gather the fields in a local value and box them once.
    mutating func update<Fields: RareFields>(emptying: Bool, _ body: (inout Fields) -> Void)
    where Wrapped == SharedFields<Fields> {
        var updated = self?.value ?? Fields()
        body(&updated)
        self = emptying && updated.isEmpty ? nil : SharedFields(updated)
    }
}
