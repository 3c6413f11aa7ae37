public import XMLBridge

extension MSState {
    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads a `state` element ([MS-PRES] §2.2.2.7.1, schema §7.2).
    ///
    /// ```
    /// <state xsi:type="aggregateState" manual? startTime? uri? endpointId? lastActive?
    ///        majorVersion? minorVersion?>
    ///   availability? activity* endpointLocation? extension? meetingSubject? meetingLocation?
    ///   [ct:delimiter timeZoneBias? timeZoneName? timeZoneAbbreviation? device?
    ///    treatLocationAsProximate? ct:end?]
    /// </state>
    /// ```
    ///
    /// `xsi:type` is mandatory (the schema type is abstract); a QName prefix on
    /// its value is ignored. `availability` and `timeZoneBias` must be numbers
    /// (errors are located at the offending element). Lenient: the fields of
    /// the delimited block are accepted with or without the `ct:delimiter`, and
    /// every other element (including `extension` and unknown elements after a
    /// delimiter, which the schema's forward-compatibility rule says to skip) is
    /// kept verbatim in `extensions`. Undeclared attributes are ignored.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName(NS.state, "state"))
        try self.init(stateElement: xml)
    }

    /// ``init(cursor:)`` for an element whose name is known to be right (the decoder of the
    /// enclosing element has matched it), without testing it again.
    init(stateElement xml: XMLCursor) throws(XMLError) {
        // The fields are gathered first and the state made once: each setter of an
        // out-of-line field checks (and for an absent one builds) the box on its own.
        // Attributes are read in one pass; the first of a repeated name counts, as with a lookup.
        var type: XMLCursor.AttributeValue?
        var manual: String?
        var startTime: String?
        var uri: String?
        var endpointID: String?
        var lastActive: String?
        var majorVersion: String?
        var minorVersion: String?
        // The names are looked up in the recording, not copied out to be compared.
        xml.forEachAttributeValue(in: Self.attributeNames) { attribute, value in
            switch attribute {
            case .type?: if type == nil { type = value }
            case .manual?: if manual == nil { manual = xml.string(value) }
            case .startTime?: if startTime == nil { startTime = xml.string(value) }
            case .uri?: if uri == nil { uri = xml.string(value) }
            case .endpointId?: if endpointID == nil { endpointID = xml.string(value) }
            case .lastActive?: if lastActive == nil { lastActive = xml.string(value) }
            case .majorVersion?: if majorVersion == nil { majorVersion = xml.string(value) }
            case .minorVersion?: if minorVersion == nil { minorVersion = xml.string(value) }
            case nil: break
            }
        }
        guard let type else {
            throw xml.error("xsi:type is mandatory on state ([MS-PRES] §2.2.2.7.1)")
        }
        let isManual = try xml.boolAttribute("manual", raw: manual)
        var availability: UInt32?
        var activities: [MSActivity] = []
        var extensions: [XMLElement] = []
        var endpointLocation: String?
        var meetingSubject: String?
        var meetingLocation: String?
        var timeZoneBias: Int?
        var timeZoneName: String?
        var timeZoneAbbreviation: String?
        var device: String?
        var treatLocationAsProximate: Bool?
        try xml.forEachElement { (child) throws(XMLError) in
            // Each child's name looked up in the recording, not copied out and compared with
            // one name after another.
            switch child.match(in: Self.childNames) {
            case .availability?: availability = try child.uint32Text()
            case .activity?: activities.append(try MSActivity(activityElement: child))
            case .endpointLocation?: endpointLocation = child.trimmedText
            case .meetingSubject?: meetingSubject = child.trimmedText
            case .meetingLocation?: meetingLocation = child.trimmedText
            case .timeZoneBias?: timeZoneBias = try child.intText()
            case .timeZoneName?: timeZoneName = child.trimmedText
            case .timeZoneAbbreviation?: timeZoneAbbreviation = child.trimmedText
            case .device?: device = child.trimmedText
            case .treatLocationAsProximate?: treatLocationAsProximate = try child.boolText()
            case .delimiter?, .end?: break
            case nil: extensions.append(child.subtree)
            }
        }
        // Each part the closure filled moved in (consume): passing a captured local copied it.
        self.init(
            type: StateType(rawValue: xml.qnameLocalPart(type)), manual: isManual, startTime: consume startTime,
            uri: consume uri, endpointID: consume endpointID, lastActive: consume lastActive,
            majorVersion: consume majorVersion, minorVersion: consume minorVersion,
            availability: availability, activities: consume activities, endpointLocation: consume endpointLocation,
            meetingSubject: consume meetingSubject, meetingLocation: consume meetingLocation,
            timeZoneBias: timeZoneBias,
            timeZoneName: consume timeZoneName, timeZoneAbbreviation: consume timeZoneAbbreviation,
            device: consume device, treatLocationAsProximate: treatLocationAsProximate, extensions: consume extensions)
    }

    /// The attributes the decoder reads: `xsi:type`, and the others in no namespace, named by
    /// their raw values.
    private enum Attribute: String, CaseIterable {
        case type, manual, startTime, uri, endpointId, lastActive, majorVersion, minorVersion
    }
    private static let attributeNames = XMLNameCases<Attribute> { $0 == .type ? .xsiType : XMLName("", $0.rawValue) }
    /// The children the decoder reads: the state namespace's, named by their raw values, and the
    /// common types' delimiter and end (structure only).
    private enum Child: String, CaseIterable {
        case availability, activity, endpointLocation, meetingSubject, meetingLocation, timeZoneBias
        case timeZoneName, timeZoneAbbreviation, device, treatLocationAsProximate, delimiter, end
    }
    private static let childNames = XMLNameCases<Child> {
        switch $0 {
        case .delimiter: .ctDelimiter
        case .end: .ctEnd
        default: XMLName(NS.state, $0.rawValue)
        }
    }
}

extension MSActivity {
    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads an `activity` ([MS-PRES] §2.2.2.7.1):
    /// `token`, `minAvailability`, `maxAvailability` and `custom @LCID @updated` children.
    ///
    /// `maxAvailability="unbounded"` (the schema default) reads as `nil`.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName(NS.state, "activity"))
        try self.init(activityElement: xml)
    }

    /// ``init(cursor:)`` for an element whose name is known to be right (the decoder of the
    /// enclosing element has matched it), without testing it again.
    init(activityElement xml: XMLCursor) throws(XMLError) {
        // The attributes found in one pass, names compared in the recording (the first of a
        // repeated name counts, as with a lookup); the numbers read from the value bytes when
        // written as plain digits, any other form through its text as before (same value,
        // same error); the activity made once, after its custom texts.
        var token: String?
        var minimum: XMLCursor.AttributeValue?
        var maximum: XMLCursor.AttributeValue?
        xml.forEachAttributeValue(in: Self.attributeNames) { attribute, value in
            switch attribute {
            case .token?: if token == nil { token = xml.string(value) }
            case .minAvailability?: if minimum == nil { minimum = value }
            case .maxAvailability?: if maximum == nil { maximum = value }
            case nil: break
            }
        }
        let minAvailability = try xml.uint32Attribute("minAvailability", value: minimum)
        var maxAvailability: UInt32?
        if let maximum, let number = xml.plainUInt32(maximum) {
            maxAvailability = number
        } else if maximum.map({ xml.string($0).trimmingXMLWhitespace() }) != "unbounded" {
            maxAvailability = try xml.uint32Attribute("maxAvailability", value: maximum)
        }
        var custom: [CustomActivity] = []
        xml.forEachElement { c in
            if c.hasName(NS.state, "custom") {
                custom.append(CustomActivity(c.text, lcid: c[attribute: "LCID"], updated: c[attribute: "updated"]))
            }
        }
        self.init(
            token: (consume token).map(MSActivityToken.init(rawValue:)), minAvailability: minAvailability,
            maxAvailability: maxAvailability, custom: custom)
    }

    /// The attributes the decoder reads, named by their raw values.
    private enum Attribute: String, CaseIterable { case token, minAvailability, maxAvailability }
    private static let attributeNames = XMLNameCases<Attribute>()
}

extension LegacyInterop {
    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads `legacyInterop` ([MS-PRES] §2.2.2.7.6, schema §7.7).
    ///
    /// ```
    /// <legacyInterop availability? token? dndState?/>
    /// ```
    ///
    /// The element is in the categories namespace, usually inherited from the
    /// enclosing `category`; lenient: a bare fragment in no namespace is accepted too.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        guard xml.hasName(NS.categories, "legacyInterop") || xml.hasName("", "legacyInterop") else {
            throw xml.error("expected {\(NS.categories)}legacyInterop, found \(xml.name)")
        }
        self.init(
            availability: try xml.uint32Attribute("availability"),
            token: xml[attribute: "token"].map(MSActivityToken.init(rawValue:)),
            dndState: try xml.boolAttribute("dndState"))
    }
}
