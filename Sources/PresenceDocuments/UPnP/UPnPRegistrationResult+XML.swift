public import XMLBridge

extension UPnPRegistrationResult {
    /// Reads a `registration` root (RegistrationResult). Strict where the schema is: the root's
    /// name and namespace, a checked `uri`, `result` one of subscribed, ended, refused, `status`
    /// in 100...699 and `expires` an `xs:unsignedInt` when present, no unknown unqualified
    /// attribute; elements of other namespaces inside are skipped.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName(NS.upnpPresence, "registration"))
        try xml.upnpOnlyAttributes(["uri", "result", "status", "expires"])
        let uri = try xml.upnpURI()
        guard
            let result = try xml.upnpEnumerated(
                Result.self, "result", required: true, values: "subscribed, ended, refused")
        else { throw xml.error("needs a result attribute") }
        let status = try xml.upnpInteger("status", in: 100...699)
        let expires = try xml.upnpInteger("expires", in: 0...Int(UInt32.max))
        try xml.upnpChildren { _ throws(XMLError) in false }
        self.init(uri: uri, result: result, status: status, expires: expires)
    }

    /// Parses and reads a RegistrationResult string.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeEvents(bytes, limits: limits) { root throws(XMLError) in try Self(cursor: root) }
    }

    /// The document as UTF-8 bytes, in the payloads' default namespace.
    public func serialized() -> [UInt8] {
        var w = XMLStreamWriter()
        w.startElement(NS.upnpPresence, "registration", prefix: nil, indentsChildren: false)
        w.attribute("uri", uri)
        w.attribute("result", result.rawValue)
        if let status { w.attribute("status", decimal: status) }
        if let expires { w.attribute("expires", decimal: expires) }
        w.endElement()
        return w.finish()
    }
}
