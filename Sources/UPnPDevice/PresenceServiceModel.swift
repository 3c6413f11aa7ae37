/// The name of a UPnP action: an open vocabulary, as in swift-http-types' `HTTPField.Name`.
public struct UPnPActionName: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// ISO/IEC 29341-26-16 §5.5.1.
    public static let getPresence = UPnPActionName("GetPresence")
    /// ISO/IEC 29341-26-16 §5.5.2.
    public static let updatePresence = UPnPActionName("UpdatePresence")
    /// ISO/IEC 29341-26-16 §5.5.3.
    public static let getContactPresence = UPnPActionName("GetContactPresence")
    /// ISO/IEC 29341-26-16 §5.5.4.
    public static let getPresenceOfContactsUpdate = UPnPActionName("GetPresenceOfContactsUpdate")
    /// ISO/IEC 29341-26-16 §5.5.5.
    public static let registerForContactPresence = UPnPActionName("RegisterForContactPresence")
    /// ISO/IEC 29341-26-16 §5.5.6.
    public static let authorizePresenceReactive = UPnPActionName("AuthorizePresenceReactive")
    /// ISO/IEC 29341-26-16 §5.5.7.
    public static let authorizePresenceProactive = UPnPActionName("AuthorizePresenceProactive")
}

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

/// A state variable of the SCPD's `<serviceStateTable>` (UDA 1.1 §2.5).
public struct UPnPStateVariable: Hashable, Sendable {
    public var name: String
    /// The UPnP data type (`string`, `i4`; UDA 1.1 §2.5, Table 2-4).
    public var dataType: String
    public var sendEvents: Bool

    public init(_ name: String, _ dataType: String, sendEvents: Bool = false) {
        self.name = name
        self.dataType = dataType
        self.sendEvents = sendEvents
    }
}

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

/// The Presence:1 service of ISO/IEC 29341-26-16: its identifiers, actions and state variables.
///
/// The action and state-variable tables follow ISO/IEC 29341-26-16 §5.3 (Table 1) and §5.5
/// (Table 3 and the argument tables of §5.5.1 to §5.5.7); §6 is the SCPD written from them.
public enum PresenceService {
    /// ISO/IEC 29341-26-16 §5.1.
    public static let serviceType = "urn:schemas-upnp-org:service:Presence:1"
    public static let serviceId = "urn:upnp-org:serviceId:Presence"
    /// The device that carries the service (the TelephonyServer:2 of the Telephony DCP).
    public static let deviceType = "urn:schemas-upnp-org:device:TelephonyServer:2"

    static let userPresenceInfoType = "A_ARG_TYPE_UserPresenceInfo"
    static let contactListType = "A_ARG_TYPE_PresenceOfContactsList"
    static let contactIdType = "A_ARG_TYPE_ContactId"
    static let expiresType = "A_ARG_TYPE_Expires"

    public static let actions: [UPnPAction] = [
        UPnPAction(.getPresence, [UPnPArgument("UserPresence", .out, userPresenceInfoType)]),
        UPnPAction(.updatePresence, [UPnPArgument("UpdatedUserPresence", .in, userPresenceInfoType)]),
        UPnPAction(
            .getContactPresence,
            [
                UPnPArgument("TargetContact", .in, contactIdType),
                UPnPArgument("ContactPresence", .out, contactListType),
            ]),
        UPnPAction(.getPresenceOfContactsUpdate, [UPnPArgument("ContactPresenceUpdate", .out, contactListType)]),
        UPnPAction(
            .registerForContactPresence,
            [
                UPnPArgument("Contact", .in, contactIdType),
                UPnPArgument("Expire", .in, expiresType),
                UPnPArgument("RegistrationResult", .out, "A_ARG_TYPE_RegistrationResult"),
            ]),
        UPnPAction(
            .authorizePresenceReactive,
            [
                UPnPArgument("Contact", .in, contactIdType),
                UPnPArgument("Expire", .in, expiresType),
                UPnPArgument("UserPresenceInfo", .in, userPresenceInfoType),
            ]),
        UPnPAction(
            .authorizePresenceProactive,
            [
                UPnPArgument("UserPresenceInfo", .in, userPresenceInfoType),
                UPnPArgument("Expire", .in, expiresType),
                UPnPArgument("WatcherList", .in, "A_ARG_TYPE_WatcherList"),
            ]),
    ]

    /// ISO/IEC 29341-26-16 §5.3.1, Table 1: every variable is a string but A_ARG_TYPE_Expires (i4).
    public static let stateVariables: [UPnPStateVariable] = [
        UPnPStateVariable("UserPresenceInfo", "string", sendEvents: true),
        UPnPStateVariable("PresenceOfContactsUpdate", "string", sendEvents: true),
        UPnPStateVariable("Watcher", "string", sendEvents: true),
        UPnPStateVariable(userPresenceInfoType, "string"),
        UPnPStateVariable(contactListType, "string"),
        UPnPStateVariable(contactIdType, "string"),
        UPnPStateVariable("A_ARG_TYPE_RegistrationResult", "string"),
        UPnPStateVariable(expiresType, "i4"),
        UPnPStateVariable("A_ARG_TYPE_WatcherList", "string"),
    ]

    /// The action called `name`, if the service has one.
    public static func action(named name: String) -> UPnPAction? {
        actions.first { $0.name.rawValue == name }
    }

    /// The data type of a state variable (`string` when unknown).
    static func dataType(of variable: String) -> String {
        stateVariables.first { $0.name == variable }?.dataType ?? "string"
    }
}
