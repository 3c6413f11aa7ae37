@testable import PresenceDocuments
import XMLBridge

extension CategoryPublish {
    /// Writes the body in the rich-presence default namespace, attributes in the §4.2.1 order.
    var xml: XMLElement {
        let ns = NS.richPresence
        let list = publications.map { p in
            var e = XMLElement.make(
                ns, "publication",
                [
                    ("categoryName", p.categoryName.rawValue), ("instance", String(p.instance)),
                    ("container", String(p.container)), ("version", String(p.version)),
                    ("expireType", p.expireType.rawValue), ("expires", p.expires.map(String.init)),
                    ("endpointId", p.endpointID),
                ])
            e.children = p.payload?.xmlNodes ?? []
            return e
        }
        return .make(ns, "publish", children: [.make(ns, "publications", [("uri", uri)], children: list)])
    }
}
