public import XMLBridge

/// The PIDF codec (RFC 3863 §4.4, with RFC 4479, 4480, 4482, 5196 and the
/// Microsoft additions of [MS-PRES] §2.2.2.8.1).
///
/// ```
/// <xs:complexType name="presence"> <xs:sequence>
///   <xs:element name="tuple" type="tns:tuple" minOccurs="0" maxOccurs="unbounded"/>
///   <xs:element name="note" type="tns:note" minOccurs="0" maxOccurs="unbounded"/>
///   <xs:any namespace="##other" processContents="lax" minOccurs="0" maxOccurs="unbounded"/>
/// </xs:sequence> <xs:attribute name="entity" type="xs:anyURI" use="required"/> </xs:complexType>
/// ```
/// Reading matches names by (namespace, local name), so any prefixes, default
/// namespaces and redundant declarations are accepted. Elements the model
/// does not hold (or cannot hold completely) are kept verbatim in the nearest
/// `extensions`. Writing puts PIDF in the default namespace, uses the prefixes
/// dm, rpid, c (CIPID), caps, lt, ep/et (pre-RFC RPID), declares on the root
/// only those in use, and orders children as the schemas require.
extension PIDFDocument {
    /// Decodes a `presence` root element (replayed as events and read by
    /// ``init(cursor:)``, the one PIDF decoder).
    ///
    /// Throws ``XMLError/Code/unexpectedContent`` located at the offending
    /// element when the root is not `{urn:ietf:params:xml:ns:pidf}presence`,
    /// when `entity` is missing, or when a tuple, person or device has no `id`.
    public init(xml root: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: root).root)
    }

    /// Decodes a `presence` element straight from parse events: no value tree
    /// is built except for the extension elements kept verbatim.
    public init(cursor root: XMLCursor) throws(XMLError) {
        guard root.hasName(NS.pidf, "presence") else {
            throw root.error("expected {\(NS.pidf)}presence as the root, found \(root.name)")
        }
        guard let entity = root[attribute: "entity"] else {
            throw root.error("missing required attribute entity (RFC 3863 §4.1.1)")
        }
        // The parts are gathered in locals and boxed once, after the loop (the same in the
        // tuple, person and status decoders).
        var tuples: [PIDFTuple] = []
        var persons: [PIDFPerson] = []
        var devices: [PIDFDevice] = []
        var notes: [PIDFNote] = []
        var cipid = CIPID.Fields()
        var linkedIdentities: LinkedIdentities?
        var cid: String?
        var extensions: [XMLElement] = []
        // Each child's cursor lent to the closure (the elements iterator hands out one it owns:
        // a retain and a release of the recording per child), as in the other decoders.
        try root.forEachElement { (child) throws(XMLError) in
            // Names tested in place with `is` (lengths first): a switch on the copied
            // (namespace, local name) pair compared the long namespace strings case by case.
            let taken: Bool
            if child.hasName(NS.pidf, "tuple") {
                tuples.append(try PIDFTuple(cursor: child))
                taken = true
            } else if child.hasName(NS.pidf, "note") {
                taken = PIDFXML.append(&notes, PIDFXML.note(child))
            } else if child.hasName(NS.dataModel, "person") {
                persons.append(try PIDFPerson(cursor: child))
                taken = true
            } else if child.hasName(NS.dataModel, "device") {
                devices.append(try PIDFDevice(cursor: child))
                taken = true
            } else if child.hasName(NS.pidf, "linked-identities") {
                taken = PIDFXML.fill(&linkedIdentities, LinkedIdentities(cursor: child))
            } else if child.hasName(NS.pidf, "cid") {
                taken = PIDFXML.fill(&cid, PIDFXML.text(child))
            } else {
                taken = cipid.absorb(child)
            }
            if !taken { extensions.append(child.subtree) }
        }
        // Each part is moved into place: the closure that filled it captured it, and a plain
        // assignment copied it (a retain and a release of each reference it holds).
        parts = SharedFields(
            Parts(
                entity: entity, tuples: consume tuples, persons: consume persons, devices: consume devices,
                notes: consume notes, cipid: CIPID(consume cipid), linkedIdentities: consume linkedIdentities,
                cid: consume cid, extensions: consume extensions))
    }

    /// Parses and decodes a PIDF body (`application/pidf+xml`) from parse events.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        try self.init(cursor: XMLParser.events(bytes, limits: limits, vocabulary: .presence).root)
    }
}

extension PIDFTuple {
    /// Reads `<tuple>` (RFC 3863 §4.1.2):
    /// ```
    /// <xs:sequence> <xs:element name="status" type="tns:status"/>
    ///   <xs:any namespace="##other" processContents="lax" minOccurs="0" maxOccurs="unbounded"/>
    ///   <xs:element name="contact" type="tns:contact" minOccurs="0"/>
    ///   <xs:element name="note" type="tns:note" minOccurs="0" maxOccurs="unbounded"/>
    ///   <xs:element name="timestamp" type="xs:dateTime" minOccurs="0"/>
    /// </xs:sequence> <xs:attribute name="id" type="xs:ID" use="required"/>
    /// ```
    /// The `##other` part holds `dm:deviceID` (RFC 4479 §5.1.2), RPID and CIPID
    /// elements, and `caps:servcaps` (RFC 5196 §5 puts it here; a servcaps
    /// inside `status` is read as well). A missing `status` reads as empty.
    init(cursor e: XMLCursor) throws(XMLError) {
        guard let id = e[attribute: "id"] else {
            throw e.error("missing required attribute id (RFC 3863 §4.1.2)")
        }
        // Gathered in locals and moved into place once, as in the document decoder.
        var status = PIDFStatus()
        var deviceIDs: [String] = []
        var contact: PIDFContact?
        var notes: [PIDFNote] = []
        var timestamp: String?
        var rpid = RPID.Fields()
        var cipid = CIPID.Fields()
        var extensions: [XMLElement] = []
        var sawStatus = false
        e.forEachElement { child in
            // Names tested in place with `is`, as in the document decoder.
            let taken: Bool
            if !sawStatus, child.hasName(NS.pidf, "status") {
                sawStatus = true
                status = PIDFStatus(cursor: child, capabilities: status.capabilities)
                taken = true
            } else if child.hasName(NS.pidf, "contact") {
                taken = PIDFXML.fill(
                    &contact,
                    PIDFXML.text(child, attributes: Self.contactAttributes).map {
                        PIDFContact(uri: $0, priority: child[attribute: "priority"])
                    })
            } else if child.hasName(NS.pidf, "note") {
                taken = PIDFXML.append(&notes, PIDFXML.note(child))
            } else if child.hasName(NS.pidf, "timestamp") {
                taken = PIDFXML.fill(&timestamp, PIDFXML.text(child))
            } else if child.hasName(NS.dataModel, "deviceID") {
                taken = PIDFXML.append(&deviceIDs, PIDFXML.text(child))
            } else if child.hasName(NS.caps, "servcaps") {
                taken = PIDFXML.fill(&status.capabilities, ServiceCapabilities(cursor: child))
            } else {
                taken =
                    rpid.absorb(child) || cipid.absorb(child)
                    || rpid.absorbLegacyActivities(child)
            }
            if !taken { extensions.append(child.subtree) }
        }
        parts = SharedFields(
            Parts(
                id: id, status: consume status, deviceIDs: consume deviceIDs, contact: consume contact,
                notes: consume notes, timestamp: consume timestamp, rpid: RPID(consume rpid),
                cipid: CIPID(consume cipid), extensions: consume extensions))
    }

    /// The attributes of `contact`.
    private static let contactAttributes = XMLNameTable(unqualified: ["priority"])
}

extension PIDFStatus {
    /// Reads `<status>` (RFC 3863 §4.1.3):
    /// ```
    /// <xs:sequence> <xs:element name="basic" type="tns:basic" minOccurs="0"/>
    ///   <xs:any namespace="##other" processContents="lax" minOccurs="0" maxOccurs="unbounded"/> </xs:sequence>
    /// ```
    /// A `basic` other than open/closed (baresip sends `unknown`; RFC 3863's
    /// schema allows only the two) is kept in `unrecognizedBasic`, not rejected.
    /// Pre-RFC RPID (`ep:activities`, [MS-PRES] §2.2.2.8.1) and RFC 4480 RPID
    /// go to `rpid`; other `rpid-status`/`rpid-tuple` elements stay in `extensions`.
    init(cursor e: XMLCursor, capabilities: ServiceCapabilities? = nil) {
        // Gathered in locals and moved into place once, as in the document decoder.
        var basic: PIDFBasic?
        var unrecognizedBasic: String?
        var capabilities = capabilities
        var rpid = RPID.Fields()
        var extensions: [XMLElement] = []
        var sawBasic = false
        e.forEachElement { child in
            if child.hasName(NS.pidf, "basic"), !sawBasic, let text = PIDFXML.text(child) {
                sawBasic = true
                if let value = PIDFBasic(rawValue: text) { basic = value } else { unrecognizedBasic = text }
            } else if child.hasName(NS.caps, "servcaps"), absent(capabilities),
                let caps = ServiceCapabilities(cursor: child)
            {
                capabilities = caps
            } else if !(rpid.absorb(child) || rpid.absorbLegacyActivities(child)) {
                extensions.append(child.subtree)
            }
        }
        self.basic = consume basic
        self.unrecognizedBasic = consume unrecognizedBasic
        self.capabilities = consume capabilities
        self.rpid = RPID(consume rpid)
        self.extensions = consume extensions
    }
}

extension PIDFPerson {
    /// Reads `dm:person` (RFC 4479 §5.1.2):
    /// ```
    /// <xs:sequence> <xs:any namespace="##other" processContents="lax" minOccurs="0" maxOccurs="unbounded"/>
    ///   <xs:element name="note" type="Note_t" minOccurs="0" maxOccurs="unbounded"/>
    ///   <xs:element name="timestamp" type="Timestamp_t" minOccurs="0"/>
    /// </xs:sequence> <xs:attribute name="id" type="xs:ID" use="required"/>
    /// ```
    init(cursor e: XMLCursor) throws(XMLError) {
        guard let id = e[attribute: "id"] else {
            throw e.error("missing required attribute id (RFC 4479 §5.1.2)")
        }
        // Gathered in locals and moved into place once, as in the document decoder.
        var rpid = RPID.Fields()
        var cipid = CIPID.Fields()
        var notes: [PIDFNote] = []
        var timestamp: String?
        var extensions: [XMLElement] = []
        e.forEachElement { child in
            // Most children are RPID or CIPID, whose readers look their names up in the
            // recording: no name or namespace is copied out.
            let taken: Bool
            if child.isIn(namespace: NS.dataModel) {
                if child.hasName(NS.dataModel, "note") {
                    taken = PIDFXML.append(&notes, PIDFXML.note(child))
                } else if child.hasName(NS.dataModel, "timestamp") {
                    taken = PIDFXML.fill(&timestamp, PIDFXML.text(child))
                } else {
                    taken = false
                }
            } else {
                taken =
                    rpid.absorb(child) || cipid.absorb(child)
                    || rpid.absorbLegacyActivities(child)
            }
            if !taken { extensions.append(child.subtree) }
        }
        parts = SharedFields(
            Parts(
                id: id, rpid: RPID(consume rpid), cipid: CIPID(consume cipid), notes: consume notes,
                timestamp: consume timestamp, extensions: consume extensions))
    }
}

extension PIDFDevice {
    /// Reads `dm:device` (RFC 4479 §5.1.2):
    /// ```
    /// <xs:sequence> <xs:any namespace="##other" processContents="lax" minOccurs="0" maxOccurs="unbounded"/>
    ///   <xs:element ref="deviceID"/>
    ///   <xs:element name="note" type="Note_t" minOccurs="0" maxOccurs="unbounded"/>
    ///   <xs:element name="timestamp" type="Timestamp_t" minOccurs="0"/>
    /// </xs:sequence> <xs:attribute name="id" type="xs:ID" use="required"/>
    /// ```
    init(cursor e: XMLCursor) throws(XMLError) {
        guard let id = e[attribute: "id"] else {
            throw e.error("missing required attribute id (RFC 4479 §5.1.2)")
        }
        self.id = id
        deviceID = nil
        var rpid = RPID.Fields()
        notes = []
        timestamp = nil
        extensions = []
        for child in e.elements {
            let taken: Bool
            switch (child.namespaceURI, child.localName) {
            case (NS.dataModel, "deviceID"): taken = PIDFXML.fill(&deviceID, PIDFXML.text(child))
            case (NS.dataModel, "note"): taken = PIDFXML.append(&notes, PIDFXML.note(child))
            case (NS.dataModel, "timestamp"): taken = PIDFXML.fill(&timestamp, PIDFXML.text(child))
            default: taken = rpid.absorb(child)
            }
            if !taken { extensions.append(child.subtree) }
        }
        self.rpid = RPID(consume rpid)
    }
}

extension LinkedIdentities {
    /// Reads Microsoft `linked-identities` ([MS-PRES] §2.2.2.8.1), in the PIDF namespace:
    /// ```
    /// <linked-identities primary-id="bob@contoso.com">
    ///   <secondary-identities> <secondary-identity>bob@skypeids.net</secondary-identity> ...
    /// ```
    /// Nil (kept verbatim) when it holds anything else.
    private static let attributes = XMLNameTable(unqualified: ["primary-id"])

    init?(cursor e: XMLCursor) {
        guard PIDFXML.hasOnlyAttributes(e, Self.attributes) else { return nil }
        self.init(primaryID: e[attribute: "primary-id"])
        for list in e.children {
            guard !list.isText else {
                if list.hasOnlyWhitespace { continue }
                return nil
            }
            guard list.hasName(NS.pidf, "secondary-identities"), list.attributeCount == 0 else { return nil }
            for item in list.children {
                if item.isText, item.hasOnlyWhitespace { continue }
                guard item.hasName(NS.pidf, "secondary-identity"), let text = PIDFXML.text(item) else { return nil }
                secondaryIdentities.append(text)
            }
        }
    }
}
