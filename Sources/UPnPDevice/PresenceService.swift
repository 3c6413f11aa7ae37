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
