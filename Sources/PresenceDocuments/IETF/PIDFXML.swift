import XMLBridge

/// Shared reading and writing helpers of the PIDF-family codecs
/// (`PIDFDocument+XML`, `RPID+XML`, `ServiceCapabilities+XML`).
///
/// Reading matches (namespace, local name) only. An element is taken into the
/// typed model only when the model can hold all of it (its attributes and its
/// children); anything else stays verbatim in the nearest `extensions`, so no
/// input is silently lost.
enum PIDFXML {
    /// Prefixes used when writing, and the order in which the root declares them.
    static let prefixes: [(uri: String, prefix: String?)] = [
        (NS.pidf, nil), (NS.dataModel, "dm"), (NS.rpid, "rpid"), (NS.cipid, "c"), (NS.caps, "caps"),
        (NS.locationTypes, "lt"), (NS.rpidStatus, "ep"), (NS.rpidTuple, "et"),
    ]

    static func prefix(for namespace: String) -> String? {
        prefixes.first { $0.uri == namespace }?.prefix ?? nil
    }

    static let langName = XMLName(NS.xml, "lang")

    // MARK: Reading

    static func lang(_ e: XMLCursor) -> String? { e.attribute(langName) }

    /// No attributes allowed.
    static let noAttributes = XMLNameTable([])
    /// `xml:lang` alone.
    static let langOnly = XMLNameTable([langName])
    /// RFC 4480's `id` and `fromUntil` attribute group.
    static let idFromUntil = XMLNameTable(unqualified: ["id", "from", "until"])

    /// True when every attribute's name is in `names` (compared in the recording).
    static func hasOnlyAttributes(_ e: XMLCursor, _ names: XMLNameTable = noAttributes) -> Bool {
        e.allAttributes(in: names)
    }

    /// The trimmed text of a text-only element whose attributes are all in `names`.
    static func text(_ e: XMLCursor, attributes names: XMLNameTable = noAttributes) -> String? {
        guard !e.hasElementChildren, hasOnlyAttributes(e, names) else { return nil }
        return e.trimmedText
    }

    /// A note-shaped element (`Note_t`, RFC 4479 §5.1.1): text with an optional `xml:lang`.
    static func note(_ e: XMLCursor) -> PIDFNote? {
        text(e, attributes: langOnly).map { PIDFNote($0, lang: lang(e)) }
    }

    /// An empty element (`empty` type of RFC 4479 §5.1.1): no attributes, no content but white space.
    static func isEmpty(_ e: XMLCursor) -> Bool {
        e.attributeCount == 0 && e.hasOnlyWhitespace
    }

    /// Puts `value` into an empty slot; false (the caller keeps the element
    /// verbatim) when the slot is taken or the element did not decode.
    static func fill<T>(_ slot: inout T?, _ value: consuming T?) -> Bool {
        guard case .none = slot, value != nil else { return false }
        slot = value
        return true
    }

    /// Appends a decoded value; false when the element did not decode.
    static func append<T>(_ list: inout [T], _ value: T?) -> Bool {
        guard let value else { return false }
        list.append(value)
        return true
    }
}
