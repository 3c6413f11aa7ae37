public import XMLBridge

extension UPnPContactID {
    /// Reads a `contact` root (ContactId): the payloads' namespace, a checked `uri`, no other
    /// unqualified attribute, and only elements of other namespaces inside (skipped).
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName(NS.upnpPresence, "contact"))
        try xml.upnpOnlyAttributes(["uri"])
        let uri = try xml.upnpURI()
        try xml.upnpChildren { _ throws(XMLError) in false }
        self.uri = uri
    }

    /// Parses and reads a ContactId string.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeEvents(bytes, limits: limits) { root throws(XMLError) in try Self(cursor: root) }
    }

    /// The document as UTF-8 bytes, in the payloads' default namespace.
    public func serialized() -> [UInt8] {
        var w = XMLStreamWriter()
        w.startElement(NS.upnpPresence, "contact", prefix: nil, indentsChildren: false)
        w.attribute("uri", uri)
        w.endElement()
        return w.finish()
    }
}
