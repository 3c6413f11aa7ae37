import _GatewayInternals

/// A value of the core's long-lived state that the durable store keeps (docs/state.md): two are
/// equal when the store keeps the same of both. Its synthesized `==` compares its durable fields
/// only: what a NOTIFY relayed in an existing pair may change without the store needing to know
/// is a ``Transient`` field (the last state seen) or inside a ``DialogState`` (CSeqs within a
/// block), so the one description of what is kept is the value's stored properties.
protocol Journaled: Equatable, Sendable {}

/// One of the core's tables (a ``DenseTable`` by key) that remembers which keys were written or
/// removed since the durable store last took the changes (``takeChanged()``).
///
/// While ``quietly(_:)`` runs (the relay of a NOTIFY in an existing pair) a write is remembered
/// only when it changes what the store keeps of the value (``Journaled``): the hot path writes nothing
/// to the store unless a subscription's status, dialog or CSeq block moved.
struct JournaledTable<Value: Journaled>: Sendable {
    private var table = DenseTable<Int, Value>()
    /// Keys written or removed since the last ``takeChanged()``.
    private var changed: Set<Int> = []
    /// While quiet: each key written, with its value before the first write.
    private var quiet: [Int: Value?]?
    /// Off when there is no durable store: nothing is remembered.
    var journaling = false

    var count: Int { table.count }
    var isEmpty: Bool { table.isEmpty }
    var keys: [Int] { table.keys }

    func first(where predicate: ((key: Int, value: Value)) throws -> Bool) rethrows -> (key: Int, value: Value)? {
        try table.first(where: predicate)
    }

    subscript(key: Int) -> Value? {
        get { table[key] }
        set {
            note(key)
            table[key] = newValue
        }
    }

    /// Changes the value for `key` in place, remembered as a write; nil when there is none.
    mutating func modify<R>(_ key: Int, _ body: (inout Value) -> R) -> R? {
        guard table[key] != nil else { return nil }
        note(key)
        return table.modify(key, body)
    }

    @discardableResult
    mutating func removeValue(forKey key: Int) -> Value? {
        note(key)
        return table.removeValue(forKey: key)
    }

    private mutating func note(_ key: Int) {
        guard journaling else { return }
        if quiet != nil {
            if quiet?[key] == nil { quiet?[key] = .some(table[key]) }
        } else {
            changed.insert(key)
        }
    }

    /// From now until ``endQuiet()``, a write is remembered only when it changes what the store
    /// keeps of the value.
    mutating func beginQuiet() {
        guard journaling else { return }
        quiet = [:]
    }

    mutating func endQuiet() {
        guard let touched = quiet else { return }
        quiet = nil
        for (key, before) in touched {
            // Compared in its slot: the value is moved out and back, not copied.
            let same = table.modify(key) { $0 == before } ?? (before == nil)
            if !same { changed.insert(key) }
        }
    }

    /// The keys written or removed since the last call.
    mutating func takeChanged() -> Set<Int> {
        defer { changed = [] }
        return changed
    }

    /// Removes a value without remembering a change: it is another node's now (docs/state.md).
    @discardableResult
    mutating func forget(_ key: Int) -> Value? {
        table.removeValue(forKey: key)
    }

    /// Puts a value back as the store held it, without remembering a change.
    mutating func restore(_ key: Int, _ value: Value) {
        table[key] = value
    }
}
