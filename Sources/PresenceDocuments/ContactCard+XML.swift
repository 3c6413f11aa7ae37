public import XMLBridge

extension ContactCard {
    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads a `contactCard` ([MS-PRES] §2.2.2.7.5, schema §7.3, seed lines 4028-4295).
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
        let ns = NS.contactCard
        try xml.expect(XMLName(ns, "contactCard"))
        // The fields are gathered in locals and the card made once at the end: a card made
        // first and filled in by the closure was built aside and copied into place (a retain
        // and a release of each of its fifteen references). The attributes are read first, as
        // before: a bad isUCEnabled is the error reported before any child's.
        let majorVersion = xml[attribute: "majorVersion"], minorVersion = xml[attribute: "minorVersion"]
        let isUCEnabled = try xml.boolAttribute("isUCEnabled")
        var displayNames: [LocalizedText] = [], emails: [String] = [], addresses: [Address] = []
        var company: [LocalizedText] = [], department: [LocalizedText] = [], title: [LocalizedText] = []
        var office: [LocalizedText] = [], urls: [TypedURI] = [], phones: [Phone] = [], photos: [Photo] = []
        var automaton: Bool?, type: String?, descriptionText: String?, displayADPhoto: Bool?
        var extensions: [XMLElement] = []
        try xml.forEachElement { (child) throws(XMLError) in
            // Each child's name looked up in the recording, not copied out and compared with
            // one name after another.
            switch child.match(in: Self.childNames) {
            case .identity?:
                // One walk over the identity's children, each value appended in place (no
                // arrays of cursors and of values are built per name and for the e-mails).
                child.forEachElement { part in
                    if part.is(ns, "name") {
                        part.forEachElement { display in
                            if display.is(ns, "displayName") { displayNames.append(LocalizedText(lcidElement: display)) }
                        }
                    } else if part.is(ns, "email") {
                        emails.append(part.trimmedText)
                    }
                }
            case .address?:
                addresses.append(Address(
                    type: child[attribute: "type"],
                    street: child.elements(XMLName(ns, "street")).map(LocalizedText.init(lcidElement:)),
                    city: child.elements(XMLName(ns, "city")).map(LocalizedText.init(lcidElement:)),
                    state: child.elements(XMLName(ns, "state")).map(LocalizedText.init(lcidElement:)),
                    zipcode: child.elements(XMLName(ns, "zipcode")).map(LocalizedText.init(lcidElement:)),
                    countryCode: child.element(XMLName(ns, "countryCode"))?.trimmedText))
            case .company?: company.append(LocalizedText(lcidElement: child))
            case .department?: department.append(LocalizedText(lcidElement: child))
            case .title?: title.append(LocalizedText(lcidElement: child))
            case .office?: office.append(LocalizedText(lcidElement: child))
            case .url?: urls.append(TypedURI(type: child[attribute: "type"], uri: child.trimmedText))
            case .phone?:
                phones.append(Phone(
                    type: child[attribute: "type"],
                    uri: child.element(XMLName(ns, "uri"))?.trimmedText ?? "",
                    displayStrings: child.elements(XMLName(ns, "displayString")).map(LocalizedText.init(lcidElement:))))
            case .automaton?: automaton = try child.boolText()
            case .type?: type = child.trimmedText
            case .description?: descriptionText = child.trimmedText
            case .displayADPhoto?: displayADPhoto = try child.boolText()
            case .photo?:
                photos.append(Photo(
                    type: child[attribute: "type"], uri: child.element(XMLName(ns, "uri"))?.trimmedText,
                    hash: child.element(XMLName(ns, "hash"))?.trimmedText))
            case .delimiter?, .end?: break
            case nil: extensions.append(child.subtree)
            }
        }
        self.init(
            displayNames: displayNames, emails: emails, addresses: addresses, company: company,
            department: department, title: title, office: office, urls: urls, phones: phones, automaton: automaton,
            type: type, descriptionText: descriptionText, displayADPhoto: displayADPhoto, photos: photos,
            majorVersion: majorVersion, minorVersion: minorVersion, isUCEnabled: isUCEnabled, extensions: extensions)
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

    /// Writes `contactCard` in schema order, with one `ct:delimiter` before
    /// `type`/`description` and a second before `displayADPhoto`/`photo`
    /// (the first is written whenever the second block is present).
    /// Extensions are written last.
    public var xml: XMLElement {
        let ns = NS.contactCard
        var e = XMLElement.make(ns, "contactCard", [
            ("majorVersion", majorVersion), ("minorVersion", minorVersion), ("isUCEnabled", isUCEnabled?.xsd),
        ])
        if !displayNames.isEmpty || !emails.isEmpty {
            var identity = XMLElement.make(ns, "identity")
            if !displayNames.isEmpty {
                identity.append(.make(ns, "name", children: displayNames.map { $0.element(ns, "displayName") }))
            }
            for email in emails { identity.append(.text(ns, "email", email)) }
            e.append(identity)
        }
        for a in addresses {
            var address = XMLElement.make(ns, "address", [("type", a.type)])
            for s in a.street { address.append(s.element(ns, "street")) }
            for s in a.city { address.append(s.element(ns, "city")) }
            for s in a.state { address.append(s.element(ns, "state")) }
            for s in a.zipcode { address.append(s.element(ns, "zipcode")) }
            if let c = a.countryCode { address.append(.text(ns, "countryCode", c)) }
            e.append(address)
        }
        for t in company { e.append(t.element(ns, "company")) }
        for t in department { e.append(t.element(ns, "department")) }
        for t in title { e.append(t.element(ns, "title")) }
        for t in office { e.append(t.element(ns, "office")) }
        for u in urls { e.append(.text(ns, "url", u.uri, [("type", u.type)])) }
        for p in phones {
            var phone = XMLElement.make(ns, "phone", [("type", p.type)], children: [.text(ns, "uri", p.uri)])
            for d in p.displayStrings { phone.append(d.element(ns, "displayString")) }
            e.append(phone)
        }
        if let automaton { e.append(.text(ns, "automaton", automaton.xsd)) }
        let secondBlock = displayADPhoto != nil || !photos.isEmpty
        if type != nil || descriptionText != nil || secondBlock {
            e.append(XMLElement(.ctDelimiter))
            if let type { e.append(.text(ns, "type", type)) }
            if let descriptionText { e.append(.text(ns, "description", descriptionText)) }
        }
        if secondBlock {
            e.append(XMLElement(.ctDelimiter))
            if let displayADPhoto { e.append(.text(ns, "displayADPhoto", displayADPhoto.xsd)) }
            for p in photos {
                var photo = XMLElement.make(ns, "photo", [("type", p.type)])
                if let uri = p.uri { photo.append(.text(ns, "uri", uri)) }
                if let hash = p.hash { photo.append(.text(ns, "hash", hash)) }
                e.append(photo)
            }
        }
        for x in extensions { e.append(x) }
        return e
    }
}
