import Testing
import XMLBridge

@testable import UPnPDevice

/// The description documents, UPnP Device Architecture 1.1 §2.3 and §2.5, and the service table
/// of ISO/IEC 29341-26-16 §5.3 and §5.5.
@Suite struct DescriptionTests {
    static let device = "urn:schemas-upnp-org:device-1-0"
    static let service = "urn:schemas-upnp-org:service-1-0"

    @Test func deviceDescriptionNamesTheServiceAndItsURLs() throws {
        let root = try XMLParser.parse(DescriptionDocuments.deviceDescription(DeviceIdentity(uuid: "u-1")))
        #expect(root.name == XMLName(Self.device, "root"))
        let spec = try #require(root.element(XMLName(Self.device, "specVersion")))
        #expect(spec.element(XMLName(Self.device, "major"))?.text == "1")
        #expect(spec.element(XMLName(Self.device, "minor"))?.text == "1")
        let device = try #require(root.element(XMLName(Self.device, "device")))
        #expect(
            device.element(XMLName(Self.device, "deviceType"))?.text == "urn:schemas-upnp-org:device:TelephonyServer:2")
        #expect(device.element(XMLName(Self.device, "UDN"))?.text == "uuid:u-1")
        for required in ["friendlyName", "manufacturer", "modelName"] {
            #expect(device.element(XMLName(Self.device, required)) != nil, "\(required) is required (§2.3)")
        }
        #expect(device.element(XMLName(Self.device, "modelDescription")) == nil)
        // With one, it comes before modelName, as the UDA 1.1 device schema orders them.
        let described = try XMLParser.parse(
            DescriptionDocuments.deviceDescription(DeviceIdentity(uuid: "u-1", modelDescription: "provisional")))
        let names = try #require(described.element(XMLName(Self.device, "device"))).elements.map(\.name.local)
        #expect(names.firstIndex(of: "modelDescription").map { $0 + 1 } == names.firstIndex(of: "modelName"))
        let service = try #require(
            device.element(XMLName(Self.device, "serviceList"))?.element(XMLName(Self.device, "service")))
        let fields = Dictionary(uniqueKeysWithValues: service.elements.map { ($0.name.local, $0.text) })
        #expect(
            fields == [
                "serviceType": "urn:schemas-upnp-org:service:Presence:1",
                "serviceId": "urn:upnp-org:serviceId:Presence",
                "SCPDURL": "/presence.xml", "controlURL": "/control/presence", "eventSubURL": "/event/presence",
            ])
    }

    /// ISO/IEC 29341-26-16 §5.5 (Tables 4, 6, 8, 10, 12, 14, 16): each action's arguments.
    @Test(arguments: [
        ("GetPresence", ["out UserPresence A_ARG_TYPE_UserPresenceInfo"]),
        ("UpdatePresence", ["in UpdatedUserPresence A_ARG_TYPE_UserPresenceInfo"]),
        (
            "GetContactPresence",
            ["in TargetContact A_ARG_TYPE_ContactId", "out ContactPresence A_ARG_TYPE_PresenceOfContactsList"]
        ),
        ("GetPresenceOfContactsUpdate", ["out ContactPresenceUpdate A_ARG_TYPE_PresenceOfContactsList"]),
        (
            "RegisterForContactPresence",
            [
                "in Contact A_ARG_TYPE_ContactId", "in Expire A_ARG_TYPE_Expires",
                "out RegistrationResult A_ARG_TYPE_RegistrationResult",
            ]
        ),
        (
            "AuthorizePresenceReactive",
            [
                "in Contact A_ARG_TYPE_ContactId", "in Expire A_ARG_TYPE_Expires",
                "in UserPresenceInfo A_ARG_TYPE_UserPresenceInfo",
            ]
        ),
        (
            "AuthorizePresenceProactive",
            [
                "in UserPresenceInfo A_ARG_TYPE_UserPresenceInfo", "in Expire A_ARG_TYPE_Expires",
                "in WatcherList A_ARG_TYPE_WatcherList",
            ]
        ),
    ])
    func scpdListsTheArguments(action name: String, arguments: [String]) throws {
        let root = try XMLParser.parse(DescriptionDocuments.serviceDescription(configID: 1))
        let actions = try #require(root.element(XMLName(Self.service, "actionList")))
        let action = try #require(
            actions.elements(XMLName(Self.service, "action")).first {
                $0.element(XMLName(Self.service, "name"))?.text == name
            })
        let list = try #require(action.element(XMLName(Self.service, "argumentList")))
        let listed = list.elements.map { argument in
            ["direction", "name", "relatedStateVariable"].map {
                argument.element(XMLName(Self.service, $0))?.text ?? "?"
            }
            .joined(separator: " ")
        }
        #expect(listed == arguments)
    }

    /// ISO/IEC 29341-26-16 §5.3.1 (Table 1): the state table; three evented variables, Expires i4.
    @Test func scpdStateTable() throws {
        let root = try XMLParser.parse(DescriptionDocuments.serviceDescription(configID: 1))
        #expect(root.name == XMLName(Self.service, "scpd"))
        let table = try #require(root.element(XMLName(Self.service, "serviceStateTable")))
        var variables: [String: (type: String, events: String)] = [:]
        for variable in table.elements(XMLName(Self.service, "stateVariable")) {
            let name = variable.element(XMLName(Self.service, "name"))?.text ?? ""
            variables[name] = (
                variable.element(XMLName(Self.service, "dataType"))?.text ?? "", variable[attribute: "sendEvents"] ?? ""
            )
        }
        #expect(variables.count == 9)
        #expect(
            variables.filter { $0.value.events == "yes" }.keys.sorted() == [
                "PresenceOfContactsUpdate", "UserPresenceInfo", "Watcher",
            ])
        #expect(variables.filter { $0.value.type != "string" }.map(\.key) == ["A_ARG_TYPE_Expires"])
        #expect(variables["A_ARG_TYPE_Expires"]?.type == "i4")
    }
}
