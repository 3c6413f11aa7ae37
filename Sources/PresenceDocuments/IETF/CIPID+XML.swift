import XMLBridge

extension CIPID.Fields {
    /// The RFC 4482 §3 elements, named by their raw values in the CIPID namespace.
    private enum Element: String, CaseIterable {
        case displayName = "display-name"
        case card, homepage, icon, map, sound
    }

    /// ``Element``, looked up in the recording by ``XMLCursor/match(in:)``.
    private static let elements = XMLNameCases<Element>(namespace: NS.cipid)

    /// Takes `e` into the model when it is a CIPID element (RFC 4482 §3, schema §5):
    /// ```
    /// <xs:element name="card" type="xs:anyURI"/>   <xs:element name="display-name" type="xs:string"/>
    /// <xs:element name="homepage" type="xs:anyURI"/> <xs:element name="icon" type="xs:anyURI"/>
    /// <xs:element name="map" type="xs:anyURI"/>    <xs:element name="sound" type="xs:anyURI"/>
    /// ```
    /// `display-name` may repeat (one per `xml:lang`, RFC 4482 §3.2); a second
    /// card, homepage, icon, map or sound is left to the caller's `extensions`.
    ///
    /// The name is looked up in the recording (``XMLCursor/position(in:)``), not copied out.
    mutating func absorb(_ e: XMLCursor) -> Bool {
        guard let element = e.match(in: Self.elements) else { return false }
        switch element {
        case .displayName:
            guard let name = PIDFXML.note(e) else { return false }
            displayNames.append(name)
            return true
        case .card: return PIDFXML.fill(&card, PIDFXML.text(e))
        case .homepage: return PIDFXML.fill(&homepage, PIDFXML.text(e))
        case .icon: return PIDFXML.fill(&icon, PIDFXML.text(e))
        case .map: return PIDFXML.fill(&map, PIDFXML.text(e))
        case .sound: return PIDFXML.fill(&sound, PIDFXML.text(e))
        }
    }
}
