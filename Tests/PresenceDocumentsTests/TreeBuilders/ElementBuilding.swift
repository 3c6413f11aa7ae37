@testable import PresenceDocuments
import XMLBridge

// The element-tree builders of every document (`xml`, `xmlNodes`, `xmlElements`) live in
// this directory: the product writes its documents directly (`serialized()`), and these
// builders, written through `XMLWriter`, are the oracle DirectWriterTests compares with.
// Element construction shared by the builders follows.

extension XMLElement {
    /// Builds an element; attributes with a `nil` value are left out.
    static func make(
        _ namespace: String, _ local: String, _ attributes: [(String, String?)] = [],
        children: [XMLElement] = [], prefix: String? = nil
    ) -> XMLElement {
        XMLElement(
            XMLName(namespace, local),
            attributes: attributes.compactMap { name, value in value.map { XMLAttribute(XMLName("", name), $0) } },
            children: children.map(XMLNode.element),
            prefix: prefix)
    }

    /// Builds an element holding text (no text node when the text is empty).
    static func text(
        _ namespace: String, _ local: String, _ text: String, _ attributes: [(String, String?)] = []
    ) -> XMLElement {
        var e = make(namespace, local, attributes)
        if !text.isEmpty { e.children = [.text(text)] }
        return e
    }
}

extension ContactCard.LocalizedText {
    /// Writes an LCIDType element.
    func element(_ namespace: String, _ local: String) -> XMLElement {
        XMLElement.text(namespace, local, text, [("LCID", lcid)])
    }
}
