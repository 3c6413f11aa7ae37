public import XMLBridge

extension UPnPContactPresenceList {
    /// Reads a `contacts` root (PresenceOfContactsList). Strict where the schema is: the root's
    /// name and namespace, `version` 0.1, each contact's checked `uri`, its `state` (RFC 6665
    /// §4.1.3 values) and `band` (a token), no unknown unqualified attribute, no text. A contact
    /// holds at most one PIDF `presence` (read by ``PIDFDocument/init(cursor:)``, its errors
    /// located as well); other elements of other namespaces are extension points, skipped.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName(NS.upnpPresence, "contacts"))
        try xml.upnpOnlyAttributes(["version"])
        try xml.upnpVersion()
        var contacts: [UPnPContactPresence] = []
        try xml.upnpChildren { (child) throws(XMLError) in
            guard child.is(NS.upnpPresence, "contact") else { return false }
            contacts.append(try UPnPContactPresence(cursor: child))
            return true
        }
        self.init(contacts: contacts)
    }

    /// Parses and reads a PresenceOfContactsList string.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeEvents(bytes, limits: limits) { root throws(XMLError) in try Self(cursor: root) }
    }

    /// The document as UTF-8 bytes, in the payloads' default namespace; each presence in the
    /// PIDF default namespace, written as ``PIDFDocument/serialized()`` writes it.
    public func serialized() -> [UInt8] {
        var w = XMLStreamWriter(namespaces: PIDFXML.namespaces)
        w.startElement(NS.upnpPresence, "contacts", prefix: nil)
        w.attribute("version", UPnPPresencePayload.version)
        for contact in contacts {
            w.startElement(NS.upnpPresence, "contact", prefix: nil)
            w.attribute("uri", contact.uri)
            w.attribute("state", contact.state.rawValue)
            w.attribute("band", contact.band)
            contact.presence?.write(to: &w)
            w.endElement()
        }
        w.endElement()
        return w.finish()
    }
}

extension UPnPContactPresence {
    /// Reads one `contact` of a `contacts` document.
    init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.upnpOnlyAttributes(["uri", "state", "band"])
        let uri = try xml.upnpURI()
        let state = try xml.upnpEnumerated(
            UPnPRegistrationState.self, "state", required: true,
            values: "pending, active, terminated (RFC 6665 §4.1.3)")
        var band: String?
        if let raw = xml[attribute: "band"] {
            let token = raw.trimmingXMLWhitespace()
            guard UPnPPresencePayload.isBandToken(token) else {
                throw xml.error("band=\"\(raw)\" is not a band token (lower-case words joined by -)")
            }
            band = token
        }
        var presence: PIDFDocument?
        try xml.upnpChildren { (child) throws(XMLError) in
            guard child.is(NS.pidf, "presence") else { return false }
            guard presence == nil else { throw child.error("a contact holds at most one presence document") }
            presence = try PIDFDocument(cursor: child)
            return true
        }
        // `state` is required, so upnpEnumerated returned a value or threw.
        guard let state else { throw xml.error("needs a state attribute") }
        self.init(uri: uri, state: state, band: band, presence: presence)
    }
}
