@testable import PresenceDocuments
import XMLBridge

extension RLMIList {
    /// Writes the list (always well-formed) in the rlmi default namespace.
    var xml: XMLElement {
        let ns = NS.rlmi
        func nameElements(_ names: [PIDFNote]) -> [XMLElement] {
            names.map { n in
                var e = XMLElement.text(ns, "name", n.text)
                if let lang = n.lang { e.attributes.append(XMLAttribute(XMLName(NS.xml, "lang"), lang, prefix: "xml")) }
                return e
            }
        }
        var e = XMLElement.make(
            ns, "list",
            [
                ("uri", uri), ("version", String(version)), ("fullState", fullState.xsd), ("cid", cid),
            ])
        for n in nameElements(names) { e.append(n) }
        for r in resources {
            var resource = XMLElement.make(ns, "resource", [("uri", r.uri)], children: nameElements(r.names))
            for i in r.instances {
                resource.append(
                    .make(
                        ns, "instance",
                        [
                            ("id", i.id), ("state", i.state.rawValue), ("reason", i.reason), ("cid", i.cid),
                            ("statusCode", i.statusCode.map(String.init)), ("poolFqdn", i.poolFqdn),
                        ]))
            }
            e.append(resource)
        }
        return e
    }
}
