/// The evented state variables of Presence:1 (ISO/IEC 29341-26-16 §5.3.1, §5.4).
public struct EventedVariable: Hashable, Sendable, CustomStringConvertible {
    public var name: String
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    /// ISO/IEC 29341-26-16 §5.3.2.
    public static let userPresenceInfo = EventedVariable("UserPresenceInfo")
    /// ISO/IEC 29341-26-16 §5.3.3.
    public static let presenceOfContactsUpdate = EventedVariable("PresenceOfContactsUpdate")
    /// ISO/IEC 29341-26-16 §5.3.9.
    public static let watcher = EventedVariable("Watcher")

    /// The three, in the order of the service's state table.
    public static let all: [EventedVariable] = [.userPresenceInfo, .presenceOfContactsUpdate, .watcher]
}
