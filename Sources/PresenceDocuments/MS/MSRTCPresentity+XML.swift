public import XMLBridge

extension MSRTCPresentity {
    /// Reads a `text/xml+msrtc.pidf` presentity ([MS-PRES] §2.2.2.9.2;
    /// example §4.11; base schema [MS-SIP] §6).
    ///
    /// ```
    /// <presentity uri xmlns="http://schemas.microsoft.com/2002/09/sip/presence">
    ///   <availability aggregate/> <activity aggregate/> <displayName displayName/>
    ///   <email email/> <phoneNumber number/>
    ///   <aggregate><states><state avail xsi:type>token</state>*</states></aggregate>
    /// </presentity>
    /// ```
    ///
    /// A QName prefix on `xsi:type` is ignored; other elements are kept verbatim
    /// in `extensions`. Lenient: a missing `uri` reads as the empty string.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        let ns = NS.msrtcPresence
        try xml.expect(XMLName(ns, "presentity"))
        self.init(uri: xml[attribute: "uri"] ?? "")
        for child in xml.elements {
            guard child.namespaceURI == ns else {
                extensions.append(child.subtree)
                continue
            }
            switch child.localName {
            case "availability": availabilityAggregate = try child.uint32Attribute("aggregate")
            case "activity": activityAggregate = try child.uint32Attribute("aggregate")
            case "displayName": displayName = child[attribute: "displayName"]
            case "email": email = child[attribute: "email"]
            case "phoneNumber": phoneNumber = child[attribute: "number"]
            case "aggregate":
                for list in child.elements(XMLName(ns, "states")) {
                    for s in list.elements(XMLName(ns, "state")) {
                        states.append(
                            AggregateState(
                                avail: try s.uint32Attribute("avail"),
                                type: s.attribute(.xsiType)?.qnameLocalPart, text: s.trimmedText))
                    }
                }
            default: extensions.append(child.subtree)
            }
        }
    }

    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Parses and decodes a `text/xml+msrtc.pidf` body.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeEvents(bytes, limits: limits) { root throws(XMLError) in try Self(cursor: root) }
    }
}
