/// One argument of an action as its SCPD lists it (UPnP Device Architecture 1.1 §2.5, `<argument>`).
public struct UPnPArgument: Hashable, Sendable {
    public enum Direction: String, Sendable { case `in`, out }
    public var name: String
    public var direction: Direction
    public var relatedStateVariable: String

    public init(_ name: String, _ direction: Direction, _ relatedStateVariable: String) {
        self.name = name
        self.direction = direction
        self.relatedStateVariable = relatedStateVariable
    }
}
