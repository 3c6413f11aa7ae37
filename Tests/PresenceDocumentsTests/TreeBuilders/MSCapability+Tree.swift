@testable import PresenceDocuments
import XMLBridge

extension MSCapability {
    /// Writes the capability as an empty element in `namespace`, attributes sorted by name.
    func xml(namespace: String) -> XMLElement {
        XMLElement(XMLName(namespace, name), attributes: xmlAttributes)
    }
}
