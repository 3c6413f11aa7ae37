public import XMLBridge

extension MSDevice {
    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads `device` ([MS-PRES] §2.2.2.7.2, schema §7.4).
    ///
    /// ```
    /// <device endpointId> <capabilities uri preferred?> capability* </capabilities>*
    ///   timezone? machineName? </device>
    /// ```
    ///
    /// Lenient: capability elements holding white space (the spec's own
    /// examples) are accepted; unknown children go to `extensions`.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        let ns = NS.device
        try xml.expect(XMLName(ns, "device"))
        self.init(endpointID: xml[attribute: "endpointId"])
        for child in xml.elements {
            switch child.name {
            case XMLName(ns, "capabilities"):
                var items: [MSCapability] = []
                items.appendCapabilities(of: child)
                capabilities.append(
                    Capabilities(
                        uri: child[attribute: "uri"], preferred: try child.boolAttribute("preferred"), items: items))
            case XMLName(ns, "timezone"): timezone = child.trimmedText
            case XMLName(ns, "machineName"): machineName = child.trimmedText
            case .ctDelimiter, .ctEnd: continue
            default: extensions.append(child.subtree)
            }
        }
    }
}
