public import XMLBridge

extension CategoriesDocument {
    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads a `categories` document ([MS-PRES] §2.2.2.1, schema §6.2).
    ///
    /// ```
    /// <categories xmlns="http://schemas.microsoft.com/2006/09/sip/categories" uri="sip:publisher">
    ///   <category name ...> payload? </category>*
    /// </categories>
    /// ```
    ///
    /// Lenient: a missing `uri` reads as the empty string; children other
    /// than `category` are ignored.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName(NS.categories, "categories"))
        // Decoded into an array made for all the children at once (it grew category by
        // category), from the children walked in place (no array of cursors is built; each
        // cursor is lent to the closure, not made and released per child).
        var categories: [Category] = []
        categories.reserveCapacity(xml.elementCount)
        try xml.forEachElement { (child) throws(XMLError) in
            if child.hasName(NS.categories, "category") { categories.append(try Category(categoryElement: child)) }
        }
        self.init(uri: xml[attribute: "uri"] ?? "", categories: categories)
    }

    /// Parses and decodes a document (`application/msrtc-event-categories+xml`)
    /// straight from parse events: only unknown payloads and extensions become trees.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeEvents(bytes, limits: limits) { root throws(XMLError) in try Self(cursor: root) }
    }
}

extension Category {
    /// The attributes this codec models, named by their raw values; all others go to `otherAttributes`.
    private enum KnownAttribute: String, CaseIterable {
        case name, instance, container, version, publishTime, expireType, expires, endpointId
    }
    /// The names of ``KnownAttribute``.
    static let knownAttributes = KnownAttribute.allCases.map(\.rawValue)
    /// ``KnownAttribute`` for a lookup in the recording.
    private static let knownAttributeNames = XMLNameCases<KnownAttribute>()

    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads a `category` element ([MS-PRES] §2.2.2.1, schema §6.2).
    ///
    /// ```
    /// <category name instance? container? version? publishTime? expireType?
    ///           expires? endpointId?> payload? </category>
    /// ```
    ///
    /// Lenient: the element may also be in no namespace (the spec's bare
    /// `<category>` fragments, §2.2.2.7.4, §4.13); numeric attributes must be
    /// numbers (errors located at the element); an unknown `expireType` value
    /// is kept in `otherAttributes`. An element holding only white space has no payload.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        guard xml.hasName(NS.categories, "category") || xml.hasName("", "category") else {
            throw xml.error("expected {\(NS.categories)}category, found \(xml.name)")
        }
        try self.init(categoryElement: xml)
    }

    /// ``init(cursor:)`` for an element whose name is known to be right (the document decoder
    /// has tested it), without testing it again.
    init(categoryElement xml: XMLCursor) throws(XMLError) {
        // One pass over the attributes (a lookup by name walked them all, once per attribute
        // modelled); the first of a repeated name counts, as with a lookup.
        // Numbers are read from the value bytes, and publishTime packed from them (no String
        // made for them).
        var name: CategoryName?
        var typed: CategoryPayload.Typed?
        var publishTime: PackedText?
        var expireTypeRaw: String?
        var endpointID: String?
        var instance: XMLCursor.AttributeValue?
        var container: XMLCursor.AttributeValue?
        var version: XMLCursor.AttributeValue?
        var expires: XMLCursor.AttributeValue?
        var hasOther = false
        // The names are looked up in the recording, not copied out to be compared.
        xml.forEachAttributeValue(in: Self.knownAttributeNames) { attribute, value in
            guard let attribute else {
                hasOther = true
                return
            }
            switch attribute {
            case .name:
                // A name with a typed payload is the table's (no String made, and its payload
                // known without a second lookup); any other is made from the value.
                guard name == nil else { break }
                if let known = xml.withUTF8(value, CategoryPayload.typedName(utf8:)) {
                    (name, typed) = (known.name, known.typed)
                } else {
                    name = CategoryName(rawValue: xml.string(value))
                }
            case .instance: if instance == nil { instance = value }
            case .publishTime: if publishTime == nil { publishTime = xml.withUTF8(value, PackedText.init(utf8:)) }
            case .container: if container == nil { container = value }
            case .version: if version == nil { version = value }
            case .expireType: if expireTypeRaw == nil { expireTypeRaw = xml.string(value) }
            case .expires: if expires == nil { expires = value }
            case .endpointId: if endpointID == nil { endpointID = xml.string(value) }
            }
        }
        // The texts the closure filled are moved out of its captures (consume), not copied.
        guard let name = consume name else {
            throw xml.error("category without a name attribute")
        }
        var other = hasOther ? xml.attributes(excluding: Self.knownAttributes) : []
        let expireType = expireTypeRaw.flatMap(ExpireType.init(rawValue:))
        if expireType == nil, let expireTypeRaw {
            other.append(XMLAttribute(XMLName("", "expireType"), expireTypeRaw))
        }
        let categoryName = consume name
        self.init(
            name: categoryName, instance: try xml.uint32Attribute("instance", value: instance),
            container: try xml.uint32Attribute("container", value: container),
            version: try xml.uint32Attribute("version", value: version),
            packedPublishTime: publishTime, expireType: expireType,
            expires: try xml.uint32Attribute("expires", value: expires), endpointID: consume endpointID,
            otherAttributes: consume other,
            payload: try CategoryPayload.content(of: xml, typed: typed))
    }
}

extension CategoryPayload {
    /// The typed payloads, each with the root element it expects ([MS-PRES] §2.2.2.7).
    enum Typed: CaseIterable {
        case state, note, contactCard, calendarData, services, device, userProperties, legacyInterop

        var root: XMLName {
            switch self {
            case .state: XMLName(NS.state, "state")
            case .note: XMLName(NS.note, "note")
            case .contactCard: XMLName(NS.contactCard, "contactCard")
            case .calendarData: XMLName(NS.calendarData, "calendarData")
            case .services: XMLName(NS.services, "services")
            case .device: XMLName(NS.device, "device")
            case .userProperties: XMLName(NS.categories, "userProperties")
            case .legacyInterop: XMLName(NS.categories, "legacyInterop")
            }
        }

        /// The categories-namespace payloads are also accepted in no namespace (inherited from a bare `<category>`).
        var acceptsNoNamespace: Bool { self == .userProperties || self == .legacyInterop }
    }

    /// The root each typed payload expects, for a lookup in the recording.
    private static let roots = XMLNameCases<Typed>(\.root)

    /// The typed payload of each category name that has one. `dndState` is a `state` document
    /// (§2.2.2.7.10) and `workingHours` a `calendarData` document (§2.2.2.7.9).
    private static let typedNames: [(name: CategoryName, typed: Typed)] = [
        (.state, .state), (.dndState, .state), (.note, .note), (.contactCard, .contactCard),
        (.calendarData, .calendarData), (.workingHours, .calendarData), (.services, .services), (.device, .device),
        (.userProperties, .userProperties), (.legacyInterop, .legacyInterop),
    ]
    /// The UTF-8 bytes of ``typedNames``' names, in its order.
    private static let typedNameBytes = typedNames.map { Array($0.name.rawValue.utf8) }

    /// The entry of ``typedNames`` named by the UTF-8 bytes `utf8`, or nil: compared lengths
    /// first, then byte for byte in place (a name is a few bytes, and there are ten).
    static func typedName(utf8: Span<UInt8>) -> (name: CategoryName, typed: Typed)? {
        let count = utf8.count
        for (i, name) in typedNameBytes.enumerated() where name.count == count {
            var k = 0
            while k < count, name[k] == utf8[k] { k += 1 }
            if k == count { return typedNames[i] }
        }
        return nil
    }

    /// The typed payload of the category named `name`, or nil.
    static func typed(_ name: CategoryName) -> Typed? {
        typedNames.first { $0.name == name }?.typed
    }

    /// Reads the data of a `category` or `publication` element
    /// ([MS-PRES] §2.2.2.1 `xs:any lax`, §2.2.2.2.1).
    ///
    /// The payload is typed when the children are exactly one element (plus
    /// white space) whose name is the one the category calls for. The
    /// categories-namespace payloads (`userProperties`, `legacyInterop`) are
    /// also accepted in no namespace (inherited from a bare `<category>`).
    /// Anything else (another category name, another root, several elements,
    /// or the §4.3.1 machineState instance whose `</state>` closes before its
    /// delimiter block, leaving `delimiter`/`timeZone*`/`device`/`end`
    /// directly in `<category>`) becomes `.other` with the children verbatim
    /// (white-space-only text nodes dropped), so nothing is lost.
    public init(categoryChildren: [XMLNode], name: CategoryName) throws(XMLError) {
        let holder = XMLElement(XMLName("", "category"), children: categoryChildren)
        try self.init(contentOf: XMLEvents(replaying: holder).root, name: name)
    }

    /// Reads the content of the `category` or `publication` element at
    /// `holder` from parse events (the rules of ``init(categoryChildren:name:)``).
    public init(contentOf holder: XMLCursor, name: CategoryName) throws(XMLError) {
        self = try Self.content(of: holder, typed: Self.typed(name)) ?? .other([])
    }

    /// The content of `holder` for a category whose name calls for the payload `typed` (nil:
    /// none), as the category decoder found it when it read the name; nil when the holder
    /// holds only white space (a category without a payload). The one significant child is
    /// looked for first, in one walk over the recorded nodes: a holder that has one is not
    /// empty (the category decoder walked its children once more to find that out). A holder
    /// without one is empty when nothing in it is kept.
    static func content(of holder: XMLCursor, typed: Typed?) throws(XMLError) -> CategoryPayload? {
        // The child's name looked up in the recording (no name copied out, and no XMLName
        // built to compare).
        guard let root = holder.soleElement, let typed,
            root.match(in: Self.roots) == typed || (typed.acceptsNoNamespace && root.hasName("", typed.root.local))
        else {
            var kept: [XMLNode] = []
            for child in holder.children where !(child.isText && child.hasOnlyWhitespace) {
                kept.append(child.isText ? .text(child.text) : .element(child.subtree))
            }
            // Nothing kept: the holder held white space only (or nothing).
            return kept.isEmpty ? nil : .other(kept)
        }
        // The root's name has matched the payload's: the decoder does not test it again.
        switch typed {
        case .state: return .state(try MSState(stateElement: root))
        case .note: return .note(try MSNote(noteElement: root))
        case .contactCard: return .contactCard(try ContactCard(contactCardElement: root))
        case .calendarData: return .calendarData(try CalendarData(calendarDataElement: root))
        case .services: return .services(try MSServices(servicesElement: root))
        case .device: return .device(try MSDevice(cursor: root))
        case .userProperties: return .userProperties(try UserProperties(cursor: root))
        case .legacyInterop: return .legacyInterop(try LegacyInterop(cursor: root))
        }
    }
}
