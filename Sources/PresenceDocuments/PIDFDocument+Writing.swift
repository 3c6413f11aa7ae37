import XMLBridge

// Direct writing of PIDF documents (RFC 3863 §4.4 with RFC 4479, 4480, 4482,
// 5196 and [MS-PRES] §2.2.2.8.1) into an `XMLStreamWriter`, without building
// the `xml` element tree first. The layout is the one the `xml` builders in
// PIDFDocument+XML.swift, RPID+XML.swift and ServiceCapabilities+XML.swift
// describe (same order, prefixes and root declarations); tests check that
// `serialized()` equals `XMLWriter().bytes(xml)` for every vector.

extension PIDFXML {
    /// The codec prefix of each namespace it writes with a fixed prefix.
    static let dm: String? = prefix(for: NS.dataModel)
    static let rpidPrefix: String? = prefix(for: NS.rpid)
    static let cipidPrefix: String? = prefix(for: NS.cipid)
    static let capsPrefix: String? = prefix(for: NS.caps)
    static let epPrefix: String? = prefix(for: NS.rpidStatus)

    /// Bits of ``prefixes`` (in its order): which codec namespaces the written document uses.
    struct Used {
        var bits: UInt32 = 0
        mutating func insert(_ index: Int) { bits |= 1 << UInt32(index) }
        /// Marks `namespace` when it is a codec namespace (elements in it get the codec prefix).
        mutating func insert(namespace: String) {
            let table = PIDFXML.prefixes
            let length = namespace.utf8.count
            for i in table.indices where table[i].uri.utf8.count == length && table[i].uri == namespace {
                insert(i)
                return
            }
        }
        /// Marks what ``PIDFXML/declareNamespaces(on:)`` would find in a kept element.
        mutating func insert(tree e: XMLElement) {
            let table = PIDFXML.prefixes
            let namespace = e.name.namespace
            let length = namespace.utf8.count
            for i in table.indices where table[i].uri.utf8.count == length && table[i].uri == namespace {
                if table[i].prefix == e.prefix { insert(i) }
                break
            }
            for child in e.children { if case .element(let c) = child { insert(tree: c) } }
        }
        static let pidf = 0, dm = 1, rpid = 2, cipid = 3, caps = 4, ep = 6

        /// The root's declarations for each set of bits: the ``PIDFXML/prefixes`` whose bit is
        /// set, in that order. Made once (256 short arrays): an array made per document cost its
        /// allocation and a generic destruction of each (prefix, uri) pair.
        static let declarations: [[(prefix: String?, uri: String)]] = (0..<(1 << PIDFXML.prefixes.count)).map { bits in
            PIDFXML.prefixes.indices.filter { bits & (1 << $0) != 0 }.map { (PIDFXML.prefixes[$0].prefix, PIDFXML.prefixes[$0].uri) }
        }
    }

    /// A text-only element with the codec's prefix: unqualified attributes
    /// (nil values left out), then `xml:lang`, then the text.
    static func writeText(
        _ w: inout XMLStreamWriter, _ namespace: String, _ prefix: String?, _ local: String, _ text: String,
        lang: String? = nil
    ) {
        w.startElement(namespace, local, prefix: prefix, indentsChildren: false)
        if let lang { w.attribute(langName, lang, prefix: "xml") }
        w.text(text)
        w.endElement()
    }

    static func writeNote(_ w: inout XMLStreamWriter, _ namespace: String, _ prefix: String?, _ note: PIDFNote, local: String = "note") {
        writeText(&w, namespace, prefix, local, note.text, lang: note.lang)
    }
}

// The document and the values in it (tuples, statuses, persons, devices, CIPID, the RPID
// elements in their box, tokens elements, place-is) are written through pointers to where
// they lie (the caller's value, an array's buffer, the value or box holding them): a method
// called on one of these values takes a copy of it first, a retain and a release for each of
// its strings, arrays and boxes, set or not, where a field read through the pointer loads
// that field alone, and an empty array's or absent value's test loads nothing.

extension PIDFDocument {
    /// The document as UTF-8 XML with a declaration and two-space indentation,
    /// written directly (the bytes of `XMLWriter().bytes(xml)`).
    public func serialized() -> [UInt8] {
        var w = XMLStreamWriter()
        withUnsafePointer(to: self) { $0.write(to: &w) }
        return w.finish()
    }
}

extension UnsafePointer<PIDFDocument> {
    /// Writes the `presence` element: the codec namespaces in use declared on
    /// it in ``PIDFXML/prefixes`` order, then tuples, notes, persons, devices,
    /// `linked-identities`, `cid`, top-level CIPID and kept extensions.
    func write(to w: inout XMLStreamWriter) {
        var used = PIDFXML.Used()
        used.insert(PIDFXML.Used.pidf)
        forEach(\.tuples) { $0.markNamespaces(&used) }
        forEach(\.persons) { $0.markNamespaces(&used) }
        forEach(\.devices) { $0.markNamespaces(&used) }
        pointer(to: \.cipid)!.markNamespaces(&used)
        forEach(\.extensions) { used.insert(tree: $0.pointee) }
        w.startElement(NS.pidf, "presence", prefix: nil, declarations: PIDFXML.Used.declarations[Int(used.bits)])
        w.attribute("entity", pointee.entity)
        forEach(\.tuples) { $0.write(to: &w) }
        forEach(\.notes) { PIDFXML.writeNote(&w, NS.pidf, nil, $0.pointee) }
        forEach(\.persons) { $0.write(to: &w) }
        forEach(\.devices) { $0.write(to: &w) }
        pointee.linkedIdentities?.write(to: &w)
        if let cid = pointee.cid { PIDFXML.writeText(&w, NS.pidf, nil, "cid", cid) }
        pointer(to: \.cipid)!.write(to: &w)
        forEach(\.extensions) { w.element($0.pointee, verbatim: true) }
        w.endElement()
    }
}

extension UnsafePointer<PIDFTuple> {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        if !pointee.deviceIDs.isEmpty { used.insert(PIDFXML.Used.dm) }
        pointer(to: \.status)!.markNamespaces(&used)
        pointee.rpid.markNamespaces(&used)
        pointer(to: \.cipid)!.markNamespaces(&used)
        forEach(\.extensions) { used.insert(tree: $0.pointee) }
    }

    func write(to w: inout XMLStreamWriter) {
        w.startElement(NS.pidf, "tuple", prefix: nil)
        w.attribute("id", pointee.id)
        pointer(to: \.status)!.write(to: &w)
        forEach(\.deviceIDs) { PIDFXML.writeText(&w, NS.dataModel, PIDFXML.dm, "deviceID", $0.pointee) }
        pointer(to: \.status)!.pointer(to: \.capabilities)!.unwrapped()?.write(to: &w)
        pointee.rpid.write(to: &w)
        pointer(to: \.cipid)!.write(to: &w)
        forEach(\.extensions) { w.element($0.pointee, verbatim: true) }
        if let contact = pointee.contact {
            w.startElement(NS.pidf, "contact", prefix: nil, indentsChildren: false)
            w.attribute("priority", contact.priority)
            w.text(contact.uri)
            w.endElement()
        }
        forEach(\.notes) { PIDFXML.writeNote(&w, NS.pidf, nil, $0.pointee) }
        if let timestamp = pointee.timestamp { PIDFXML.writeText(&w, NS.pidf, nil, "timestamp", timestamp) }
        w.endElement()
    }
}

extension UnsafePointer<PIDFStatus> {
    /// Marks the status's namespaces, `capabilities` (which the tuple writes) included.
    func markNamespaces(_ used: inout PIDFXML.Used) {
        pointer(to: \.capabilities)!.unwrapped()?.markNamespaces(&used)
        pointee.rpid.markNamespaces(&used)
        forEach(\.extensions) { used.insert(tree: $0.pointee) }
    }

    /// Written without `capabilities`, which ``PIDFTuple`` writes in the tuple (RFC 5196 §5).
    func write(to w: inout XMLStreamWriter) {
        w.startElement(NS.pidf, "status", prefix: nil)
        if let text = pointee.basic?.rawValue ?? pointee.unrecognizedBasic {
            PIDFXML.writeText(&w, NS.pidf, nil, "basic", text)
        }
        pointee.rpid.write(to: &w)
        forEach(\.extensions) { w.element($0.pointee, verbatim: true) }
        w.endElement()
    }
}

extension UnsafePointer<PIDFPerson> {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        used.insert(PIDFXML.Used.dm)
        pointee.rpid.markNamespaces(&used)
        pointer(to: \.cipid)!.markNamespaces(&used)
        forEach(\.extensions) { used.insert(tree: $0.pointee) }
    }

    func write(to w: inout XMLStreamWriter) {
        w.startElement(NS.dataModel, "person", prefix: PIDFXML.dm)
        w.attribute("id", pointee.id)
        pointee.rpid.write(to: &w)
        pointer(to: \.cipid)!.write(to: &w)
        forEach(\.extensions) { w.element($0.pointee, verbatim: true) }
        forEach(\.notes) { PIDFXML.writeNote(&w, NS.dataModel, PIDFXML.dm, $0.pointee) }
        if let timestamp = pointee.timestamp { PIDFXML.writeText(&w, NS.dataModel, PIDFXML.dm, "timestamp", timestamp) }
        w.endElement()
    }
}

extension UnsafePointer<PIDFDevice> {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        used.insert(PIDFXML.Used.dm)
        pointee.rpid.markNamespaces(&used)
        forEach(\.extensions) { used.insert(tree: $0.pointee) }
    }

    func write(to w: inout XMLStreamWriter) {
        w.startElement(NS.dataModel, "device", prefix: PIDFXML.dm)
        w.attribute("id", pointee.id)
        pointee.rpid.write(to: &w)
        forEach(\.extensions) { w.element($0.pointee, verbatim: true) }
        if let deviceID = pointee.deviceID { PIDFXML.writeText(&w, NS.dataModel, PIDFXML.dm, "deviceID", deviceID) }
        forEach(\.notes) { PIDFXML.writeNote(&w, NS.dataModel, PIDFXML.dm, $0.pointee) }
        if let timestamp = pointee.timestamp { PIDFXML.writeText(&w, NS.dataModel, PIDFXML.dm, "timestamp", timestamp) }
        w.endElement()
    }
}

extension LinkedIdentities {
    func write(to w: inout XMLStreamWriter) {
        w.startElement(NS.pidf, "linked-identities", prefix: nil)
        w.attribute("primary-id", primaryID)
        if !secondaryIdentities.isEmpty {
            w.startElement(NS.pidf, "secondary-identities", prefix: nil)
            for s in secondaryIdentities { PIDFXML.writeText(&w, NS.pidf, nil, "secondary-identity", s) }
            w.endElement()
        }
        w.endElement()
    }
}

extension RPID {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        box?.withValuePointer { $0.markNamespaces(&used) }
    }

    func write(to w: inout XMLStreamWriter) {
        box?.withValuePointer { $0.write(to: &w) }
    }
}

extension UnsafePointer<RPID.Fields> {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        if !pointee.legacyActivities.isEmpty { used.insert(PIDFXML.Used.ep) }
        forEach(\.activities) { $0.markNamespaces(&used) }
        if pointee.`class` != nil || pointee.placeIs != nil || pointee.statusIcon != nil
            || !pointee.timeOffsets.isEmpty || pointee.userInput != nil
        {
            used.insert(PIDFXML.Used.rpid)
        }
        pointer(to: \.mood)!.unwrapped()?.markNamespaces(&used)
        pointer(to: \.placeType)!.unwrapped()?.markNamespaces(&used)
        pointer(to: \.privacy)!.unwrapped()?.markNamespaces(&used)
        pointer(to: \.relationship)!.unwrapped()?.markNamespaces(&used)
        pointer(to: \.serviceClass)!.unwrapped()?.markNamespaces(&used)
        pointer(to: \.sphere)!.unwrapped()?.markNamespaces(&used)
    }

    /// Legacy activities first, then RFC 4480 §3 elements in alphabetical order.
    func write(to w: inout XMLStreamWriter) {
        if !pointee.legacyActivities.isEmpty {
            w.startElement(NS.rpidStatus, "activities", prefix: PIDFXML.epPrefix)
            forEach(\.legacyActivities) { PIDFXML.writeText(&w, NS.rpidStatus, PIDFXML.epPrefix, "activity", $0.pointee) }
            w.endElement()
        }
        forEach(\.activities) { $0.write(to: &w, "activities") }
        if let c = pointee.`class` { PIDFXML.writeText(&w, NS.rpid, PIDFXML.rpidPrefix, "class", c) }
        pointer(to: \.mood)!.unwrapped()?.write(to: &w, "mood")
        pointer(to: \.placeIs)!.unwrapped()?.write(to: &w)
        pointer(to: \.placeType)!.unwrapped()?.write(to: &w, "place-type")
        pointer(to: \.privacy)!.unwrapped()?.write(to: &w, "privacy")
        pointer(to: \.relationship)!.unwrapped()?.write(to: &w, "relationship")
        pointer(to: \.serviceClass)!.unwrapped()?.write(to: &w, "service-class")
        pointer(to: \.sphere)!.unwrapped()?.write(to: &w, "sphere")
        if let icon = pointee.statusIcon {
            w.startElement(NS.rpid, "status-icon", prefix: PIDFXML.rpidPrefix, indentsChildren: false)
            w.attribute("id", icon.id)
            w.attribute("from", icon.from)
            w.attribute("until", icon.until)
            w.text(icon.uri)
            w.endElement()
        }
        forEach(\.timeOffsets) { offsetPointer in
            let offset = offsetPointer.pointee
            w.startElement(NS.rpid, "time-offset", prefix: PIDFXML.rpidPrefix, indentsChildren: false)
            w.attribute("id", offset.id)
            w.attribute("from", offset.from)
            w.attribute("until", offset.until)
            w.attribute("description", offset.description)
            w.text(String(offset.minutes))
            w.endElement()
        }
        if let input = pointee.userInput {
            w.startElement(NS.rpid, "user-input", prefix: PIDFXML.rpidPrefix, indentsChildren: false)
            w.attribute("id", input.id)
            w.attribute("idle-threshold", input.idleThreshold.map { String($0) })
            w.attribute("last-input", input.lastInput)
            w.text(input.value.rawValue)
            w.endElement()
        }
    }
}

extension UnsafePointer<RPIDTokens> {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        used.insert(PIDFXML.Used.rpid)
        forEach(\.values) { value in
            switch value.pointee {
            case .token(_, let namespace?): used.insert(namespace: namespace)
            case .extensionElement(let x): used.insert(tree: x)
            default: break
            }
        }
    }

    /// Writes the element named `local`: notes first (the schemas require it), then the values in order.
    func write(to w: inout XMLStreamWriter, _ local: String) {
        var mixed = false
        forEach(\.values) { if case .text = $0.pointee { mixed = true } }
        w.startElement(NS.rpid, local, prefix: PIDFXML.rpidPrefix, indentsChildren: !mixed)
        w.attribute("id", pointee.id)
        w.attribute("from", pointee.from)
        w.attribute("until", pointee.until)
        forEach(\.notes) { PIDFXML.writeNote(&w, NS.rpid, PIDFXML.rpidPrefix, $0.pointee) }
        forEach(\.values) { value in
            switch value.pointee {
            case .token(let name, let namespace):
                let ns = namespace ?? NS.rpid
                w.startElement(ns, name, prefix: namespace == nil ? PIDFXML.rpidPrefix : PIDFXML.prefix(for: ns))
                w.endElement()
            case .other(let text, let lang):
                PIDFXML.writeText(&w, NS.rpid, PIDFXML.rpidPrefix, "other", text, lang: lang)
            case .text(let text): w.text(text)
            case .extensionElement(let x): w.element(x, verbatim: true)
            }
        }
        w.endElement()
    }
}

extension UnsafePointer<RPIDPlaceIs> {
    func write(to w: inout XMLStreamWriter) {
        let p = PIDFXML.rpidPrefix
        w.startElement(NS.rpid, "place-is", prefix: p)
        w.attribute("id", pointee.id)
        w.attribute("from", pointee.from)
        w.attribute("until", pointee.until)
        forEach(\.notes) { PIDFXML.writeNote(&w, NS.rpid, p, $0.pointee) }
        // One medium after the other (an array of (medium, token) pairs cost an allocation per write).
        Self.writeMedium(&w, "audio", pointee.audio)
        Self.writeMedium(&w, "video", pointee.video)
        Self.writeMedium(&w, "text", pointee.text)
        w.endElement()
    }

    /// `<local><token/></local>` when the medium has a token.
    private static func writeMedium(_ w: inout XMLStreamWriter, _ local: String, _ token: String?) {
        guard let token else { return }
        let p = PIDFXML.rpidPrefix
        w.startElement(NS.rpid, local, prefix: p)
        w.startElement(NS.rpid, token, prefix: p)
        w.endElement()
        w.endElement()
    }
}

extension UnsafePointer<CIPID> {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        if !pointee.isEmpty { used.insert(PIDFXML.Used.cipid) }
    }

    func write(to w: inout XMLStreamWriter) {
        let p = PIDFXML.cipidPrefix
        forEach(\.displayNames) { PIDFXML.writeNote(&w, NS.cipid, p, $0.pointee, local: "display-name") }
        if let card = pointee.card { PIDFXML.writeText(&w, NS.cipid, p, "card", card) }
        if let homepage = pointee.homepage { PIDFXML.writeText(&w, NS.cipid, p, "homepage", homepage) }
        if let icon = pointee.icon { PIDFXML.writeText(&w, NS.cipid, p, "icon", icon) }
        if let map = pointee.map { PIDFXML.writeText(&w, NS.cipid, p, "map", map) }
        if let sound = pointee.sound { PIDFXML.writeText(&w, NS.cipid, p, "sound", sound) }
    }
}

extension UnsafePointer<ServiceCapabilities> {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        used.insert(PIDFXML.Used.caps)
        forEach(\.extensions) { used.insert(tree: $0.pointee) }
    }

    /// Writes `servcaps` with its children in the order of RFC 5196 §6's
    /// schema (stable for equal ranks, as the `xml` builder sorts them).
    func write(to w: inout XMLStreamWriter) {
        let flags = pointee.flags, descriptions = pointee.descriptions, lists = pointee.lists
        let extensions = pointee.extensions
        var count = flags.count + descriptions.count + extensions.count
        for i in lists.indices { count += lists[i].name == "type" ? lists[i].supported.count : 1 }
        // The children as (rank, item) pairs of integers, in a temporary allocation (on the
        // stack for a usual servcaps: a heap array cost an allocation per write).
        withUnsafeTemporaryAllocation(of: (rank: Int, item: ServiceCapabilities.Item).self, capacity: count) { items in
            var n = 0
            func add(_ rank: Int, _ item: ServiceCapabilities.Item) {
                items.initializeElement(at: n, to: (rank, item))
                n += 1
            }
            for i in flags.indices { add(ServiceCapabilities.rank(of: flags[i].name), .flag(i)) }
            for i in descriptions.indices { add(ServiceCapabilities.rank(of: "description"), .description(i)) }
            for i in lists.indices {
                if lists[i].name == "type" {
                    for t in lists[i].supported.indices { add(ServiceCapabilities.rank(of: "type"), .type(list: i, entry: t)) }
                } else {
                    add(ServiceCapabilities.rank(of: lists[i].name), .list(i))
                }
            }
            for i in extensions.indices { add(ServiceCapabilities.rank(extensions[i]), .extensionElement(i)) }
            // A stable insertion sort in place: a servcaps has a handful of children.
            for i in items.indices.dropFirst() {
                let entry = items[i]
                var j = i
                while j > 0, items[j - 1].rank > entry.rank {
                    items[j] = items[j - 1]
                    j -= 1
                }
                items[j] = entry
            }

            let p = PIDFXML.capsPrefix
            w.startElement(NS.caps, "servcaps", prefix: p)
            for entry in items {
                switch entry.item {
                case .flag(let i):
                    PIDFXML.writeText(&w, NS.caps, p, flags[i].name, flags[i].value ? "true" : "false")
                case .description(let i):
                    PIDFXML.writeNote(&w, NS.caps, p, descriptions[i], local: "description")
                case .type(let list, let entry):
                    PIDFXML.writeText(&w, NS.caps, p, "type", lists[list].supported[entry])
                case .list(let i):
                    let list = lists[i]
                    w.startElement(NS.caps, list.name, prefix: p)
                    for (local, entries) in [("supported", list.supported), ("notsupported", list.notSupported)] where !entries.isEmpty {
                        w.startElement(NS.caps, local, prefix: p)
                        for entry in entries {
                            if let textName = ServiceCapabilities.textEntry[list.name] {
                                PIDFXML.writeText(&w, NS.caps, p, textName, entry)
                            } else {
                                w.startElement(NS.caps, entry, prefix: p)
                                w.endElement()
                            }
                        }
                        w.endElement()
                    }
                    w.endElement()
                case .extensionElement(let i):
                    w.element(extensions[i], verbatim: true)
                }
            }
            w.endElement()
            // The pairs are plain integers: nothing to deinitialize.
        }
    }
}

extension ServiceCapabilities {
    /// One child of `servcaps`, before ordering: where it is in the value.
    fileprivate enum Item {
        case flag(Int), description(Int), type(list: Int, entry: Int), list(Int), extensionElement(Int)
    }
}
