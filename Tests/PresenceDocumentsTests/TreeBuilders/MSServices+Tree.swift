@testable import PresenceDocuments
import XMLBridge

extension MSServices {
    /// Writes `services` in its default namespace.
    var xml: XMLElement {
        let ns = NS.services
        var e = XMLElement.make(ns, "services")
        for s in services {
            var service = XMLElement.make(ns, "service", [("uri", s.uri)])
            if !s.capabilities.isEmpty {
                service.append(.make(ns, "capabilities", children: s.capabilities.map { $0.xml(namespace: ns) }))
            }
            for x in s.extensions { service.append(x) }
            e.append(service)
        }
        for x in extensions { e.append(x) }
        return e
    }
}
