import XMLBridge

/// The device description and the service description, written with XMLBridge.
public enum DescriptionDocuments {
    static let deviceNamespace = "urn:schemas-upnp-org:device-1-0"
    static let serviceNamespace = "urn:schemas-upnp-org:service-1-0"

    /// The device description (UDA 1.1 §2.3): a root TelephonyServer:2 device with the Presence
    /// service (ISO/IEC 29341-26-16 §5.1) and relative URLs resolved against the document's URL.
    public static func deviceDescription(_ identity: DeviceIdentity) -> [UInt8] {
        let ns = deviceNamespace
        let service = element(
            ns, "service",
            [
                leaf(ns, "serviceType", PresenceService.serviceType), leaf(ns, "serviceId", PresenceService.serviceId),
                leaf(ns, "SCPDURL", PresenceDevicePaths.scpd), leaf(ns, "controlURL", PresenceDevicePaths.control),
                leaf(ns, "eventSubURL", PresenceDevicePaths.event),
            ])
        // In the order of the UDA 1.1 device schema: modelDescription before modelName.
        let device = element(
            ns, "device",
            [
                leaf(ns, "deviceType", PresenceService.deviceType), leaf(ns, "friendlyName", identity.friendlyName),
                leaf(ns, "manufacturer", identity.manufacturer),
            ] + (identity.modelDescription.map { [leaf(ns, "modelDescription", $0)] } ?? []) + [
                leaf(ns, "modelName", identity.modelName), leaf(ns, "UDN", "uuid:" + identity.uuid),
                element(ns, "serviceList", [service]),
            ])
        var root = element(ns, "root", [specVersion(ns), device])
        root.setAttribute(XMLName("", "configId"), String(identity.configID))
        return XMLWriter(indent: "  ").bytes(root)
    }

    /// The service description (UDA 1.1 §2.5) of Presence:1 (ISO/IEC 29341-26-16 §6): every action
    /// with its arguments in order and every state variable, the three evented ones with
    /// `sendEvents="yes"`.
    public static func serviceDescription(configID: UInt32) -> [UInt8] {
        let ns = serviceNamespace
        let actions = PresenceService.actions.map { action in
            let arguments = action.arguments.map { argument in
                element(
                    ns, "argument",
                    [
                        leaf(ns, "name", argument.name), leaf(ns, "direction", argument.direction.rawValue),
                        leaf(ns, "relatedStateVariable", argument.relatedStateVariable),
                    ])
            }
            return element(
                ns, "action", [leaf(ns, "name", action.name.rawValue), element(ns, "argumentList", arguments)])
        }
        let variables = PresenceService.stateVariables.map { variable in
            var state = element(
                ns, "stateVariable", [leaf(ns, "name", variable.name), leaf(ns, "dataType", variable.dataType)])
            state.setAttribute(XMLName("", "sendEvents"), variable.sendEvents ? "yes" : "no")
            return state
        }
        var root = element(
            ns, "scpd",
            [specVersion(ns), element(ns, "actionList", actions), element(ns, "serviceStateTable", variables)])
        root.setAttribute(XMLName("", "configId"), String(configID))
        return XMLWriter(indent: "  ").bytes(root)
    }

    /// `<specVersion><major>1</major><minor>1</minor></specVersion>`: UDA 1.1.
    static func specVersion(_ ns: String) -> XMLElement {
        element(ns, "specVersion", [leaf(ns, "major", "1"), leaf(ns, "minor", "1")])
    }

    static func element(_ ns: String, _ local: String, _ children: [XMLElement]) -> XMLElement {
        XMLElement(XMLName(ns, local), children: children.map { .element($0) })
    }

    static func leaf(_ ns: String, _ local: String, _ text: String) -> XMLElement {
        XMLElement(XMLName(ns, local), children: [.text(text)])
    }
}
