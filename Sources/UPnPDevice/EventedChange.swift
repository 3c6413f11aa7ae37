/// A change of an evented state variable, reported by a backend (ISO/IEC 29341-26-16 §5.4).
public struct EventedChange: Sendable, Hashable {
    public var variable: EventedVariable
    /// The new value: an XML document as a string, opaque at this layer.
    public var value: String

    public init(_ variable: EventedVariable, _ value: String) {
        self.variable = variable
        self.value = value
    }
}
