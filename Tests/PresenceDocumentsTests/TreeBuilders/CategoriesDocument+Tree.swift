@testable import PresenceDocuments
import XMLBridge

extension CategoriesDocument {
    /// Writes the document in the categories default namespace.
    var xml: XMLElement {
        .make(NS.categories, "categories", [("uri", uri)], children: categories.map(\.xml))
    }
}

extension Category {
    /// Writes the `category` element in the categories namespace.
    var xml: XMLElement {
        var e = XMLElement.make(
            NS.categories, "category",
            [
                ("name", name.rawValue), ("instance", instance.map(String.init)),
                ("publishTime", publishTime), ("container", container.map(String.init)),
                ("version", version.map(String.init)), ("expireType", expireType?.rawValue),
                ("expires", expires.map(String.init)), ("endpointId", endpointID),
            ])
        e.attributes += otherAttributes
        e.children = payload?.xmlNodes ?? []
        return e
    }
}

extension CategoryPayload {
    /// The child nodes to put inside a `category` or `publication` element.
    var xmlNodes: [XMLNode] {
        switch self {
        case .state(let v): [.element(v.xml)]
        case .note(let v): [.element(v.xml)]
        case .contactCard(let v): [.element(v.xml)]
        case .calendarData(let v): [.element(v.xml)]
        case .services(let v): [.element(v.xml)]
        case .device(let v): [.element(v.xml)]
        case .userProperties(let v): [.element(v.xml)]
        case .legacyInterop(let v): [.element(v.xml)]
        case .other(let nodes): nodes
        }
    }
}
