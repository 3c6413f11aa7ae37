import XMLBridge

/// Reading and writing of the RPID elements (RFC 4480 §3, schema §5.1) that
/// may stand in a `dm:person`, a `tuple`, a `dm:device` or (pre-RFC,
/// Microsoft) a tuple's `status`. A decoder gathers them in a local ``RPID/Fields`` and
/// boxes it once (``RPID/init(_:)``).
extension RPID.Fields {
    private static let timeOffsetAttributes = XMLNameTable(unqualified: ["id", "from", "until", "description"])
    private static let userInputAttributes = XMLNameTable(unqualified: ["id", "idle-threshold", "last-input"])

    /// The RFC 4480 §3 elements the model holds, named by their raw values in the RPID namespace.
    private enum Element: String, CaseIterable {
        case activities, mood
        case placeType = "place-type"
        case privacy, relationship
        case serviceClass = "service-class"
        case sphere
        case placeIs = "place-is"
        case statusIcon = "status-icon"
        case timeOffset = "time-offset"
        case userInput = "user-input"
        case `class`
    }

    /// ``Element``, looked up in the recording by ``XMLCursor/match(in:)``.
    private static let elements = XMLNameCases<Element>(namespace: NS.rpid)

    /// Takes `e` into the model when it is an RPID element the model can hold
    /// completely; false leaves it to the caller (``absorbLegacyActivities(_:)``, then its
    /// `extensions`).
    ///
    /// Names are compared in the recording (``XMLCursor/is(_:_:)``, ``XMLCursor/position(in:)``),
    /// not copied out.
    mutating func absorb(_ e: XMLCursor) -> Bool {
        guard let element = e.match(in: Self.elements) else { return false }
        switch element {
        case .activities:
            guard let value = RPIDTokens(cursor: e) else { return false }
            activities.append(value)
            return true
        case .mood: return PIDFXML.fill(&mood, RPIDTokens(cursor: e))
        case .placeType: return PIDFXML.fill(&placeType, RPIDTokens(cursor: e, tokenNamespace: NS.locationTypes))
        case .privacy: return PIDFXML.fill(&privacy, RPIDTokens(cursor: e))
        case .relationship: return PIDFXML.fill(&relationship, RPIDTokens(cursor: e))
        case .serviceClass: return PIDFXML.fill(&serviceClass, RPIDTokens(cursor: e))
        case .sphere: return PIDFXML.fill(&sphere, RPIDTokens(cursor: e))
        case .placeIs: return PIDFXML.fill(&placeIs, RPIDPlaceIs(cursor: e))
        case .statusIcon:
            let icon = PIDFXML.text(e, attributes: PIDFXML.idFromUntil).map {
                RPIDStatusIcon(
                    uri: $0, id: e[attribute: "id"], from: e[attribute: "from"], until: e[attribute: "until"])
            }
            return PIDFXML.fill(&statusIcon, icon)
        case .timeOffset:
            guard let text = PIDFXML.text(e, attributes: Self.timeOffsetAttributes),
                let minutes = Int(text)
            else { return false }
            timeOffsets.append(
                RPIDTimeOffset(
                    minutes: minutes, description: e[attribute: "description"], id: e[attribute: "id"],
                    from: e[attribute: "from"], until: e[attribute: "until"]))
            return true
        case .userInput:
            guard let text = PIDFXML.text(e, attributes: Self.userInputAttributes),
                let value = RPIDUserInput.Value(rawValue: text)
            else { return false }
            var threshold: Int?
            if let raw = e[attribute: "idle-threshold"] {
                guard let parsed = Int(raw.trimmingXMLWhitespace()) else { return false }
                threshold = parsed
            }
            return PIDFXML.fill(
                &userInput,
                RPIDUserInput(
                    value, idleThreshold: threshold, lastInput: e[attribute: "last-input"], id: e[attribute: "id"]))
        case .class: return PIDFXML.fill(&self.class, PIDFXML.text(e))
        }
    }

    /// Takes `e` when it is one of the pre-RFC activities Microsoft servers write in a tuple
    /// status ([MS-PRES] §2.2.2.8.1; RFC 4480 replaced them by `rpid:activities`): an
    /// `ep:activities` holding only `ep:activity` texts.
    /// ```
    /// <ep:activities xmlns:ep="urn:ietf:params:xml:ns:pidf:status:rpid-status">
    ///   <ep:activity>away</ep:activity> </ep:activities>
    /// ```
    /// A caller that also tries CIPID tries this last, so that a CIPID element is not first
    /// tested for being one.
    mutating func absorbLegacyActivities(_ e: XMLCursor) -> Bool {
        guard e.hasName(NS.rpidStatus, "activities"), e.attributeCount == 0 else { return false }
        var found: [String] = []
        for child in e.children {
            if child.isText, child.hasOnlyWhitespace { continue }
            guard child.hasName(NS.rpidStatus, "activity"), let text = PIDFXML.text(child) else { return false }
            found.append(text)
        }
        legacyActivities += found
        return true
    }
}

extension RPIDTokens {
    /// Reads a token-list element (RFC 4480 §3.2 activities, §3.5 mood, §3.8
    /// place-type, §3.9 privacy, §3.10 relationship, §3.11 service-class, §3.12 sphere):
    /// ```
    /// <xs:sequence>
    ///   <xs:element name="note" type="Note_t" minOccurs="0" maxOccurs="unbounded"/>
    ///   <xs:choice> <xs:element name="unknown" type="empty"/>
    ///     <xs:sequence maxOccurs="unbounded"> <xs:choice>
    ///       <xs:element name="appointment" type="empty"/> ... <xs:element name="other" type="Note_t"/>
    ///       <xs:any namespace="##other" maxOccurs="unbounded" processContents="lax"/>
    /// </xs:choice> </xs:sequence> </xs:choice> </xs:sequence>
    /// <xs:attributeGroup ref="fromUntil"/> <xs:attribute name="id" type="xs:ID"/>
    /// ```
    /// Empty RPID elements are tokens (an open vocabulary); empty elements of
    /// `tokenNamespace` (RFC 4589 location types in place-type) are tokens that
    /// carry their namespace; free text is `.text` (RFC 4480 §4 writes
    /// `<rpid:sphere>bowling league</rpid:sphere>` although its schema has no text
    /// there); other elements are kept verbatim. Nil when the element has an
    /// attribute other than id, from, until.
    init?(cursor e: XMLCursor, tokenNamespace: String? = nil) {
        guard PIDFXML.hasOnlyAttributes(e, PIDFXML.idFromUntil) else { return nil }
        // Stored properties set here (a delegated init's value would be copied in).
        id = e[attribute: "id"]
        from = e[attribute: "from"]
        until = e[attribute: "until"]
        notes = []
        values = []
        // Mostly token elements: room for all of them at once.
        values.reserveCapacity(e.elementCount)
        for child in e.children {
            if child.isText {
                if !child.hasOnlyWhitespace { values.append(.text(child.trimmedText)) }
            } else if child.isIn(namespace: NS.rpid) {
                // The namespace compared once, and the local name copied out once and compared
                // as a short string (each test of the whole name compared the namespace again).
                // An RPID element that is none of these is kept verbatim: it is not empty, so
                // it is no token of `tokenNamespace` either.
                let local = child.localName
                if local == "note", let note = PIDFXML.note(child) {
                    notes.append(note)
                } else if local == "other", let other = PIDFXML.note(child) {
                    values.append(.other(other.text, lang: other.lang))
                } else if PIDFXML.isEmpty(child) {
                    values.append(.token(local))
                } else {
                    values.append(.extensionElement(child.subtree))
                }
            } else if let tokenNamespace, child.isIn(namespace: tokenNamespace), PIDFXML.isEmpty(child) {
                values.append(.token(child.localName, namespace: tokenNamespace))
            } else {
                values.append(.extensionElement(child.subtree))
            }
        }
    }
}

extension RPIDPlaceIs {
    /// Reads `<place-is>` (RFC 4480 §3.7):
    /// ```
    /// <xs:sequence> <xs:element name="note" type="Note_t" minOccurs="0" maxOccurs="unbounded"/>
    ///   <xs:element name="audio" minOccurs="0"> <xs:choice> noisy | ok | quiet | unknown </xs:choice>
    ///   <xs:element name="video" minOccurs="0"> <xs:choice> toobright | ok | dark | unknown </xs:choice>
    ///   <xs:element name="text" minOccurs="0"> <xs:choice> uncomfortable | inappropriate | ok | unknown </xs:choice>
    /// </xs:sequence> <xs:attributeGroup ref="fromUntil"/> <xs:attribute name="id" type="xs:ID"/>
    /// ```
    /// Nil (kept verbatim by the caller) unless each of audio, video, text
    /// appears at most once with exactly one empty token element.
    init?(cursor e: XMLCursor) {
        guard PIDFXML.hasOnlyAttributes(e, PIDFXML.idFromUntil) else { return nil }
        // The parts are gathered in locals and each stored property is set once,
        // after the loop: set first and changed in a loop that can fail, the
        // value was built aside and copied into place (as in the PIDF decoders).
        var notes: [PIDFNote] = []
        var audio: String?
        var video: String?
        var text: String?
        for child in e.children {
            guard !child.isText else {
                if child.hasOnlyWhitespace { continue }
                return nil
            }
            guard child.isIn(namespace: NS.rpid) else { return nil }
            let local = child.localName
            if local == "note", let note = PIDFXML.note(child) {
                notes.append(note)
                continue
            }
            guard child.attributeCount == 0 else { return nil }
            // Exactly one token: the first one is kept, a second one fails (no array is built).
            var token: String?
            for element in child.children {
                if element.isText, element.hasOnlyWhitespace { continue }
                guard element.isIn(namespace: NS.rpid), PIDFXML.isEmpty(element), token == nil else { return nil }
                token = element.localName
            }
            guard token != nil else { return nil }
            switch local {
            case "audio": guard PIDFXML.fill(&audio, token) else { return nil }
            case "video": guard PIDFXML.fill(&video, token) else { return nil }
            case "text": guard PIDFXML.fill(&text, token) else { return nil }
            default: return nil
            }
        }
        id = e[attribute: "id"]
        from = e[attribute: "from"]
        until = e[attribute: "until"]
        self.notes = notes
        self.audio = audio
        self.video = video
        self.text = text
    }
}
