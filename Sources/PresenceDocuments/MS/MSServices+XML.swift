public import XMLBridge

extension MSServices {
    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads `services` ([MS-PRES] §2.2.2.7.3, schema §7.5).
    ///
    /// ```
    /// <services> <service uri> <capabilities> capability* </capabilities> ... </service>* </services>
    /// ```
    ///
    /// Lenient: an empty `services` (§4.4.2, schema minOccurs=1) is accepted.
    /// Every child of `capabilities` becomes an ``MSCapability``; other
    /// children of `service` and of `services` are kept verbatim.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName(NS.services, "services"))
        try self.init(servicesElement: xml)
    }

    /// ``init(cursor:)`` for an element whose name is known to be right (the decoder of the
    /// enclosing element has matched it), without testing it again.
    init(servicesElement xml: XMLCursor) throws(XMLError) {
        let ns = NS.services
        // Each part gathered in locals and its value made once at the end: made first and
        // filled in from a closure, a value was built aside and copied into place.
        var services: [Service] = []
        var extensions: [XMLElement] = []
        xml.forEachElement { child in
            // Names tested in place (`is`), not built and compared as XMLName values.
            guard child.hasName(ns, "service") else {
                if child.name != .ctDelimiter && child.name != .ctEnd { extensions.append(child.subtree) }
                return
            }
            var capabilities: [MSCapability] = []
            var serviceExtensions: [XMLElement] = []
            child.forEachElement { part in
                if part.hasName(ns, "capabilities") {
                    // Decoded straight into the service's array (a mapped array was copied in).
                    capabilities.appendCapabilities(of: part)
                } else {
                    serviceExtensions.append(part.subtree)
                }
            }
            services.append(
                Service(
                    uri: child[attribute: "uri"] ?? "", capabilities: consume capabilities,
                    extensions: consume serviceExtensions))
        }
        self.init(services: consume services, extensions: consume extensions)
    }
}
