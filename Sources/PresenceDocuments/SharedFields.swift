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
