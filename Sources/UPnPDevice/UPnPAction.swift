/// An action with its arguments in the order the SCPD lists them (UDA 1.1 §2.5, `<action>`).
public struct UPnPAction: Sendable {
    public var name: UPnPActionName
    public var arguments: [UPnPArgument]

    public init(_ name: UPnPActionName, _ arguments: [UPnPArgument]) {
        self.name = name
        self.arguments = arguments
    }

    /// The IN arguments, in order: a control point sends exactly these (UDA 1.1 §3.2.1).
    public var inArguments: [UPnPArgument] { arguments.filter { $0.direction == .in } }
    /// The OUT arguments, in order: the action response carries exactly these (UDA 1.1 §3.2.2).
    public var outArguments: [UPnPArgument] { arguments.filter { $0.direction == .out } }
}
