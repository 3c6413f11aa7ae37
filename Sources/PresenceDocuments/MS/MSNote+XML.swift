public import XMLBridge

extension MSNote {
    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads a `note` ([MS-PRES] has no schema for it; the shape is taken from
    /// the examples at §2.2.2.1, §4.2.1; docs/flows.md, "Note category format").
    ///
    /// ```
    /// <note xmlns="http://schemas.microsoft.com/2006/09/sip/note">
    ///   <body type="personal" uri="" startTime? endTime?>text</body>*
    /// </note>
    /// ```
    ///
    /// Body text is kept as written (not trimmed); other attributes of `body`
    /// are kept in `otherAttributes`; children other than `body` are ignored.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName(NS.note, "note"))
        try self.init(noteElement: xml)
    }

    /// ``init(cursor:)`` for an element whose name is known to be right (the decoder of the
    /// enclosing element has matched it), without testing it again.
    init(noteElement xml: XMLCursor) throws(XMLError) {
        // The bodies gathered in a local and the note made once at the end: made first and
        // filled in from the closure, it was built aside and copied into place.
        var bodies: [Body] = []
        xml.forEachElement { b in
            guard b.hasName(NS.note, "body") else { return }
            // The attributes read in one pass (the first of a repeated name counts, as with a
            // lookup); the others are collected only when there are some.
            var type: String?
            var uri: String?
            var startTime: String?
            var endTime: String?
            var hasOther = false
            // The names are looked up in the recording, not copied out to be compared.
            b.forEachAttributeValue(in: Self.bodyAttributeNames) { attribute, value in
                switch attribute {
                case .type?: if type == nil { type = b.string(value) }
                case .uri?: if uri == nil { uri = b.string(value) }
                case .startTime?: if startTime == nil { startTime = b.string(value) }
                case .endTime?: if endTime == nil { endTime = b.string(value) }
                case nil: hasOther = true
                }
            }
            // The values the attribute closure gathered are moved out of its captures (consume).
            bodies.append(
                Body(
                    text: b.text, type: consume type, uri: consume uri, startTime: consume startTime,
                    endTime: consume endTime,
                    otherAttributes: hasOther ? b.attributes.excluding(Self.bodyAttributes) : []))
        }
        self.init(bodies: consume bodies)
    }

    /// The attributes of `body` the decoder models, named by their raw values; all others go to
    /// `otherAttributes`.
    private enum BodyAttribute: String, CaseIterable { case type, uri, startTime, endTime }
    /// The names of ``BodyAttribute``.
    private static let bodyAttributes = BodyAttribute.allCases.map(\.rawValue)
    /// ``BodyAttribute`` for a lookup in the recording.
    private static let bodyAttributeNames = XMLNameCases<BodyAttribute>()
}
