@testable import PresenceDocuments
import XMLBridge

extension MSDevice {
    /// Writes `device` in its default namespace.
    var xml: XMLElement {
        let ns = NS.device
        var e = XMLElement.make(ns, "device", [("endpointId", endpointID)])
        for c in capabilities {
            e.append(
                .make(
                    ns, "capabilities", [("preferred", c.preferred?.xsd), ("uri", c.uri)],
                    children: c.items.map { $0.xml(namespace: ns) }))
        }
        if let timezone { e.append(.text(ns, "timezone", timezone)) }
        if let machineName { e.append(.text(ns, "machineName", machineName)) }
        for x in extensions { e.append(x) }
        return e
    }
}
