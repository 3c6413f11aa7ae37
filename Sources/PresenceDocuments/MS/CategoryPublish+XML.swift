public import XMLBridge

extension CategoryPublish {
    /// Reads a publish SERVICE body, `application/msrtc-category-publish+xml`
    /// ([MS-PRES] §2.2.2.2.1, schema §6.10).
    ///
    /// ```
    /// <publish xmlns=".../2006/09/sip/rich-presence"> <publications uri>
    ///   <publication categoryName instance container version expireType expires? endpointId?>
    ///     data? </publication>* </publications> </publish>
    /// ```
    ///
    /// `categoryName`, `instance`, `container`, `version` and `expireType` are
    /// required (errors located at the publication); the data is read with the
    /// ``CategoryPayload`` codec, an element holding only white space has none.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        let ns = NS.richPresence
        try xml.expect(XMLName(ns, "publish"))
        guard let list = xml.element(XMLName(ns, "publications")) else {
            throw xml.error("publish without publications")
        }
        self.init(uri: list[attribute: "uri"] ?? "")
        for p in list.elements(XMLName(ns, "publication")) {
            guard let name = p[attribute: "categoryName"] else { throw p.error("publication without categoryName") }
            guard let instance = try p.uint32Attribute("instance"), let container = try p.uint32Attribute("container"),
                let version = try p.uint32Attribute("version")
            else { throw p.error("publication needs instance, container and version") }
            let rawExpireType = p[attribute: "expireType"] ?? ""
            guard let expireType = ExpireType(rawValue: rawExpireType) else {
                throw p.error("expireType \"\(rawExpireType)\" is not static, endpoint, user or time")
            }
            let categoryName = CategoryName(rawValue: name)
            publications.append(
                Publication(
                    categoryName: categoryName, instance: instance, container: container, version: version,
                    expireType: expireType, expires: try p.uint32Attribute("expires"),
                    endpointID: p[attribute: "endpointId"],
                    payload: try CategoryPayload.content(of: p, typed: CategoryPayload.typed(categoryName))))
        }
    }

    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Parses and decodes a publish body.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeEvents(bytes, limits: limits) { root throws(XMLError) in try Self(cursor: root) }
    }

    /// The body as UTF-8 bytes (``XMLWriter`` defaults): the rich-presence default namespace,
    /// attributes in the §4.2.1 order, each payload as the categories document writes it.
    public func serialized() -> [UInt8] {
        let ns = NS.richPresence
        var w = XMLStreamWriter(namespaces: .microsoft)
        w.startElement(ns, "publish", prefix: nil)
        w.startElement(ns, "publications", prefix: nil)
        w.attribute("uri", uri)
        for p in publications {
            w.startElement(ns, "publication", prefix: nil, indentsChildren: !(p.payload?.holdsText ?? false))
            w.attribute("categoryName", p.categoryName.rawValue)
            w.attribute("instance", decimal: Int(p.instance))
            w.attribute("container", decimal: Int(p.container))
            w.attribute("version", decimal: Int(p.version))
            w.attribute("expireType", p.expireType.rawValue)
            w.attribute("expires", decimal: p.expires)
            w.attribute("endpointId", p.endpointID)
            p.payload?.write(to: &w)
            w.endElement()
        }
        w.endElement()
        w.endElement()
        return w.finish()
    }
}
