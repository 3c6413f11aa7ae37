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
    /// `index` is required (1-based in the example); the data is kept verbatim.
    public init(xml: XMLElement) throws(XMLError) {
        try xml.expect(XMLName("", "Fault"))
        self.init(faultCode: xml.element(XMLName("", "Faultcode"))?.trimmedText ?? "")
        for details in xml.elements(XMLName("", "details")) {
            for op in details.elements(XMLName("", "operation")) {
                guard let index = try op.intAttribute("index") else { throw op.error("operation without index") }
                operations.append(
                    Operation(
                        index: index, version: try op.uint32Attribute("version"),
                        currentVersion: try op.uint32Attribute("curVersion"), data: op.elements.map(\.verbatim)))
            }
        }
    }

    /// Parses and decodes a fault body.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeDocument(bytes, limits: limits) { root throws(XMLError) in try Self(xml: root) }
    }

    /// Writes the fault (no namespace).
    public var xml: XMLElement {
        let ops = operations.map { op in
            XMLElement.make(
                "", "operation",
                [
                    ("index", String(op.index)), ("version", op.version.map(String.init)),
                    ("curVersion", op.currentVersion.map(String.init)),
                ], children: op.data)
        }
        return .make("", "Fault", children: [.text("", "Faultcode", faultCode), .make("", "details", children: ops)])
    }

    /// The body as UTF-8 bytes (``XMLWriter`` defaults).
    public func serialized() -> [UInt8] { XMLWriter().bytes(xml) }
}
