import XMLBridge

/// The body of an event message (UDA 1.1 §4.3.2):
/// `<e:propertyset xmlns:e="urn:schemas-upnp-org:event-1-0"><e:property><name>value</name>…`.
public enum PropertySet {
    public static let namespace = "urn:schemas-upnp-org:event-1-0"

    public static func body(_ properties: [(EventedVariable, String)]) -> [UInt8] {
        var set = DescriptionDocuments.element(namespace, "propertyset", [])
        set.prefix = "e"
        for (variable, value) in properties {
            var property = DescriptionDocuments.element(
                namespace, "property", [DescriptionDocuments.leaf("", variable.name, value)])
            property.prefix = "e"
            set.append(property)
        }
        return XMLWriter(indent: nil, declaration: true).bytes(set)
    }
}
