public import XMLBridge

extension MSCapability {
    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) {
        self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads a capability element (`<text render="true" capture="true"/>`) of
    /// `services` or `device` ([MS-PRES] §2.2.2.7.2-3, schemas §7.4-7.5): its
    /// local name and attributes. Namespaced attributes are keyed `{namespace}local`.
    /// Content is ignored: the spec's examples write white space inside these
    /// empty elements (`<text ...>` newline `</text>`), which is accepted.
    public init(cursor xml: XMLCursor) {
        self.init(name: xml.localName, sortedAttributes: [])
        let count = xml.attributeCount
        if count == 0 { return }
        sortedAttributes.reserveCapacity(count)
        // The schema's attributes, found in one pass, are appended in the table's order, which
        // is key order: no key is compared, and each is keyed by the table's string. A repeated
        // key keeps the last value, as assigning it in a dictionary did. (Found into an array
        // made per capability, they cost a run-time type lookup and an allocation each:
        // callgrind `presence-bench profile decode`.)
        var found = InlineArray<8, XMLCursor.AttributeValue?>(repeating: nil)
        var onlySchema = true
        xml.forEachAttributeValue(in: Self.schemaAttributeNames) { position, value in
            if let position { found[position] = value } else { onlySchema = false }
        }
        if onlySchema {
            for i in found.indices {
                if let value = found[i] {
                    sortedAttributes.append(Attribute(Self.schemaAttributes[i], xml.string(value)))
                }
            }
            return
        }
        // Any other attribute: each goes into its place in key order (a capability has a few).
        xml.forEachAttribute { name, value in setAttribute(name.description, value) }
    }

    /// The attributes the schemas give a capability (capabilityType, [MS-PRES] §7.4-7.5), in
    /// key order. Kept as these strings: copying a literal costs no reference counting, where
    /// a name of over 15 bytes (`deviceAvailability`) read from a recording is a heap string.
    /// Eight: ``init(cursor:)`` finds them in an `InlineArray` of that size.
    private static let schemaAttributes = [
        "capture", "deviceAvailability", "preferred", "preferredEndpointId", "publish", "render", "uri", "version",
    ]
    private static let schemaAttributeNames = XMLNameTable(unqualified: schemaAttributes)

    /// The attributes in key order, a key `{namespace}local` as an attribute in that namespace.
    var xmlAttributes: [XMLAttribute] {
        sortedAttributes.map { attribute in
            let (key, value) = (attribute.key, attribute.value)
            guard key.hasPrefix("{"), let close = key.firstIndex(of: "}") else {
                return XMLAttribute(XMLName("", key), value)
            }
            let ns = String(key[key.index(after: key.startIndex)..<close])
            return XMLAttribute(XMLName(ns, String(key[key.index(after: close)...])), value)
        }
    }
}

extension [MSCapability] {
    /// How many distinct attribute sets ``appendCapabilities(of:)`` shares.
    static let sharedAttributeSets = 8

    /// Appends a capability for each child element of `xml` (a `capabilities` element). One
    /// whose attributes are written as an earlier one's (``XMLCursor/hasSameAttributes(as:)``)
    /// holds that one's attributes array: a list's capabilities mostly repeat the same
    /// `render`, `capture` and `deviceAvailability`, and each shared array is one allocation,
    /// and its values, not made (and not freed). Only the first ``sharedAttributeSets``
    /// distinct sets are compared with, so that a list from the network of thousands of
    /// distinct capabilities is not read in quadratic time.
    mutating func appendCapabilities(of xml: XMLCursor) {
        let count = xml.elementCount
        reserveCapacity(self.count + count)
        // The first capabilities whose attributes differ from all before them, with the element each was read from.
        var distinct: [(element: XMLCursor, capability: Int)] = []
        distinct.reserveCapacity(Swift.min(count, Self.sharedAttributeSets))
        xml.forEachElement { item in
            if let earlier = distinct.first(where: { item.hasSameAttributes(as: $0.element) }) {
                append(MSCapability(name: item.localName, sortedAttributes: self[earlier.capability].sortedAttributes))
            } else {
                if distinct.count < Self.sharedAttributeSets { distinct.append((item, self.count)) }
                append(MSCapability(cursor: item))
            }
        }
    }
}
