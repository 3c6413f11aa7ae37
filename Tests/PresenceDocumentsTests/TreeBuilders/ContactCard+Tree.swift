@testable import PresenceDocuments
import XMLBridge

extension ContactCard {
    /// Writes `contactCard` in schema order, with one `ct:delimiter` before
    /// `type`/`description` and a second before `displayADPhoto`/`photo`
    /// (the first is written whenever the second block is present).
    /// Extensions are written last.
    var xml: XMLElement {
        let ns = NS.contactCard
        var e = XMLElement.make(
            ns, "contactCard",
            [
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
