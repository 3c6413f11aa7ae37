/// A value held in its own allocation: for state that is large and rare (a request waiting for
/// its answer), so that the structure holding it stays small while it is absent. Immutable:
/// a change is a new box.
package final class OutOfLine<Value: Sendable>: Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}

extension OutOfLine: Equatable where Value: Equatable {
    package static func == (a: OutOfLine, b: OutOfLine) -> Bool { a === b || a.value == b.value }
}
