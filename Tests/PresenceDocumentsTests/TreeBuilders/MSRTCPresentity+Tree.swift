@testable import PresenceDocuments
import XMLBridge

extension MSRTCPresentity {
    /// Writes the presentity as §4.11 does: default namespace, `xmlns:xsi` on
    /// the root, elements in the order availability, activity, displayName,
    /// email, phoneNumber, aggregate (then extensions).
    var xml: XMLElement {
        let ns = NS.msrtcPresence
        var e = XMLElement.make(ns, "presentity", [("uri", uri)])
        e.namespaceDeclarations = [(nil, ns), ("xsi", NS.xsi)]
        if let a = availabilityAggregate { e.append(.make(ns, "availability", [("aggregate", String(a))])) }
        if let a = activityAggregate { e.append(.make(ns, "activity", [("aggregate", String(a))])) }
        if let displayName { e.append(.make(ns, "displayName", [("displayName", displayName)])) }
        if let email { e.append(.make(ns, "email", [("email", email)])) }
        if let phoneNumber { e.append(.make(ns, "phoneNumber", [("number", phoneNumber)])) }
        if !states.isEmpty {
            let list = states.map { s in
                var state = XMLElement.text(ns, "state", s.text, [("avail", s.avail.map(String.init))])
                if let type = s.type { state.attributes.append(XMLAttribute(.xsiType, type, prefix: "xsi")) }
                return state
            }
            e.append(.make(ns, "aggregate", children: [.make(ns, "states", children: list)]))
        }
        for x in extensions { e.append(x) }
        return e
    }
}
