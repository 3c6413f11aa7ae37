@testable import PresenceDocuments
import XMLBridge

extension MSState {
    /// Writes the `state` element as the [MS-PRES] examples do: default
    /// namespace, `xmlns:xsi` declared on the element, and the delimited block
    /// (`<delimiter xmlns=".../commontypes"/>` ... `<end .../>`) only when one of
    /// its fields is set. Extensions go after the meeting fields.
    var xml: XMLElement {
        let ns = NS.state
        var e = XMLElement.make(
            ns, "state",
            [
                ("manual", manual?.xsd), ("startTime", startTime), ("uri", uri), ("endpointId", endpointID),
                ("lastActive", lastActive), ("majorVersion", majorVersion), ("minorVersion", minorVersion),
            ])
        e.attributes.insert(XMLAttribute(.xsiType, type.rawValue, prefix: "xsi"), at: 0)
        e.namespaceDeclarations = [(nil, ns), ("xsi", NS.xsi)]
        if let availability { e.append(.text(ns, "availability", String(availability))) }
        for activity in activities { e.append(activity.xml) }
        if let endpointLocation { e.append(.text(ns, "endpointLocation", endpointLocation)) }
        if let meetingSubject { e.append(.text(ns, "meetingSubject", meetingSubject)) }
        if let meetingLocation { e.append(.text(ns, "meetingLocation", meetingLocation)) }
        for x in extensions { e.append(x) }
        let delimited =
            timeZoneBias != nil || timeZoneName != nil || timeZoneAbbreviation != nil
            || device != nil || treatLocationAsProximate != nil
        if delimited {
            e.append(XMLElement(.ctDelimiter))
            if let timeZoneBias { e.append(.text(ns, "timeZoneBias", String(timeZoneBias))) }
            if let timeZoneName { e.append(.text(ns, "timeZoneName", timeZoneName)) }
            if let timeZoneAbbreviation { e.append(.text(ns, "timeZoneAbbreviation", timeZoneAbbreviation)) }
            if let device { e.append(.text(ns, "device", device)) }
            if let treatLocationAsProximate {
                e.append(.text(ns, "treatLocationAsProximate", treatLocationAsProximate.xsd))
            }
            e.append(XMLElement(.ctEnd))
        }
        return e
    }
}

extension MSActivity {
    /// Writes the `activity` element.
    var xml: XMLElement {
        var e = XMLElement.make(
            NS.state, "activity",
            [
                ("token", token?.rawValue), ("minAvailability", minAvailability.map(String.init)),
                ("maxAvailability", maxAvailability.map(String.init)),
            ])
        for c in custom {
            e.append(.text(NS.state, "custom", c.text, [("LCID", c.lcid), ("updated", c.updated)]))
        }
        return e
    }
}

extension LegacyInterop {
    /// Writes `legacyInterop` in the categories namespace.
    var xml: XMLElement {
        .make(
            NS.categories, "legacyInterop",
            [
                ("availability", availability.map(String.init)), ("token", token?.rawValue),
                ("dndState", dndState?.xsd),
            ])
    }
}
