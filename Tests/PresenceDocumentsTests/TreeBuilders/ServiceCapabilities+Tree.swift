@testable import PresenceDocuments
import XMLBridge

extension ServiceCapabilities {
    var xml: XMLElement {
        var items: [XMLElement] = flags.map { PIDFXML.element(NS.caps, $0.name, text: $0.value ? "true" : "false") }
        items += descriptions.map { PIDFXML.note(NS.caps, $0, local: "description") }
        for list in lists {
            if list.name == "type" {
                items += list.supported.map { PIDFXML.element(NS.caps, "type", text: $0) }
                continue
            }
            func part(_ local: String, _ entries: [String]) -> [XMLElement] {
                guard !entries.isEmpty else { return [] }
                return [
                    PIDFXML.element(
                        NS.caps, local,
                        children: entries.map { entry in
                            if let textName = Self.textEntry[list.name] {
                                PIDFXML.element(NS.caps, textName, text: entry)
                            } else {
                                PIDFXML.element(NS.caps, entry)
                            }
                        })
                ]
            }
            items.append(
                PIDFXML.element(
                    NS.caps, list.name,
                    children: part("supported", list.supported) + part("notsupported", list.notSupported)))
        }
        items += extensions.map(PIDFXML.verbatim)
        let ordered = items.enumerated().sorted {
            (Self.rank($0.element), $0.offset) < (Self.rank($1.element), $1.offset)
        }
        return PIDFXML.element(NS.caps, "servcaps", children: ordered.map(\.element))
    }
}
