public import XMLBridge

extension ContactCard {
    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads a `contactCard` ([MS-PRES] §2.2.2.7.5, schema §7.3).
    ///
    /// ```
    /// <contactCard majorVersion? minorVersion? isUCEnabled?>
    ///   identity* (name/displayName*, email*) address* company* department* title* office*
    ///   url* phone* automaton?
    ///   [ct:delimiter type? description?] [ct:delimiter displayADPhoto? photo*] ct:end?
    /// </contactCard>
    /// ```
    ///
    /// Lenient ([MS-PRES] §2.2.2.7.5 example 4 writes `type` without a
    /// delimiter): every modelled element is recognised wherever it appears;
    /// delimiters and `ct:end` are structure only. Unknown elements are kept
    /// verbatim in `extensions`; unknown children inside `identity`, `address`
    /// and `phone` are ignored.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName(NS.contactCard, "contactCard"))
        try self.init(contactCardElement: xml)
    }

    /// ``init(cursor:)`` for an element whose name is known to be right (the decoder of the
    /// enclosing element has matched it), without testing it again.
    init(contactCardElement xml: XMLCursor) throws(XMLError) {
        let ns = NS.contactCard
        // The fields are gathered in locals and the card made once at the end: a card made
        // first and filled in by the closure was built aside and copied into place. The fields
        // held out of line are gathered only once one of them is found (`rare` made then): a card of
        // an identity alone makes, and frees, none of them. The attributes are read first, as
        // before: a bad isUCEnabled is the error reported before any child's.
        var rare: Rare?
        if let majorVersion = xml[attribute: "majorVersion"] { rare.set { $0.majorVersion = majorVersion } }
        if let minorVersion = xml[attribute: "minorVersion"] { rare.set { $0.minorVersion = minorVersion } }
        if let isUCEnabled = try xml.boolAttribute("isUCEnabled") { rare.set { $0.isUCEnabled = isUCEnabled } }
        var displayNames: [LocalizedText] = []
        var emails: [String] = []
        var urls: [TypedURI] = []
        var photos: [Photo] = []
        try xml.forEachElement { (child) throws(XMLError) in
            // Each child's name looked up in the recording, not copied out and compared with
            // one name after another.
            switch child.match(in: Self.childNames) {
            case .identity?:
                // One walk over the identity's children, each value appended in place (no
                // arrays of cursors and of values are built per name and for the e-mails).
                child.forEachElement { part in
                    if part.hasName(ns, "name") {
                        part.forEachElement { display in
                            if display.hasName(ns, "displayName") {
                                displayNames.append(LocalizedText(lcidElement: display))
                            }
                        }
                    } else if part.hasName(ns, "email") {
                        emails.append(part.trimmedText)
                    }
                }
            case .address?:
                let address = Address(
                    type: child[attribute: "type"],
                    street: child.elements(XMLName(ns, "street")).map(LocalizedText.init(lcidElement:)),
                    city: child.elements(XMLName(ns, "city")).map(LocalizedText.init(lcidElement:)),
                    state: child.elements(XMLName(ns, "state")).map(LocalizedText.init(lcidElement:)),
                    zipcode: child.elements(XMLName(ns, "zipcode")).map(LocalizedText.init(lcidElement:)),
                    countryCode: child.element(XMLName(ns, "countryCode"))?.trimmedText)
                rare.set { $0.addresses.append(address) }
            case .company?: rare.set { $0.company.append(LocalizedText(lcidElement: child)) }
            case .department?: rare.set { $0.department.append(LocalizedText(lcidElement: child)) }
            case .title?: rare.set { $0.title.append(LocalizedText(lcidElement: child)) }
            case .office?: rare.set { $0.office.append(LocalizedText(lcidElement: child)) }
            case .url?: urls.append(TypedURI(type: child[attribute: "type"], uri: child.trimmedText))
            case .phone?:
                let phone = Phone(
                    type: child[attribute: "type"],
                    uri: child.element(XMLName(ns, "uri"))?.trimmedText ?? "",
                    displayStrings: child.elements(XMLName(ns, "displayString")).map(LocalizedText.init(lcidElement:)))
                rare.set { $0.phones.append(phone) }
            case .automaton?:
                let automaton = try child.boolText()
                rare.set { $0.automaton = automaton }
            case .type?: rare.set { $0.type = child.trimmedText }
            case .description?: rare.set { $0.descriptionText = child.trimmedText }
            case .displayADPhoto?:
                let displayADPhoto = try child.boolText()
                rare.set { $0.displayADPhoto = displayADPhoto }
            case .photo?:
                photos.append(
                    Photo(
                        type: child[attribute: "type"], uri: child.element(XMLName(ns, "uri"))?.trimmedText,
                        hash: child.element(XMLName(ns, "hash"))?.trimmedText))
            case .delimiter?, .end?: break
            case nil: rare.set { $0.extensions.append(child.subtree) }
            }
        }
        self.init(
            displayNames: consume displayNames, emails: consume emails, urls: consume urls, photos: consume photos,
            rare: consume rare)
    }

    /// The children the decoder reads: the contact card namespace's, named by their raw values,
    /// and the common types' delimiter and end (structure only).
    private enum Child: String, CaseIterable {
        case identity, address, company, department, title, office, url, phone, automaton, type, description
        case displayADPhoto, photo, delimiter, end
    }
    private static let childNames = XMLNameCases<Child> {
        switch $0 {
        case .delimiter: .ctDelimiter
        case .end: .ctEnd
        default: XMLName(NS.contactCard, $0.rawValue)
        }
    }
}

extension ContactCard.Rare? {
    /// Changes the fields through `body`, all absent before it when there were none.
    mutating func set(_ body: (inout ContactCard.Rare) -> Void) {
        // Taken out (self left nil meanwhile) so that its arrays stay uniquely referenced.
        var fields = self ?? ContactCard.Rare()
        self = nil
        body(&fields)
        self = fields
    }
}
