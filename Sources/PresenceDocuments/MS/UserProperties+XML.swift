public import XMLBridge

extension UserProperties {
    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads `userProperties` ([MS-PRES] §2.2.2.7.4, schema §7.6).
    ///
    /// ```
    /// <userProperties> <lines> <line lineType lineServer?>uri</line>* </lines>?
    ///   telephonyMode? facsimileTelephoneNumber? streetAddress? l? st? countryCode?
    ///   postalCode? wWWHomePage? exumEnabled? exumURL? acpInformation* ... </userProperties>
    /// ```
    ///
    /// The element is in the categories namespace, usually inherited from the
    /// enclosing `category`; lenient: no namespace (a bare `<category>` fragment,
    /// §4.13) is accepted too. Children in the element's own namespace holding
    /// only text become `fields` (trimmed); structured children go to `extensions`.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        let ns = xml.name.namespace
        guard xml.name.local == "userProperties", ns == NS.categories || ns.isEmpty else {
            throw xml.error("expected {\(NS.categories)}userProperties, found \(xml.name)")
        }
        self.init()
        for child in xml.elements {
            if child.name == XMLName(ns, "lines") {
                for line in child.elements(XMLName(ns, "line")) {
                    lines.append(
                        Line(
                            lineType: line[attribute: "lineType"], lineServer: line[attribute: "lineServer"],
                            uri: line.trimmedText))
                }
            } else if child.name.namespace == ns && !child.hasElementChildren && child.attributeCount == 0 {
                fields.append(Field(child.name.local, child.trimmedText))
            } else if child.name != .ctDelimiter && child.name != .ctEnd {
                extensions.append(child.subtree)
            }
        }
    }
}
