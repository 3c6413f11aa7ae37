import XMLBridge

// Direct writing of the Microsoft documents ([MS-PRES] §2.2.2.1 categories,
// §2.2.2.7 category payloads, §2.2.2.9.2 msrtc.pidf presentity) into an
// `XMLStreamWriter`, without building the `xml` element tree first. The
// layout is the one the `xml` builders describe (elements in their default
// namespaces, attribute order, delimiters); tests check that `serialized()`
// equals `XMLWriter().bytes(xml)` for every vector. Kept extension elements
// (XMLElement values) are written as trees, as the builders append them.

extension XMLStreamWriter {
    /// An element in its default namespace holding `text`, written empty
    /// (`<a/>`) when the text is empty, like `XMLElement.text` builds it.
    mutating func msText(_ namespace: String, _ local: String, _ text: String) {
        startElement(namespace, local, prefix: nil, indentsChildren: false)
        if !text.isEmpty { self.text(text) }
        endElement()
    }

    /// An element in its default namespace holding `value` in decimal (as
    /// `msText(namespace, local, String(value))` writes it, without the string).
    mutating func msDecimal(_ namespace: String, _ local: String, _ value: Int) {
        startElement(namespace, local, prefix: nil, indentsChildren: false)
        text(decimal: value)
        endElement()
    }

    /// Writes an attribute holding `value` in decimal when it is not nil.
    mutating func attribute(_ local: String, decimal value: UInt32?) {
        if let value { attribute(local, decimal: Int(value)) }
    }

    /// An empty element in its default namespace (`<delimiter xmlns=".../commontypes"/>`).
    mutating func msEmpty(_ namespace: String, _ local: String) {
        startElement(namespace, local, prefix: nil)
        endElement()
    }

    /// Unqualified attributes kept from the input; false (nothing written)
    /// when one is namespaced, since its declaration would have to precede
    /// the attributes already written: the caller writes its tree instead.
    static func unqualified(_ attributes: [XMLAttribute]) -> Bool {
        attributes.allSatisfy { $0.name.namespace.isEmpty }
    }

    mutating func attributes(_ attributes: [XMLAttribute]) {
        attributes.forEachInPlace { a in attribute(a.name.local, a.value) }
    }
}

extension CategoriesDocument {
    /// The document as UTF-8 bytes (``XMLWriter`` defaults), written directly.
    public func serialized() -> [UInt8] {
        var w = XMLStreamWriter()
        w.startElement(NS.categories, "categories", prefix: nil)
        w.attribute("uri", uri)
        // Each category read through a pointer into the array (see PIDFDocument+Writing.swift):
        // a method on the value copied it, payload and all.
        categories.forEachPointer { $0.write(to: &w) }
        w.endElement()
        return w.finish()
    }
}

extension UnsafePointer<Category> {
    /// Writes the `category` element in the categories namespace.
    func write(to w: inout XMLStreamWriter) {
        guard XMLStreamWriter.unqualified(pointee.otherAttributes) else { return w.element(pointee.xml) }
        // The payload is read in place: binding it here (`case .state(let v)? = payload`)
        // copied the whole optional enum first, each time.
        let payload = pointer(to: \.payload)!.unwrapped()
        let mixed = payload?.holdsText ?? false
        w.startElement(NS.categories, "category", prefix: nil, indentsChildren: !mixed)
        w.attribute("name", pointee.name.rawValue)
        w.attribute("instance", decimal: pointee.instance)
        w.attribute("publishTime", pointee.publishTime)
        w.attribute("container", decimal: pointee.container)
        w.attribute("version", decimal: pointee.version)
        w.attribute("expireType", pointee.expireType?.rawValue)
        w.attribute("expires", decimal: pointee.expires)
        w.attribute("endpointId", pointee.endpointID)
        w.attributes(pointee.otherAttributes)
        payload?.write(to: &w)
        w.endElement()
    }
}

extension UnsafePointer<CategoryPayload> {
    /// True for kept content (`other`) holding text: the category element is then mixed content.
    var holdsText: Bool {
        guard case .other(let nodes) = pointee else { return false }
        return nodes.contains { if case .text = $0 { true } else { false } }
    }

    /// Writes the nodes ``CategoryPayload/xmlNodes`` holds, without building them.
    func write(to w: inout XMLStreamWriter) {
        switch pointee {
        case .state(let v): v.write(to: &w)
        case .note(let v): v.write(to: &w)
        case .contactCard(let v): v.write(to: &w)
        case .calendarData(let v): v.write(to: &w)
        case .services(let v): v.write(to: &w)
        case .device(let v): v.write(to: &w)
        case .userProperties(let v): v.write(to: &w)
        case .legacyInterop(let v): v.write(to: &w)
        case .other(let nodes):
            nodes.forEachInPlace { node in
                switch node {
                case .text(let t): w.text(t)
                case .element(let e): w.element(e)
                }
            }
        }
    }
}

extension MSState {
    private static let declarations: [(prefix: String?, uri: String)] = [(nil, NS.state), ("xsi", NS.xsi)]

    /// Writes `state` as ``xml`` describes it.
    func write(to w: inout XMLStreamWriter) {
        let ns = NS.state
        w.startElement(ns, "state", prefix: nil, declarations: Self.declarations)
        w.attribute(.xsiType, type.rawValue, prefix: "xsi")
        w.attribute("manual", manual?.xsd)
        w.attribute("startTime", startTime)
        w.attribute("uri", uri)
        w.attribute("endpointId", endpointID)
        w.attribute("lastActive", lastActive)
        w.attribute("majorVersion", majorVersion)
        w.attribute("minorVersion", minorVersion)
        if let availability { w.msDecimal(ns, "availability", Int(availability)) }
        activities.forEachInPlace { activity in activity.write(to: &w) }
        if let endpointLocation { w.msText(ns, "endpointLocation", endpointLocation) }
        if let meetingSubject { w.msText(ns, "meetingSubject", meetingSubject) }
        if let meetingLocation { w.msText(ns, "meetingLocation", meetingLocation) }
        extensions.forEachInPlace { x in w.element(x) }
        let delimited = timeZoneBias != nil || timeZoneName != nil || timeZoneAbbreviation != nil
            || device != nil || treatLocationAsProximate != nil
        if delimited {
            w.msEmpty(NS.commonTypes, "delimiter")
            if let timeZoneBias { w.msDecimal(ns, "timeZoneBias", timeZoneBias) }
            if let timeZoneName { w.msText(ns, "timeZoneName", timeZoneName) }
            if let timeZoneAbbreviation { w.msText(ns, "timeZoneAbbreviation", timeZoneAbbreviation) }
            if let device { w.msText(ns, "device", device) }
            if let treatLocationAsProximate { w.msText(ns, "treatLocationAsProximate", treatLocationAsProximate.xsd) }
            w.msEmpty(NS.commonTypes, "end")
        }
        w.endElement()
    }
}

extension MSActivity {
    func write(to w: inout XMLStreamWriter) {
        w.startElement(NS.state, "activity", prefix: nil)
        w.attribute("token", token?.rawValue)
        w.attribute("minAvailability", decimal: minAvailability)
        w.attribute("maxAvailability", decimal: maxAvailability)
        custom.forEachInPlace { c in
            w.startElement(NS.state, "custom", prefix: nil, indentsChildren: false)
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
        w.startElement(NS.categories, "legacyInterop", prefix: nil)
        w.attribute("availability", decimal: availability)
        w.attribute("token", token?.rawValue)
        w.attribute("dndState", dndState?.xsd)
        w.endElement()
    }
}

extension MSNote {
    func write(to w: inout XMLStreamWriter) {
        guard bodies.allSatisfy({ XMLStreamWriter.unqualified($0.otherAttributes) }) else { return w.element(xml) }
        w.startElement(NS.note, "note", prefix: nil)
        bodies.forEachInPlace { b in
            w.startElement(NS.note, "body", prefix: nil, indentsChildren: false)
            w.attribute("type", b.type)
            w.attribute("uri", b.uri)
            w.attribute("startTime", b.startTime)
            w.attribute("endTime", b.endTime)
            w.attributes(b.otherAttributes)
            if !b.text.isEmpty { w.text(b.text) }
            w.endElement()
        }
        w.endElement()
    }
}

extension ContactCard.LocalizedText {
    func write(to w: inout XMLStreamWriter, _ namespace: String, _ local: String) {
        w.startElement(namespace, local, prefix: nil, indentsChildren: false)
        w.attribute("LCID", lcid)
        if !text.isEmpty { w.text(text) }
        w.endElement()
    }
}

extension ContactCard {
    /// Writes `contactCard` as ``xml`` describes it (schema order, delimiters, extensions last).
    func write(to w: inout XMLStreamWriter) {
        let ns = NS.contactCard
        w.startElement(ns, "contactCard", prefix: nil)
        w.attribute("majorVersion", majorVersion)
        w.attribute("minorVersion", minorVersion)
        w.attribute("isUCEnabled", isUCEnabled?.xsd)
        if !displayNames.isEmpty || !emails.isEmpty {
            w.startElement(ns, "identity", prefix: nil)
            if !displayNames.isEmpty {
                w.startElement(ns, "name", prefix: nil)
                displayNames.forEachInPlace { d in d.write(to: &w, ns, "displayName") }
                w.endElement()
            }
            emails.forEachInPlace { email in w.msText(ns, "email", email) }
            w.endElement()
        }
        addresses.forEachInPlace { a in
            w.startElement(ns, "address", prefix: nil)
            w.attribute("type", a.type)
            a.street.forEachInPlace { s in s.write(to: &w, ns, "street") }
            a.city.forEachInPlace { s in s.write(to: &w, ns, "city") }
            a.state.forEachInPlace { s in s.write(to: &w, ns, "state") }
            a.zipcode.forEachInPlace { s in s.write(to: &w, ns, "zipcode") }
            if let c = a.countryCode { w.msText(ns, "countryCode", c) }
            w.endElement()
        }
        company.forEachInPlace { t in t.write(to: &w, ns, "company") }
        department.forEachInPlace { t in t.write(to: &w, ns, "department") }
        title.forEachInPlace { t in t.write(to: &w, ns, "title") }
        office.forEachInPlace { t in t.write(to: &w, ns, "office") }
        urls.forEachInPlace { u in
            w.startElement(ns, "url", prefix: nil, indentsChildren: false)
            w.attribute("type", u.type)
            if !u.uri.isEmpty { w.text(u.uri) }
            w.endElement()
        }
        phones.forEachInPlace { p in
            w.startElement(ns, "phone", prefix: nil)
            w.attribute("type", p.type)
            w.msText(ns, "uri", p.uri)
            p.displayStrings.forEachInPlace { d in d.write(to: &w, ns, "displayString") }
            w.endElement()
        }
        if let automaton { w.msText(ns, "automaton", automaton.xsd) }
        let secondBlock = displayADPhoto != nil || !photos.isEmpty
        if type != nil || descriptionText != nil || secondBlock {
            w.msEmpty(NS.commonTypes, "delimiter")
            if let type { w.msText(ns, "type", type) }
            if let descriptionText { w.msText(ns, "description", descriptionText) }
        }
        if secondBlock {
            w.msEmpty(NS.commonTypes, "delimiter")
            if let displayADPhoto { w.msText(ns, "displayADPhoto", displayADPhoto.xsd) }
            photos.forEachInPlace { p in
                w.startElement(ns, "photo", prefix: nil)
                w.attribute("type", p.type)
                if let uri = p.uri { w.msText(ns, "uri", uri) }
                if let hash = p.hash { w.msText(ns, "hash", hash) }
                w.endElement()
            }
        }
        extensions.forEachInPlace { x in w.element(x) }
        w.endElement()
    }
}

extension CalendarData {
    func write(to w: inout XMLStreamWriter) {
        w.startElement(NS.calendarData, "calendarData", prefix: nil)
        w.attribute("mailboxID", mailboxID)
        w.attribute("majorVersion", majorVersion)
        w.attribute("minorVersion", minorVersion)
        workingHoursContent?.write(to: &w)
        if let f = freeBusy {
            w.startElement(NS.calendarData, "freeBusy", prefix: nil, indentsChildren: false)
            w.attribute("startTime", f.startTime)
            w.attribute("granularity", f.granularity)
            w.attribute("encodingVersion", f.encodingVersion)
            if !f.data.isEmpty { w.text(f.data) }
            w.endElement()
        }
        extensions.forEachInPlace { x in w.element(x) }
        w.endElement()
    }
}

extension UserProperties {
    func write(to w: inout XMLStreamWriter) {
        let ns = NS.categories
        w.startElement(ns, "userProperties", prefix: nil)
        if !lines.isEmpty {
            w.startElement(ns, "lines", prefix: nil)
            lines.forEachInPlace { line in
                w.startElement(ns, "line", prefix: nil, indentsChildren: false)
                w.attribute("lineType", line.lineType)
                w.attribute("lineServer", line.lineServer)
                if !line.uri.isEmpty { w.text(line.uri) }
                w.endElement()
            }
            w.endElement()
        }
        fields.forEachInPlace { f in w.msText(ns, f.name, f.value) }
        extensions.forEachInPlace { x in w.element(x) }
        w.endElement()
    }
}

extension MSCapability {
    /// An empty element in `namespace`, attributes sorted by name. A
    /// namespaced attribute (keyed `{namespace}local`) needs a declaration
    /// before the attributes: such a capability is written as its tree.
    func write(to w: inout XMLStreamWriter, namespace: String) {
        guard !sortedAttributes.contains(where: { $0.key.utf8.first == UInt8(ascii: "{") }) else {
            return w.element(xml(namespace: namespace))
        }
        w.startElement(namespace, name, prefix: nil)
        sortedAttributes.forEachInPlace { attribute in w.attribute(attribute.key, attribute.value) }
        w.endElement()
    }
}

extension MSServices {
    func write(to w: inout XMLStreamWriter) {
        let ns = NS.services
        w.startElement(ns, "services", prefix: nil)
        services.forEachInPlace { s in
            w.startElement(ns, "service", prefix: nil)
            w.attribute("uri", s.uri)
            if !s.capabilities.isEmpty {
                w.startElement(ns, "capabilities", prefix: nil)
                s.capabilities.forEachInPlace { c in c.write(to: &w, namespace: ns) }
                w.endElement()
            }
            s.extensions.forEachInPlace { x in w.element(x) }
            w.endElement()
        }
        extensions.forEachInPlace { x in w.element(x) }
        w.endElement()
    }
}

extension MSDevice {
    func write(to w: inout XMLStreamWriter) {
        let ns = NS.device
        w.startElement(ns, "device", prefix: nil)
        w.attribute("endpointId", endpointID)
        capabilities.forEachInPlace { c in
            w.startElement(ns, "capabilities", prefix: nil)
            w.attribute("preferred", c.preferred?.xsd)
            w.attribute("uri", c.uri)
            c.items.forEachInPlace { item in item.write(to: &w, namespace: ns) }
            w.endElement()
        }
        if let timezone { w.msText(ns, "timezone", timezone) }
        if let machineName { w.msText(ns, "machineName", machineName) }
        extensions.forEachInPlace { x in w.element(x) }
        w.endElement()
    }
}

extension MSRTCPresentity {
    private static let declarations: [(prefix: String?, uri: String)] = [(nil, NS.msrtcPresence), ("xsi", NS.xsi)]

    /// The body as UTF-8 bytes (``XMLWriter`` defaults), written directly.
    public func serialized() -> [UInt8] {
        let ns = NS.msrtcPresence
        var w = XMLStreamWriter()
        w.startElement(ns, "presentity", prefix: nil, declarations: Self.declarations)
        w.attribute("uri", uri)
        if let a = availabilityAggregate { w.startElement(ns, "availability", prefix: nil); w.attribute("aggregate", String(a)); w.endElement() }
        if let a = activityAggregate { w.startElement(ns, "activity", prefix: nil); w.attribute("aggregate", String(a)); w.endElement() }
        if let displayName { w.startElement(ns, "displayName", prefix: nil); w.attribute("displayName", displayName); w.endElement() }
        if let email { w.startElement(ns, "email", prefix: nil); w.attribute("email", email); w.endElement() }
        if let phoneNumber { w.startElement(ns, "phoneNumber", prefix: nil); w.attribute("number", phoneNumber); w.endElement() }
        if !states.isEmpty {
            w.startElement(ns, "aggregate", prefix: nil)
            w.startElement(ns, "states", prefix: nil)
            states.forEachInPlace { s in
                w.startElement(ns, "state", prefix: nil, indentsChildren: false)
                w.attribute("avail", s.avail.map(String.init))
                if let type = s.type { w.attribute(.xsiType, type, prefix: "xsi") }
                if !s.text.isEmpty { w.text(s.text) }
                w.endElement()
            }
            w.endElement()
            w.endElement()
        }
        extensions.forEachInPlace { x in w.element(x) }
        w.endElement()
        return w.finish()
    }
}
