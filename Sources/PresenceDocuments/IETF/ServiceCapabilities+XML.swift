import XMLBridge

/// Reading and writing of `caps:servcaps` (RFC 5196 §3.2, schema §6).
///
/// ```
/// <xs:complexType name="servcapstype"> <xs:sequence>
///   actor? application? audio? automata? class? control? data? description* duplex?
///   event-packages? extensions? isfocus? message? methods? languages? priority?
///   schemes? text? type* video? <xs:any namespace="##other" .../>*
/// </xs:sequence> </xs:complexType>
/// ```
/// The schema fixes the order of the children, so the model keeps flags,
/// lists and extensions in that order whatever the input order was, and the
/// writer interleaves them the same way: output validates and round-trips.
extension ServiceCapabilities {
    /// Child names in the order `servcapstype` requires.
    static let schemaOrder = [
        "actor", "application", "audio", "automata", "class", "control", "data", "description", "duplex",
        "event-packages", "extensions", "isfocus", "message", "methods", "languages", "priority", "schemes",
        "text", "type", "video",
    ]
    /// Boolean capabilities (`xs:boolean` content), RFC 5196 §3.2.2-§3.2.10.
    static let flagNames: Set<String> = [
        "audio", "application", "data", "control", "video", "text", "message", "automata", "isfocus",
    ]
    /// Capabilities with `<supported>`/`<notsupported>` children, RFC 5196 §3.2.11-§3.2.20.
    static let listNames: Set<String> = [
        "actor", "class", "duplex", "event-packages", "extensions", "languages", "methods", "priority", "schemes",
    ]
    /// Lists whose entries are text elements (`<s>sip</s>`, `<l>en</l>`) rather than empty elements.
    static let textEntry = ["schemes": "s", "languages": "l"]

    static func rank(_ e: XMLElement) -> Int {
        guard e.name.namespace == NS.caps else { return schemaOrder.count }
        return rank(of: e.name.local)
    }

    /// The ``schemaOrder`` names with their places.
    private static let ranks = LocalNameTable(schemaOrder.enumerated().map { (name: $1, value: $0) })

    /// `local`'s place in ``schemaOrder`` (its count when it has none), looked
    /// up with lengths compared first (``LocalNameTable``).
    static func rank(of local: String) -> Int {
        ranks[local] ?? schemaOrder.count
    }

    /// The ``schemaOrder`` names in the caps namespace, for a lookup of a child's rank in the recording.
    private static let capsNames = XMLNameTable(schemaOrder.map { XMLName(NS.caps, $0) })
    /// The ranks of `description` and `type`.
    private static let descriptionRank = rank(of: "description")
    private static let typeRank = rank(of: "type")

    /// Ranks (places in ``schemaOrder``) of the boolean capabilities, as bits.
    private static let flagRanks: UInt32 = schemaOrder.indices.reduce(0) {
        flagNames.contains(schemaOrder[$1]) ? $0 | 1 << $1 : $0
    }
    /// Ranks of the list capabilities, as bits.
    private static let listRanks: UInt32 = schemaOrder.indices.reduce(0) {
        listNames.contains(schemaOrder[$1]) ? $0 | 1 << $1 : $0
    }

    /// Reads `servcaps`; nil when it carries attributes (kept verbatim by the caller).
    /// A child the model cannot hold completely (say `<caps:priority>` entries
    /// with attributes) goes to `extensions`. `type` elements (`xs:string`,
    /// several allowed) become the entries of one list named "type".
    init?(cursor e: XMLCursor) {
        guard e.attributeCount == 0 else { return nil }
        // The parts are gathered in locals and the value made once at the end: made first and
        // filled in as the children were read, it was built aside and copied into place.
        // Mostly flags: room for all of them at once, not an array grown per append.
        var flags: [Flag] = []
        var lists: [List] = []
        var descriptions: [PIDFNote] = []
        var extensions: [XMLElement] = []
        flags.reserveCapacity(e.elementCount)
        // Each child's rank is looked up once, by its whole name in the recording (an element of
        // another namespace has none); it tells flags and lists apart, names them (the table's
        // strings, none copied out of the recording), marks the ones already taken (bits, where
        // the names taken were compared one by one), and whether what was read is still in
        // schema order (no sort needed).
        let other = Self.schemaOrder.count
        var flagRank = -1
        var listRank = -1
        var extensionRank = -1
        var flagsOrdered = true
        var listsOrdered = true
        var extensionsOrdered = true
        var taken: UInt32 = 0
        // The children walked in place, each cursor lent (an iterator hands out one it owns).
        e.forEachElement { child in
            let rank = child.position(in: Self.capsNames) ?? other
            let bit: UInt32 = rank < other ? 1 << rank : 0
            if Self.flagRanks & bit != 0, taken & bit == 0,
                let text = PIDFXML.text(child), let value = Self.boolean(text)
            {
                flags.append(Flag(Self.schemaOrder[rank], value))
                taken |= bit
                if rank < flagRank { flagsOrdered = false }
                flagRank = rank
            } else if rank == Self.descriptionRank, let note = PIDFXML.note(child) {
                descriptions.append(note)
            } else if rank == Self.typeRank, let text = PIDFXML.text(child) {
                if let i = lists.firstIndex(where: { $0.name == "type" }) {
                    lists[i].supported.append(text)
                } else {
                    lists.append(List("type", supported: [text]))
                    if rank < listRank { listsOrdered = false }
                    listRank = rank
                }
            } else if Self.listRanks & bit != 0, taken & bit == 0, let list = Self.list(child) {
                lists.append(list)
                taken |= bit
                if rank < listRank { listsOrdered = false }
                listRank = rank
            } else {
                extensions.append(child.subtree)
                if rank < extensionRank { extensionsOrdered = false }
                extensionRank = rank
            }
        }
        if !flagsOrdered { flags = Self.sorted(flags) { $0.name } }
        if !listsOrdered { lists = Self.sorted(lists) { $0.name } }
        if !extensionsOrdered {
            extensions = Self.sorted(extensions) { $0.name.namespace == NS.caps ? $0.name.local : "" }
        }
        self.init(
            flags: consume flags, lists: consume lists, descriptions: consume descriptions,
            extensions: consume extensions)
    }

    /// `xs:boolean` lexical space: true, false, 1, 0.
    private static func boolean(_ text: String) -> Bool? {
        switch text {
        case "true", "1": true
        case "false", "0": false
        default: nil
        }
    }

    /// `items` stably ordered by their names' places in ``schemaOrder``
    /// (unknown names last); each rank is looked up once, and input already
    /// in schema order (what conforming peers send) is returned as it is.
    private static func sorted<T>(_ items: [T], by name: (T) -> String) -> [T] {
        guard items.count > 1 else { return items }
        let ranks = items.map { rank(of: name($0)) }
        if zip(ranks, ranks.dropFirst()).allSatisfy({ $0 <= $1 }) { return items }
        return ranks.indices.sorted { (ranks[$0], $0) < (ranks[$1], $1) }.map { items[$0] }
    }

    /// `<methods><supported><INVITE/>...</supported><notsupported>...</notsupported></methods>`;
    /// nil when an entry has attributes, element content or a foreign namespace.
    private static func list(_ e: XMLCursor) -> List? {
        guard e.attributeCount == 0 else { return nil }
        var list = List(e.localName)
        var seen = Set<String>()
        for part in e.children {
            guard !part.isText else {
                if part.hasOnlyWhitespace { continue }
                return nil
            }
            guard part.name.namespace == NS.caps, part.name.local == "supported" || part.name.local == "notsupported",
                part.attributeCount == 0, seen.insert(part.name.local).inserted
            else { return nil }
            var entries: [String] = []
            for entry in part.children {
                guard !entry.isText else {
                    if entry.hasOnlyWhitespace { continue }
                    return nil
                }
                guard entry.name.namespace == NS.caps else { return nil }
                if let textName = textEntry[e.localName] {
                    guard entry.name.local == textName, let text = PIDFXML.text(entry), !text.isEmpty else {
                        return nil
                    }
                    entries.append(text)
                } else {
                    guard PIDFXML.isEmpty(entry) else { return nil }
                    entries.append(entry.name.local)
                }
            }
            if part.name.local == "supported" { list.supported = entries } else { list.notSupported = entries }
        }
        return list
    }
}
