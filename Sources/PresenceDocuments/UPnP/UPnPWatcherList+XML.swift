public import XMLBridge

extension UPnPWatcherList {
    /// Reads a `watchers` root (WatcherList). Strict where the schema is: the root's name and
    /// namespace, `version` 0.1, each watcher's checked `uri`, `status` (RFC 3858 §5.4) and
    /// `decision` (RFC 5025 §3.2.1) values when present, no unknown unqualified attribute, no
    /// text; elements of other namespaces are extension points, skipped.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName(NS.upnpPresence, "watchers"))
        try xml.upnpOnlyAttributes(["version"])
        try xml.upnpVersion()
        var watchers: [UPnPWatcher] = []
        try xml.upnpChildren { (child) throws(XMLError) in
            guard child.is(NS.upnpPresence, "watcher") else { return false }
            try child.upnpOnlyAttributes(["uri", "status", "decision"])
            let uri = try child.upnpURI()
            let status = try child.upnpEnumerated(
                UPnPWatcher.Status.self, "status", required: false,
                values: "pending, active, waiting, terminated (RFC 3858 §5.4)")
            let decision = try child.upnpEnumerated(
                UPnPWatcher.Decision.self, "decision", required: false,
                values: "allow, block, polite-block (RFC 5025 §3.2.1)")
            try child.upnpChildren { _ throws(XMLError) in false }
            watchers.append(UPnPWatcher(uri: uri, status: status, decision: decision))
            return true
        }
        self.init(watchers: watchers)
    }

    /// Parses and reads a WatcherList string.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeEvents(bytes, limits: limits) { root throws(XMLError) in try Self(cursor: root) }
    }

    /// The document as UTF-8 bytes, in the payloads' default namespace.
    public func serialized() -> [UInt8] {
        var w = XMLStreamWriter()
        w.startElement(NS.upnpPresence, "watchers", prefix: nil)
        w.attribute("version", UPnPPresencePayload.version)
        for watcher in watchers {
            w.startElement(NS.upnpPresence, "watcher", prefix: nil, indentsChildren: false)
            w.attribute("uri", watcher.uri)
            w.attribute("status", watcher.status?.rawValue)
            w.attribute("decision", watcher.decision?.rawValue)
            w.endElement()
        }
        w.endElement()
        return w.finish()
    }
}
