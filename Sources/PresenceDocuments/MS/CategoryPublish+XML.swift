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
    public init(xml: XMLElement) throws(XMLError) {
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
            let empty = p.children.allSatisfy(\.isWhitespaceText)
            publications.append(
                Publication(
                    categoryName: categoryName, instance: instance, container: container, version: version,
                    expireType: expireType, expires: try p.uint32Attribute("expires"),
                    endpointID: p[attribute: "endpointId"],
                    payload: empty ? nil : try CategoryPayload(categoryChildren: p.children, name: categoryName)))
        }
    }

    /// Parses and decodes a publish body.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeDocument(bytes, limits: limits) { root throws(XMLError) in try Self(xml: root) }
    }

    /// Writes the body in the rich-presence default namespace, attributes in the §4.2.1 order.
    public var xml: XMLElement {
        let ns = NS.richPresence
        let list = publications.map { p in
            var e = XMLElement.make(
                ns, "publication",
                [
                    ("categoryName", p.categoryName.rawValue), ("instance", String(p.instance)),
                    ("container", String(p.container)), ("version", String(p.version)),
                    ("expireType", p.expireType.rawValue), ("expires", p.expires.map(String.init)),
                    ("endpointId", p.endpointID),
                ])
            e.children = p.payload?.xmlNodes ?? []
            return e
        }
        return .make(ns, "publish", children: [.make(ns, "publications", [("uri", uri)], children: list)])
    }

    /// The body as UTF-8 bytes (``XMLWriter`` defaults).
    public func serialized() -> [UInt8] { XMLWriter().bytes(xml) }
}
