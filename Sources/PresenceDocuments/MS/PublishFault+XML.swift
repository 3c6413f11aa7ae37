public import XMLBridge

extension PublishFault {
    /// Reads a 409 Conflict body, `application/msrtc-fault+xml` ([MS-PRES]
    /// §2.2.2.2.3; examples §4.2.1 and
    /// §2.2.2.10.4). No namespace.
    ///
    /// ```
    /// <Fault> <Faultcode>Client.BadCall.WrongDelta</Faultcode>
    ///   <details> <operation index version? curVersion?> data* </operation>* </details> </Fault>
    /// ```
    ///
    /// `index` is required (1-based in the example); the data is kept as it came.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName("", "Fault"))
        self.init(faultCode: xml.element(XMLName("", "Faultcode"))?.trimmedText ?? "")
        for details in xml.elements(XMLName("", "details")) {
            for op in details.elements(XMLName("", "operation")) {
                guard let index = try op.intAttribute("index") else { throw op.error("operation without index") }
                operations.append(
                    Operation(
                        index: index, version: try op.uint32Attribute("version"),
                        currentVersion: try op.uint32Attribute("curVersion"),
                        data: try CategoryPayload.content(of: op, typed: nil)))
            }
        }
    }

    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Parses and decodes a fault body.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeEvents(bytes, limits: limits) { root throws(XMLError) in try Self(cursor: root) }
    }

    /// The fault as UTF-8 bytes (``XMLWriter`` defaults), in no namespace.
    public func serialized() -> [UInt8] {
        var w = XMLStreamWriter()
        w.startElement("", "Fault", prefix: nil)
        w.startElement("", "Faultcode", prefix: nil, indentsChildren: false)
        if !faultCode.isEmpty { w.text(faultCode) }
        w.endElement()
        w.startElement("", "details", prefix: nil)
        for op in operations {
            w.startElement("", "operation", prefix: nil, indentsChildren: !(op.data?.holdsText ?? false))
            w.attribute("index", decimal: op.index)
            w.attribute("version", decimal: op.version)
            w.attribute("curVersion", decimal: op.currentVersion)
            op.data?.write(to: &w)
            w.endElement()
        }
        w.endElement()
        w.endElement()
        return w.finish()
    }
}
