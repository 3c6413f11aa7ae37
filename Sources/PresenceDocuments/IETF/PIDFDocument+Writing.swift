import XMLBridge

// The PIDF writer (RFC 3863 §4.4 with RFC 4479, 4480, 4482, 5196 and [MS-PRES]
// §2.2.2.8.1): each value writes itself into an `XMLStreamWriter`, the codec's
// prefixes declared on the root for the namespaces the document uses. The tests
// keep element-tree builders (Tests/PresenceDocumentsTests/TreeBuilders) as an
// oracle: both give the same bytes for every vector.

extension PIDFXML {
    typealias Name = XMLStreamWriter.Name

    /// ``prefixes`` for the writer: a writer made with them finds the codec's bindings by
    /// position, and the root declares them by their bits (``Used``).
    static let namespaces = XMLStreamWriter.Namespaces(prefixes)
    static let pidf = namespaces[Used.pidf], dm = namespaces[Used.dm], rpid = namespaces[Used.rpid]
    static let cipid = namespaces[Used.cipid], caps = namespaces[Used.caps], ep = namespaces[Used.ep]

    /// The element names the writer writes, each with its codec prefix and spelled once.
    enum Names {
        static let presence = Name("presence", in: pidf), tuple = Name("tuple", in: pidf)
        static let status = Name("status", in: pidf), basic = Name("basic", in: pidf)
        static let contact = Name("contact", in: pidf), note = Name("note", in: pidf)
        static let timestamp = Name("timestamp", in: pidf), cid = Name("cid", in: pidf)
        static let linkedIdentities = Name("linked-identities", in: pidf)
        static let secondaryIdentities = Name("secondary-identities", in: pidf)
        static let secondaryIdentity = Name("secondary-identity", in: pidf)
        static let person = Name("person", in: dm), device = Name("device", in: dm)
        static let deviceID = Name("deviceID", in: dm), dmNote = Name("note", in: dm)
        static let dmTimestamp = Name("timestamp", in: dm)
        static let activities = Name("activities", in: rpid), `class` = Name("class", in: rpid)
        static let mood = Name("mood", in: rpid), placeIs = Name("place-is", in: rpid)
        static let placeType = Name("place-type", in: rpid), privacy = Name("privacy", in: rpid)
        static let relationship = Name("relationship", in: rpid), serviceClass = Name("service-class", in: rpid)
        static let sphere = Name("sphere", in: rpid), statusIcon = Name("status-icon", in: rpid)
        static let timeOffset = Name("time-offset", in: rpid), userInput = Name("user-input", in: rpid)
        static let rpidNote = Name("note", in: rpid), other = Name("other", in: rpid)
        static let audio = Name("audio", in: rpid), video = Name("video", in: rpid), text = Name("text", in: rpid)
        static let legacyActivities = Name("activities", in: ep), legacyActivity = Name("activity", in: ep)
        static let displayName = Name("display-name", in: cipid), card = Name("card", in: cipid)
        static let homepage = Name("homepage", in: cipid), icon = Name("icon", in: cipid)
        static let map = Name("map", in: cipid), sound = Name("sound", in: cipid)
        static let servcaps = Name("servcaps", in: caps), description = Name("description", in: caps)
        static let type = Name("type", in: caps)
    }

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
    }

    /// A text-only element: `xml:lang` when given, then the text.
    static func writeText(_ w: inout XMLStreamWriter, _ name: Name, _ text: String, lang: String? = nil) {
        w.startElement(name, indentsChildren: false)
        if let lang { w.attribute(langName, lang, prefix: "xml") }
        w.text(text)
        w.endElement()
    }

    static func writeNote(_ w: inout XMLStreamWriter, _ name: Name, _ note: PIDFNote) {
        writeText(&w, name, note.text, lang: note.lang)
    }
}

extension PIDFDocument {
    /// The document as UTF-8 XML with a declaration and two-space indentation,
    /// written directly.
    public func serialized() -> [UInt8] {
        var w = XMLStreamWriter(namespaces: PIDFXML.namespaces)
        write(to: &w)
        return w.finish()
    }

    /// Writes the `presence` element: the codec namespaces in use declared on
    /// it in ``PIDFXML/prefixes`` order, then tuples, notes, persons, devices,
    /// `linked-identities`, `cid`, top-level CIPID and kept extensions.
    func write(to w: inout XMLStreamWriter) {
        var used = PIDFXML.Used()
        used.insert(PIDFXML.Used.pidf)
        for x in tuples { x.markNamespaces(&used) }
        for x in persons { x.markNamespaces(&used) }
        for x in devices { x.markNamespaces(&used) }
        cipid.markNamespaces(&used)
        for x in extensions { used.insert(tree: x) }
        w.startElement(PIDFXML.Names.presence, declaring: UInt64(used.bits))
        w.attribute("entity", entity)
        for x in tuples { x.write(to: &w) }
        for x in notes { PIDFXML.writeNote(&w, PIDFXML.Names.note, x) }
        for x in persons { x.write(to: &w) }
        for x in devices { x.write(to: &w) }
        linkedIdentities?.write(to: &w)
        if let cid { PIDFXML.writeText(&w, PIDFXML.Names.cid, cid) }
        cipid.write(to: &w)
        for x in extensions { w.element(x, verbatim: true) }
        w.endElement()
    }
}

extension PIDFTuple {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        if !deviceIDs.isEmpty { used.insert(PIDFXML.Used.dm) }
        status.markNamespaces(&used)
        rpid.markNamespaces(&used)
        cipid.markNamespaces(&used)
        for x in extensions { used.insert(tree: x) }
    }

    func write(to w: inout XMLStreamWriter) {
        w.startElement(PIDFXML.Names.tuple)
        w.attribute("id", id)
        status.write(to: &w)
        for x in deviceIDs { PIDFXML.writeText(&w, PIDFXML.Names.deviceID, x) }
        status.capabilities?.write(to: &w)
        rpid.write(to: &w)
        cipid.write(to: &w)
        for x in extensions { w.element(x, verbatim: true) }
        if let contact = contact {
            w.startElement(PIDFXML.Names.contact, indentsChildren: false)
            w.attribute("priority", contact.priority)
            w.text(contact.uri)
            w.endElement()
        }
        for x in notes { PIDFXML.writeNote(&w, PIDFXML.Names.note, x) }
        if let timestamp = timestamp { PIDFXML.writeText(&w, PIDFXML.Names.timestamp, timestamp) }
        w.endElement()
    }
}

extension PIDFStatus {
    /// Marks the status's namespaces, `capabilities` (which the tuple writes) included.
    func markNamespaces(_ used: inout PIDFXML.Used) {
        capabilities?.markNamespaces(&used)
        rpid.markNamespaces(&used)
        for x in extensions { used.insert(tree: x) }
    }

    /// Written without `capabilities`, which ``PIDFTuple`` writes in the tuple (RFC 5196 §5).
    func write(to w: inout XMLStreamWriter) {
        w.startElement(PIDFXML.Names.status)
        if let text = basic?.rawValue ?? unrecognizedBasic {
            PIDFXML.writeText(&w, PIDFXML.Names.basic, text)
        }
        rpid.write(to: &w)
        for x in extensions { w.element(x, verbatim: true) }
        w.endElement()
    }
}

extension PIDFPerson {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        used.insert(PIDFXML.Used.dm)
        rpid.markNamespaces(&used)
        cipid.markNamespaces(&used)
        for x in extensions { used.insert(tree: x) }
    }

    func write(to w: inout XMLStreamWriter) {
        w.startElement(PIDFXML.Names.person)
        w.attribute("id", id)
        rpid.write(to: &w)
        cipid.write(to: &w)
        for x in extensions { w.element(x, verbatim: true) }
        for x in notes { PIDFXML.writeNote(&w, PIDFXML.Names.dmNote, x) }
        if let timestamp = timestamp { PIDFXML.writeText(&w, PIDFXML.Names.dmTimestamp, timestamp) }
        w.endElement()
    }
}

extension PIDFDevice {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        used.insert(PIDFXML.Used.dm)
        rpid.markNamespaces(&used)
        for x in extensions { used.insert(tree: x) }
    }

    func write(to w: inout XMLStreamWriter) {
        w.startElement(PIDFXML.Names.device)
        w.attribute("id", id)
        rpid.write(to: &w)
        for x in extensions { w.element(x, verbatim: true) }
        if let deviceID = deviceID { PIDFXML.writeText(&w, PIDFXML.Names.deviceID, deviceID) }
        for x in notes { PIDFXML.writeNote(&w, PIDFXML.Names.dmNote, x) }
        if let timestamp = timestamp { PIDFXML.writeText(&w, PIDFXML.Names.dmTimestamp, timestamp) }
        w.endElement()
    }
}

extension LinkedIdentities {
    func write(to w: inout XMLStreamWriter) {
        w.startElement(PIDFXML.Names.linkedIdentities)
        w.attribute("primary-id", primaryID)
        if !secondaryIdentities.isEmpty {
            w.startElement(PIDFXML.Names.secondaryIdentities)
            for s in secondaryIdentities { PIDFXML.writeText(&w, PIDFXML.Names.secondaryIdentity, s) }
            w.endElement()
        }
        w.endElement()
    }
}

extension RPID {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        box?.value.markNamespaces(&used)
    }

    func write(to w: inout XMLStreamWriter) {
        box?.value.write(to: &w)
    }
}

extension RPID.Fields {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        if !legacyActivities.isEmpty { used.insert(PIDFXML.Used.ep) }
        for x in activities { x.markNamespaces(&used) }
        // Presence tested by matching the case: `!= nil` took the `Equatable` comparison, which
        // copied the element (place-is: its seven strings and notes) and destroyed it again.
        if case .some = `class` { used.insert(PIDFXML.Used.rpid) }
        if case .some = placeIs { used.insert(PIDFXML.Used.rpid) }
        if case .some = statusIcon { used.insert(PIDFXML.Used.rpid) }
        if case .some = userInput { used.insert(PIDFXML.Used.rpid) }
        if !timeOffsets.isEmpty { used.insert(PIDFXML.Used.rpid) }
        mood?.markNamespaces(&used)
        placeType?.markNamespaces(&used)
        privacy?.markNamespaces(&used)
        relationship?.markNamespaces(&used)
        serviceClass?.markNamespaces(&used)
        sphere?.markNamespaces(&used)
    }

    /// Legacy activities first, then RFC 4480 §3 elements in alphabetical order.
    func write(to w: inout XMLStreamWriter) {
        if !legacyActivities.isEmpty {
            w.startElement(PIDFXML.Names.legacyActivities)
            for x in legacyActivities { PIDFXML.writeText(&w, PIDFXML.Names.legacyActivity, x) }
            w.endElement()
        }
        for x in activities { x.write(to: &w, PIDFXML.Names.activities) }
        if let c = `class` { PIDFXML.writeText(&w, PIDFXML.Names.class, c) }
        mood?.write(to: &w, PIDFXML.Names.mood)
        placeIs?.write(to: &w)
        placeType?.write(to: &w, PIDFXML.Names.placeType)
        privacy?.write(to: &w, PIDFXML.Names.privacy)
        relationship?.write(to: &w, PIDFXML.Names.relationship)
        serviceClass?.write(to: &w, PIDFXML.Names.serviceClass)
        sphere?.write(to: &w, PIDFXML.Names.sphere)
        if let icon = statusIcon {
            w.startElement(PIDFXML.Names.statusIcon, indentsChildren: false)
            w.attribute("id", icon.id)
            w.attribute("from", icon.from)
            w.attribute("until", icon.until)
            w.text(icon.uri)
            w.endElement()
        }
        for offset in timeOffsets {
            w.startElement(PIDFXML.Names.timeOffset, indentsChildren: false)
            w.attribute("id", offset.id)
            w.attribute("from", offset.from)
            w.attribute("until", offset.until)
            w.attribute("description", offset.description)
            w.text(String(offset.minutes))
            w.endElement()
        }
        if let input = userInput {
            w.startElement(PIDFXML.Names.userInput, indentsChildren: false)
            w.attribute("id", input.id)
            w.attribute("idle-threshold", input.idleThreshold.map { String($0) })
            w.attribute("last-input", input.lastInput)
            w.text(input.value.rawValue)
            w.endElement()
        }
    }
}

extension RPIDTokens {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        used.insert(PIDFXML.Used.rpid)
        for value in values {
            switch value {
            case .token(_, let namespace?): used.insert(namespace: namespace)
            case .extensionElement(let x): used.insert(tree: x)
            default: break
            }
        }
    }

    /// Writes the element named `name`: notes first (the schemas require it), then the values in order.
    func write(to w: inout XMLStreamWriter, _ name: PIDFXML.Name) {
        var mixed = false
        for value in values { if case .text = value { mixed = true } }
        w.startElement(name, indentsChildren: !mixed)
        w.attribute("id", id)
        w.attribute("from", from)
        w.attribute("until", until)
        for x in notes { PIDFXML.writeNote(&w, PIDFXML.Names.rpidNote, x) }
        for value in values {
            switch value {
            case .token(let name, let namespace):
                if let namespace {
                    w.startElement(namespace, name, prefix: PIDFXML.prefix(for: namespace))
                } else {
                    w.startElement(name, in: PIDFXML.rpid)
                }
                w.endElement()
            case .other(let text, let lang):
                PIDFXML.writeText(&w, PIDFXML.Names.other, text, lang: lang)
            case .text(let text): w.text(text)
            case .extensionElement(let x): w.element(x, verbatim: true)
            }
        }
        w.endElement()
    }
}

extension RPIDPlaceIs {
    func write(to w: inout XMLStreamWriter) {
        w.startElement(PIDFXML.Names.placeIs)
        w.attribute("id", id)
        w.attribute("from", from)
        w.attribute("until", until)
        for x in notes { PIDFXML.writeNote(&w, PIDFXML.Names.rpidNote, x) }
        // One medium after the other (an array of (medium, token) pairs cost an allocation per write).
        Self.writeMedium(&w, PIDFXML.Names.audio, audio)
        Self.writeMedium(&w, PIDFXML.Names.video, video)
        Self.writeMedium(&w, PIDFXML.Names.text, text)
        w.endElement()
    }

    /// `<local><token/></local>` when the medium has a token.
    private static func writeMedium(_ w: inout XMLStreamWriter, _ name: PIDFXML.Name, _ token: String?) {
        guard let token else { return }
        w.startElement(name)
        w.startElement(token, in: PIDFXML.rpid)
        w.endElement()
        w.endElement()
    }
}

extension CIPID {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        if !isEmpty { used.insert(PIDFXML.Used.cipid) }
    }

    func write(to w: inout XMLStreamWriter) {
        box?.value.write(to: &w)
    }
}

extension CIPID.Fields {
    func write(to w: inout XMLStreamWriter) {
        for x in displayNames { PIDFXML.writeNote(&w, PIDFXML.Names.displayName, x) }
        if let card { PIDFXML.writeText(&w, PIDFXML.Names.card, card) }
        if let homepage { PIDFXML.writeText(&w, PIDFXML.Names.homepage, homepage) }
        if let icon { PIDFXML.writeText(&w, PIDFXML.Names.icon, icon) }
        if let map { PIDFXML.writeText(&w, PIDFXML.Names.map, map) }
        if let sound { PIDFXML.writeText(&w, PIDFXML.Names.sound, sound) }
    }
}

extension ServiceCapabilities {
    func markNamespaces(_ used: inout PIDFXML.Used) {
        used.insert(PIDFXML.Used.caps)
        for x in extensions { used.insert(tree: x) }
    }

    /// Writes `servcaps` with its children in the order of RFC 5196 §6's
    /// schema (stable for equal ranks).
    func write(to w: inout XMLStreamWriter) {
        var count = flags.count + descriptions.count + extensions.count
        for i in lists.indices { count += lists[i].name == "type" ? lists[i].supported.count : 1 }
        // The children as (rank, item) pairs, sorted by rank with a stable insertion sort (a
        // servcaps has a handful of children).
        var items: [(rank: Int, item: ServiceCapabilities.Item)] = []
        items.reserveCapacity(count)
        for i in flags.indices { items.append((ServiceCapabilities.rank(of: flags[i].name), .flag(i))) }
        for i in descriptions.indices { items.append((ServiceCapabilities.rank(of: "description"), .description(i))) }
        for i in lists.indices {
            if lists[i].name == "type" {
                for t in lists[i].supported.indices {
                    items.append((ServiceCapabilities.rank(of: "type"), .type(list: i, entry: t)))
                }
            } else {
                items.append((ServiceCapabilities.rank(of: lists[i].name), .list(i)))
            }
        }
        for i in extensions.indices { items.append((ServiceCapabilities.rank(extensions[i]), .extensionElement(i))) }
        for i in items.indices.dropFirst() {
            let entry = items[i]
            var j = i
            while j > 0, items[j - 1].rank > entry.rank {
                items[j] = items[j - 1]
                j -= 1
            }
            items[j] = entry
        }

        let caps = PIDFXML.caps
        w.startElement(PIDFXML.Names.servcaps)
        for entry in items {
            switch entry.item {
            case .flag(let i):
                w.startElement(flags[i].name, in: caps, indentsChildren: false)
                w.text(flags[i].value ? "true" : "false")
                w.endElement()
            case .description(let i):
                PIDFXML.writeNote(&w, PIDFXML.Names.description, descriptions[i])
            case .type(let list, let entry):
                PIDFXML.writeText(&w, PIDFXML.Names.type, lists[list].supported[entry])
            case .list(let i):
                let list = lists[i]
                w.startElement(list.name, in: caps)
                for (local, entries) in [("supported", list.supported), ("notsupported", list.notSupported)]
                where !entries.isEmpty {
                    w.startElement(local, in: caps)
                    for entry in entries {
                        if let textName = ServiceCapabilities.textEntry[list.name] {
                            w.startElement(textName, in: caps, indentsChildren: false)
                            w.text(entry)
                            w.endElement()
                        } else {
                            w.startElement(entry, in: caps)
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
    }
}

extension ServiceCapabilities {
    /// One child of `servcaps`, before ordering: where it is in the value.
    fileprivate enum Item {
        case flag(Int)
        case description(Int)
        case type(list: Int, entry: Int)
        case list(Int)
        case extensionElement(Int)
    }
}
