public import XMLBridge

extension BatchSubscribe {
    /// Reads a category SUBSCRIBE body, `application/msrtc-adrl-categorylist+xml`
    /// ([MS-PRES] §2.2.2.4.1, schemas §6.8).
    ///
    /// ```
    /// <batchSub xmlns=".../2006/01/sip/batch-subscribe" uri? name?>
    ///   <action name="subscribe|unsubscribe" id?>
    ///     <adhocList> <resource uri> context? </resource>* </adhocList>
    ///     <categoryList xmlns=".../2006/09/sip/categorylist"> <category name/>* </categoryList>
    ///   </action>*
    /// </batchSub>
    /// ```
    ///
    /// `batchSub/@uri`, `@name` and `action/@id` are read although schema §6.8
    /// omits them (every spec example carries them; docs/flows.md, "Schema defects"). `context` is kept
    /// verbatim. An action name other than subscribe/unsubscribe is an error.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        let ns = NS.batchSubscribe
        try xml.expect(XMLName(ns, "batchSub"))
        self.init(uri: xml[attribute: "uri"], name: xml[attribute: "name"])
        for a in xml.elements(XMLName(ns, "action")) {
            let raw = a[attribute: "name"] ?? ""
            guard let kind = Action.Kind(rawValue: raw.trimmingXMLWhitespace()) else {
                throw a.error("action name \"\(raw)\" is neither subscribe nor unsubscribe")
            }
            var action = Action(kind: kind, id: a[attribute: "id"])
            for list in a.elements(XMLName(ns, "adhocList")) {
                for r in list.elements(XMLName(ns, "resource")) {
                    guard let uri = r[attribute: "uri"] else { throw r.error("resource without a uri attribute") }
                    action.resources.append(Resource(uri: uri, context: r.element(XMLName(ns, "context"))?.subtree))
                }
            }
            for list in a.elements(XMLName(NS.categoryList, "categoryList")) {
                for c in list.elements(XMLName(NS.categoryList, "category")) {
                    guard let name = c[attribute: "name"] else { throw c.error("category without a name attribute") }
                    action.categories.append(CategoryName(rawValue: name))
                }
            }
            actions.append(action)
        }
    }

    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Parses and decodes a batchSub body.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeEvents(bytes, limits: limits) { root throws(XMLError) in try Self(cursor: root) }
    }

    /// The body as UTF-8 bytes (``XMLWriter`` defaults), as the [MS-PRES] §4.5 examples write
    /// it: the categoryList in its own default namespace.
    public func serialized() -> [UInt8] {
        let ns = NS.batchSubscribe
        var w = XMLStreamWriter()
        w.startElement(ns, "batchSub", prefix: nil)
        w.attribute("uri", uri)
        w.attribute("name", name)
        for a in actions {
            w.startElement(ns, "action", prefix: nil)
            w.attribute("name", a.kind.rawValue)
            w.attribute("id", a.id)
            w.startElement(ns, "adhocList", prefix: nil)
            for r in a.resources {
                w.startElement(ns, "resource", prefix: nil)
                w.attribute("uri", r.uri)
                if let context = r.context { w.element(context) }
                w.endElement()
            }
            w.endElement()
            w.startElement(NS.categoryList, "categoryList", prefix: nil)
            for c in a.categories {
                w.startElement(NS.categoryList, "category", prefix: nil)
                w.attribute("name", c.rawValue)
                w.endElement()
            }
            w.endElement()
            w.endElement()
        }
        w.endElement()
        return w.finish()
    }
}
