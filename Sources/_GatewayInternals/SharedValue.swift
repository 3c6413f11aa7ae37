import NIOConcurrencyHelpers

/// An immutable value many subscriptions hold the same copy of (the Contact of an agent, the
/// negotiated terms, a subscriber's request profile): one reference in each subscription instead
/// of the value inline, hundreds of bytes each.
package final class SharedValue<Value: Hashable & Sendable>: Sendable, Hashable {
    package let value: Value

    package init(_ value: Value) { self.value = value }

    package static func == (a: SharedValue, b: SharedValue) -> Bool { a === b || a.value == b.value }
    package func hash(into hasher: inout Hasher) { hasher.combine(value) }
}

/// Hands out one ``SharedValue`` per distinct value, so that equal values share storage.
///
/// Bounded: past `limit` distinct values (default 1,024; the values are configuration-like —
/// contacts, body types, Accept lists — so a process sees few) new values are boxed without
/// being remembered, which costs memory but never correctness.
package final class SharedValueTable<Value: Hashable & Sendable>: Sendable {
    private let table = NIOLockedValueBox<[Value: SharedValue<Value>]>([:])
    let limit: Int

    package init(limit: Int = 1_024) { self.limit = limit }

    /// The held value equal to `value` (sharing its storage, for a value that has some, such as
    /// an array), else `value` itself, remembered while the table has room.
    package func interned(_ value: Value) -> Value { shared(value).value }

    package func shared(_ value: Value) -> SharedValue<Value> {
        table.withLockedValue { table in
            if let known = table[value] { return known }
            let box = SharedValue(value)
            if table.count < limit { table[value] = box }
            return box
        }
    }
}
