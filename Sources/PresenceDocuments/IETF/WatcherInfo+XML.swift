public import XMLBridge

extension WatcherInfo {
    /// Reads a `watcherinfo` document (RFC 3858 §5). Strict where the schema requires:
    /// `version` and `state` on the root, `resource` and `package` on each list, `id`, `status`
    /// and `event` on each watcher, each with its schema's values; errors carry line and column.
    /// Elements of other namespaces (the schema's extension points) are skipped.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        let ns = NS.watcherInfo
        try xml.expect(XMLName(ns, "watcherinfo"))
        guard let rawState = xml[attribute: "state"], let state = State(rawValue: rawState) else {
            throw xml.error("watcherinfo needs state=\"full\" or \"partial\" (RFC 3858 §5.2)")
        }
        self.init(version: try xml.required(UInt64.self, "version"), state: state)
        for list in xml.elements(XMLName(ns, "watcher-list")) {
            guard let resource = list[attribute: "resource"], let package = list[attribute: "package"] else {
                throw list.error("watcher-list needs resource and package (RFC 3858 §5.3)")
            }
            var watchers: [Watcher] = []
            for w in list.elements(XMLName(ns, "watcher")) {
                guard let id = w[attribute: "id"] else { throw w.error("watcher needs an id (RFC 3858 §5.4)") }
                guard let status = w[attribute: "status"].flatMap(Status.init(rawValue:)) else {
                    throw w.error("watcher status must be pending, active, waiting or terminated (RFC 3858 §5.4)")
                }
                guard let event = w[attribute: "event"].flatMap(Event.init(rawValue:)) else {
                    throw w.error("watcher event is not one of RFC 3858 §5.4")
                }
                watchers.append(
                    Watcher(
                        id: id, uri: w.trimmedText, status: status, event: event,
                        displayName: w[attribute: "display-name"],
                        expiration: try w.optional(UInt64.self, "expiration"),
                        durationSubscribed: try w.optional(UInt64.self, "duration-subscribed")))
            }
            lists.append(WatcherList(resource: resource, package: package, watchers: watchers))
        }
    }

    /// Parses and decodes an `application/watcherinfo+xml` body.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeEvents(bytes, limits: limits) { root throws(XMLError) in try Self(cursor: root) }
    }

    /// The document as UTF-8 bytes, always well-formed, in the watcherinfo default namespace.
    public func serialized() -> [UInt8] {
        let ns = NS.watcherInfo
        var w = XMLStreamWriter()
        w.startElement(ns, "watcherinfo", prefix: nil)
        w.attribute("version", String(version))
        w.attribute("state", state.rawValue)
        for list in lists {
            w.startElement(ns, "watcher-list", prefix: nil)
            w.attribute("resource", list.resource)
            w.attribute("package", list.package)
            for watcher in list.watchers {
                w.startElement(ns, "watcher", prefix: nil, indentsChildren: false)
                w.attribute("id", watcher.id)
                w.attribute("status", watcher.status.rawValue)
                w.attribute("event", watcher.event.rawValue)
                w.attribute("display-name", watcher.displayName)
                w.attribute("expiration", watcher.expiration.map { String($0) })
                w.attribute("duration-subscribed", watcher.durationSubscribed.map { String($0) })
                w.text(watcher.uri)
                w.endElement()
            }
            w.endElement()
        }
        w.endElement()
        return w.finish()
    }
}

extension XMLCursor {
    /// An unqualified attribute parsed as xs:nonNegativeInteger (or xs:unsignedLong) when
    /// present; the error is located at this element.
    fileprivate func optional(_: UInt64.Type, _ local: String) throws(XMLError) -> UInt64? {
        guard let raw = self[attribute: local] else { return nil }
        guard let value = UInt64(raw.trimmingXMLWhitespace()) else {
            throw error("attribute \(local)=\"\(raw)\" is not a non-negative integer")
        }
        return value
    }

    fileprivate func required(_ type: UInt64.Type, _ local: String) throws(XMLError) -> UInt64 {
        guard let value = try optional(type, local) else { throw error("\(name.local) needs \(local)") }
        return value
    }
}
