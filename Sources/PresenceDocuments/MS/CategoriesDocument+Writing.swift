import XMLBridge

// The writer of the Microsoft documents ([MS-PRES] §2.2.2.1 categories,
// §2.2.2.7 category payloads, §2.2.2.9.2 msrtc.pidf presentity): each value
// writes itself into an `XMLStreamWriter`, elements in their default
// namespaces, attributes in the examples' order, with the delimiters. Kept
// extension elements (XMLElement values) are written as they came. The tests
// keep element-tree builders (Tests/PresenceDocumentsTests/TreeBuilders) as an
// oracle: both give the same bytes for every vector.

extension XMLStreamWriter {
    /// An element in its default namespace holding `text`, written empty
    /// (`<a/>`) when the text is empty, like `XMLElement.text` builds it.
    mutating func msText(_ namespace: Namespace, _ local: String, _ text: String) {
        startElement(local, in: namespace, indentsChildren: false)
        if !text.isEmpty { self.text(text) }
        endElement()
    }

    /// An element in its default namespace holding `value` in decimal (as
    /// `msText(namespace, local, String(value))` writes it, without the string).
    mutating func msDecimal(_ namespace: Namespace, _ local: String, _ value: Int) {
        startElement(local, in: namespace, indentsChildren: false)
        text(decimal: value)
        endElement()
    }

    /// Writes an attribute holding `value` in decimal when it is not nil.
    mutating func attribute(_ local: String, decimal value: UInt32?) {
        if let value { attribute(local, decimal: Int(value)) }
    }

    /// An empty element in its default namespace (`<delimiter xmlns=".../commontypes"/>`).
    mutating func msEmpty(_ namespace: Namespace, _ local: String) {
        startElement(local, in: namespace)
        endElement()
    }

}

extension XMLStreamWriter.Namespaces {
    /// The namespaces of the Microsoft documents, each the default namespace where it is used,
    /// and `xsi`: a writer made with them finds their strings among its own instead of adding them.
    static let microsoft = XMLStreamWriter.Namespaces([
        (NS.categories, nil), (NS.state, nil), (NS.note, nil), (NS.contactCard, nil), (NS.calendarData, nil),
        (NS.services, nil), (NS.device, nil), (NS.commonTypes, nil), (NS.richPresence, nil),
        (NS.exchangeTypes, nil), (NS.msrtcPresence, nil), (NS.xsi, "xsi"),
    ])

    /// The bits of `first` and `second` in ``microsoft``, which are declared in that order.
    static func microsoftDeclarations(_ first: MicrosoftEntry, _ second: MicrosoftEntry) -> UInt64 {
        precondition(first.rawValue < second.rawValue, "declared in the table's order")
        return 1 << UInt64(first.rawValue) | 1 << UInt64(second.rawValue)
    }

    /// The entries of ``microsoft``, in its order.
    enum MicrosoftEntry: Int {
        case categories, state, note, contactCard, calendarData, services, device, commonTypes, richPresence
        case exchangeTypes, msrtcPresence, xsi
    }
}

extension XMLStreamWriter.Namespace {
    static let categories = microsoft(.categories), state = microsoft(.state), note = microsoft(.note)
    static let contactCard = microsoft(.contactCard), calendarData = microsoft(.calendarData)
    static let services = microsoft(.services), device = microsoft(.device), commonTypes = microsoft(.commonTypes)
    static let msrtcPresence = microsoft(.msrtcPresence), xsi = microsoft(.xsi)

    private static func microsoft(_ entry: XMLStreamWriter.Namespaces.MicrosoftEntry) -> XMLStreamWriter.Namespace {
        XMLStreamWriter.Namespaces.microsoft[entry.rawValue]
    }
}

extension CategoriesDocument {
    /// The document as UTF-8 bytes (``XMLWriter`` defaults), written directly.
    public func serialized() -> [UInt8] {
        var w = XMLStreamWriter(namespaces: .microsoft)
        write(to: &w)
        return w.finish()
    }

    /// The document inside a `roamingData` element ([MS-PRES] §2.2.2.2.2, schema §6.7): the
    /// body of a category publish's 200 OK.
    public func serializedInRoamingData() -> [UInt8] {
        var w = XMLStreamWriter(namespaces: .microsoft)
        w.startElement(NS.roamingSelf, "roamingData", prefix: nil)
        write(to: &w)
        w.endElement()
        return w.finish()
    }

    private func write(to w: inout XMLStreamWriter) {
        w.startElement("categories", in: .categories)
        w.attribute("uri", uri)
        for category in categories { category.write(to: &w) }
        w.endElement()
    }
}

extension Category {
    /// Writes the `category` element in the categories namespace.
    func write(to w: inout XMLStreamWriter) {
        let mixed = payload?.holdsText ?? false
        w.startElement("category", in: .categories, indentsChildren: !mixed)
        // A kept attribute in a namespace: its declaration comes before every attribute.
        w.declarePrefixes(for: otherAttributes)
        w.attribute("name", name.rawValue)
        w.attribute("instance", decimal: instance)
        w.attribute("publishTime", publishTime)
        w.attribute("container", decimal: container)
        w.attribute("version", decimal: version)
        w.attribute("expireType", expireType?.rawValue)
        w.attribute("expires", decimal: expires)
        w.attribute("endpointId", endpointID)
        for a in otherAttributes { w.attribute(a.name, a.value, prefix: a.prefix) }
        payload?.write(to: &w)
        w.endElement()
    }
}

extension CategoryPayload {
    /// True for kept content (`other`) holding text: the category element is then mixed content.
    var holdsText: Bool {
        guard case .other(let nodes) = self else { return false }
        return nodes.contains { if case .text = $0 { true } else { false } }
    }

    /// Writes the payload inside a `category` or `publication` element.
    func write(to w: inout XMLStreamWriter) {
        switch self {
        case .state(let v): v.write(to: &w)
        case .note(let v): v.write(to: &w)
        case .contactCard(let v): v.write(to: &w)
        case .calendarData(let v): v.write(to: &w)
        case .services(let v): v.write(to: &w)
        case .device(let v): v.write(to: &w)
        case .userProperties(let v): v.write(to: &w)
        case .legacyInterop(let v): v.write(to: &w)
        case .other(let nodes):
            for node in nodes {
                switch node {
                case .text(let t): w.text(t)
                case .element(let e): w.element(e)
                }
            }
        }
    }
}

extension MSState {
    private static let name = XMLStreamWriter.Name("state", in: .state)
    /// `xmlns` for the state namespace, then `xmlns:xsi`.
    private static let declarations = XMLStreamWriter.Namespaces.microsoftDeclarations(.state, .xsi)

    /// Writes `state` ([MS-PRES] §2.2.2.7.1).
    func write(to w: inout XMLStreamWriter) {
        let ns = XMLStreamWriter.Namespace.state
        w.startElement(Self.name, declaring: Self.declarations)
        w.attribute("type", in: .xsi, type.rawValue)
        w.attribute("manual", manual?.xsd)
        w.attribute("startTime", startTime)
        w.attribute("uri", uri)
        w.attribute("endpointId", endpointID)
        w.attribute("lastActive", lastActive)
        w.attribute("majorVersion", majorVersion)
        w.attribute("minorVersion", minorVersion)
        if let availability { w.msDecimal(ns, "availability", Int(availability)) }
        for activity in activities { activity.write(to: &w) }
        if let endpointLocation { w.msText(ns, "endpointLocation", endpointLocation) }
        if let meetingSubject { w.msText(ns, "meetingSubject", meetingSubject) }
        if let meetingLocation { w.msText(ns, "meetingLocation", meetingLocation) }
        for x in extensions { w.element(x) }
        let delimited =
            timeZoneBias != nil || timeZoneName != nil || timeZoneAbbreviation != nil
            || device != nil || treatLocationAsProximate != nil
        if delimited {
            w.msEmpty(.commonTypes, "delimiter")
            if let timeZoneBias { w.msDecimal(ns, "timeZoneBias", timeZoneBias) }
            if let timeZoneName { w.msText(ns, "timeZoneName", timeZoneName) }
            if let timeZoneAbbreviation { w.msText(ns, "timeZoneAbbreviation", timeZoneAbbreviation) }
            if let device { w.msText(ns, "device", device) }
            if let treatLocationAsProximate { w.msText(ns, "treatLocationAsProximate", treatLocationAsProximate.xsd) }
            w.msEmpty(.commonTypes, "end")
        }
        w.endElement()
    }
}

extension MSActivity {
    func write(to w: inout XMLStreamWriter) {
        w.startElement("activity", in: .state)
        w.attribute("token", token?.rawValue)
        w.attribute("minAvailability", decimal: minAvailability)
        w.attribute("maxAvailability", decimal: maxAvailability)
        for c in custom {
            w.startElement("custom", in: .state, indentsChildren: false)
            w.attribute("LCID", c.lcid)
            w.attribute("updated", c.updated)
            if !c.text.isEmpty { w.text(c.text) }
            w.endElement()
        }
        w.endElement()
    }
}

extension LegacyInterop {
    func write(to w: inout XMLStreamWriter) {
        w.startElement("legacyInterop", in: .categories)
        w.attribute("availability", decimal: availability)
        w.attribute("token", token?.rawValue)
        w.attribute("dndState", dndState?.xsd)
        w.endElement()
    }
}

extension MSNote {
    func write(to w: inout XMLStreamWriter) {
        w.startElement("note", in: .note)
        for b in bodies {
            w.startElement("body", in: .note, indentsChildren: false)
            w.declarePrefixes(for: b.otherAttributes)
            w.attribute("type", b.type)
            w.attribute("uri", b.uri)
            w.attribute("startTime", b.startTime)
            w.attribute("endTime", b.endTime)
            for a in b.otherAttributes { w.attribute(a.name, a.value, prefix: a.prefix) }
            if !b.text.isEmpty { w.text(b.text) }
            w.endElement()
        }
        w.endElement()
    }
}

extension ContactCard.LocalizedText {
    func write(to w: inout XMLStreamWriter, _ namespace: XMLStreamWriter.Namespace, _ local: String) {
        w.startElement(local, in: namespace, indentsChildren: false)
        w.attribute("LCID", lcid)
        if !text.isEmpty { w.text(text) }
        w.endElement()
    }
}

extension ContactCard {
    /// Writes `contactCard` ([MS-PRES] §2.2.2.7.5): schema order, delimiters, extensions last.
    func write(to w: inout XMLStreamWriter) {
        let ns = XMLStreamWriter.Namespace.contactCard
        w.startElement("contactCard", in: ns)
        w.attribute("majorVersion", majorVersion)
        w.attribute("minorVersion", minorVersion)
        w.attribute("isUCEnabled", isUCEnabled?.xsd)
        if !displayNames.isEmpty || !emails.isEmpty {
            w.startElement("identity", in: ns)
            if !displayNames.isEmpty {
                w.startElement("name", in: ns)
                for d in displayNames { d.write(to: &w, ns, "displayName") }
                w.endElement()
            }
            for email in emails { w.msText(ns, "email", email) }
            w.endElement()
        }
        for a in addresses {
            w.startElement("address", in: ns)
            w.attribute("type", a.type)
            for s in a.street { s.write(to: &w, ns, "street") }
            for s in a.city { s.write(to: &w, ns, "city") }
            for s in a.state { s.write(to: &w, ns, "state") }
            for s in a.zipcode { s.write(to: &w, ns, "zipcode") }
            if let c = a.countryCode { w.msText(ns, "countryCode", c) }
            w.endElement()
        }
        for t in company { t.write(to: &w, ns, "company") }
        for t in department { t.write(to: &w, ns, "department") }
        for t in title { t.write(to: &w, ns, "title") }
        for t in office { t.write(to: &w, ns, "office") }
        for u in urls {
            w.startElement("url", in: ns, indentsChildren: false)
            w.attribute("type", u.type)
            if !u.uri.isEmpty { w.text(u.uri) }
            w.endElement()
        }
        for p in phones {
            w.startElement("phone", in: ns)
            w.attribute("type", p.type)
            w.msText(ns, "uri", p.uri)
            for d in p.displayStrings { d.write(to: &w, ns, "displayString") }
            w.endElement()
        }
        if let automaton { w.msText(ns, "automaton", automaton.xsd) }
        let secondBlock = displayADPhoto != nil || !photos.isEmpty
        if type != nil || descriptionText != nil || secondBlock {
            w.msEmpty(.commonTypes, "delimiter")
            if let type { w.msText(ns, "type", type) }
            if let descriptionText { w.msText(ns, "description", descriptionText) }
        }
        if secondBlock {
            w.msEmpty(.commonTypes, "delimiter")
            if let displayADPhoto { w.msText(ns, "displayADPhoto", displayADPhoto.xsd) }
            for p in photos {
                w.startElement("photo", in: ns)
                w.attribute("type", p.type)
                if let uri = p.uri { w.msText(ns, "uri", uri) }
                if let hash = p.hash { w.msText(ns, "hash", hash) }
                w.endElement()
            }
        }
        for x in extensions { w.element(x) }
        w.endElement()
    }
}

extension CalendarData {
    func write(to w: inout XMLStreamWriter) {
        w.startElement("calendarData", in: .calendarData)
        w.attribute("mailboxID", mailboxID)
        w.attribute("majorVersion", majorVersion)
        w.attribute("minorVersion", minorVersion)
        workingHoursContent?.write(to: &w)
        if let f = freeBusy {
            w.startElement("freeBusy", in: .calendarData, indentsChildren: false)
            w.attribute("startTime", f.startTime)
            w.attribute("granularity", f.granularity)
            w.attribute("encodingVersion", f.encodingVersion)
            if !f.data.isEmpty { w.text(f.data) }
            w.endElement()
        }
        for x in extensions { w.element(x) }
        w.endElement()
    }
}

extension UserProperties {
    func write(to w: inout XMLStreamWriter) {
        let ns = XMLStreamWriter.Namespace.categories
        w.startElement("userProperties", in: ns)
        if !lines.isEmpty {
            w.startElement("lines", in: ns)
            for line in lines {
                w.startElement("line", in: ns, indentsChildren: false)
                w.attribute("lineType", line.lineType)
                w.attribute("lineServer", line.lineServer)
                if !line.uri.isEmpty { w.text(line.uri) }
                w.endElement()
            }
            w.endElement()
        }
        for f in fields { w.msText(ns, f.name, f.value) }
        for x in extensions { w.element(x) }
        w.endElement()
    }
}

extension MSCapability {
    /// An empty element in `namespace`, attributes sorted by name (a namespaced one, keyed
    /// `{namespace}local`, with its declaration before them all).
    func write(to w: inout XMLStreamWriter, namespace: XMLStreamWriter.Namespace) {
        w.startElement(name, in: namespace)
        if sortedAttributes.contains(where: { $0.key.utf8.first == UInt8(ascii: "{") }) {
            w.attributes(xmlAttributes)
        } else {
            for attribute in sortedAttributes { w.attribute(attribute.key, attribute.value) }
        }
        w.endElement()
    }
}

extension MSServices {
    func write(to w: inout XMLStreamWriter) {
        let ns = XMLStreamWriter.Namespace.services
        w.startElement("services", in: ns)
        for s in services {
            w.startElement("service", in: ns)
            w.attribute("uri", s.uri)
            if !s.capabilities.isEmpty {
                w.startElement("capabilities", in: ns)
                for c in s.capabilities { c.write(to: &w, namespace: ns) }
                w.endElement()
            }
            for x in s.extensions { w.element(x) }
            w.endElement()
        }
        for x in extensions { w.element(x) }
        w.endElement()
    }
}

extension MSDevice {
    func write(to w: inout XMLStreamWriter) {
        let ns = XMLStreamWriter.Namespace.device
        w.startElement("device", in: ns)
        w.attribute("endpointId", endpointID)
        for c in capabilities {
            w.startElement("capabilities", in: ns)
            w.attribute("preferred", c.preferred?.xsd)
            w.attribute("uri", c.uri)
            for item in c.items { item.write(to: &w, namespace: ns) }
            w.endElement()
        }
        if let timezone { w.msText(ns, "timezone", timezone) }
        if let machineName { w.msText(ns, "machineName", machineName) }
        for x in extensions { w.element(x) }
        w.endElement()
    }
}

extension MSRTCPresentity {
    private static let name = XMLStreamWriter.Name("presentity", in: .msrtcPresence)
    /// `xmlns` for the msrtc.pidf namespace, then `xmlns:xsi`.
    private static let declarations = XMLStreamWriter.Namespaces.microsoftDeclarations(.msrtcPresence, .xsi)

    /// The body as UTF-8 bytes (``XMLWriter`` defaults), written directly.
    public func serialized() -> [UInt8] {
        let ns = XMLStreamWriter.Namespace.msrtcPresence
        var w = XMLStreamWriter(namespaces: .microsoft)
        w.startElement(Self.name, declaring: Self.declarations)
        w.attribute("uri", uri)
        if let a = availabilityAggregate {
            w.startElement("availability", in: ns)
            w.attribute("aggregate", String(a))
            w.endElement()
        }
        if let a = activityAggregate {
            w.startElement("activity", in: ns)
            w.attribute("aggregate", String(a))
            w.endElement()
        }
        if let displayName {
            w.startElement("displayName", in: ns)
            w.attribute("displayName", displayName)
            w.endElement()
        }
        if let email {
            w.startElement("email", in: ns)
            w.attribute("email", email)
            w.endElement()
        }
        if let phoneNumber {
            w.startElement("phoneNumber", in: ns)
            w.attribute("number", phoneNumber)
            w.endElement()
        }
        if !states.isEmpty {
            w.startElement("aggregate", in: ns)
            w.startElement("states", in: ns)
            for s in states {
                w.startElement("state", in: ns, indentsChildren: false)
                w.attribute("avail", s.avail.map(String.init))
                if let type = s.type { w.attribute("type", in: .xsi, type) }
                if !s.text.isEmpty { w.text(s.text) }
                w.endElement()
            }
            w.endElement()
            w.endElement()
        }
        for x in extensions { w.element(x) }
        w.endElement()
        return w.finish()
    }
}
