@testable import PresenceDocuments
import XMLBridge

extension BatchSubscribe {
    /// Writes the body as the §4.5 examples do (categoryList in its own default namespace).
    var xml: XMLElement {
        let ns = NS.batchSubscribe
        return .make(
            ns, "batchSub", [("uri", uri), ("name", name)],
            children: actions.map { a in
                let resources = a.resources.map { r in
                    XMLElement.make(ns, "resource", [("uri", r.uri)], children: r.context.map { [$0] } ?? [])
                }
                let categories = a.categories.map {
                    XMLElement.make(NS.categoryList, "category", [("name", $0.rawValue)])
                }
                return .make(
                    ns, "action", [("name", a.kind.rawValue), ("id", a.id)],
                    children: [
                        .make(ns, "adhocList", children: resources),
                        .make(NS.categoryList, "categoryList", children: categories),
                    ])
            })
    }
}
