/// A UPnP error an action answers with (UPnP Device Architecture 1.1 §3.2.2, Table 3-3).
///
/// The codes of UDA 1.1 are static members; a service's own codes (600 to 799, ISO/IEC
/// 29341-26-16 §5.5.8 for Presence:1) are made with ``init(code:description:)``.
public struct UPnPFault: Error, Hashable, Sendable, CustomStringConvertible {
    /// The `errorCode` of the `UPnPError` element.
    public var code: Int
    /// The `errorDescription`: short, for a person reading a log.
    public var errorDescription: String

    public init(code: Int, description: String) {
        self.code = code
        self.errorDescription = description
    }

    public var description: String { "UPnP error \(code) (\(errorDescription))" }

    /// No action by that name at this service.
    public static let invalidAction = UPnPFault(code: 401, description: "Invalid Action")
    /// Not enough IN arguments, arguments in the wrong order, or of the wrong data type.
    public static let invalidArgs = UPnPFault(code: 402, description: "Invalid Args")
    /// The action failed for a reason the other codes do not cover.
    public static let actionFailed = UPnPFault(code: 501, description: "Action Failed")
    /// An argument value is invalid.
    public static let argumentValueInvalid = UPnPFault(code: 600, description: "Argument Value Invalid")
    /// An argument value is outside the range its state variable allows.
    public static let argumentValueOutOfRange = UPnPFault(code: 601, description: "Argument Value Out of Range")
    /// The requested action is optional and this device does not implement it.
    public static let optionalActionNotImplemented = UPnPFault(
        code: 602, description: "Optional Action Not Implemented")
    /// Not enough memory to complete the action.
    public static let outOfMemory = UPnPFault(code: 603, description: "Out of Memory")
    /// A string argument is longer than the device handles.
    public static let stringArgumentTooLong = UPnPFault(code: 605, description: "String Argument Too Long")
}
