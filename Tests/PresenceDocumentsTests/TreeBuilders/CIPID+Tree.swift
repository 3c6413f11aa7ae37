@testable import PresenceDocuments
import XMLBridge

extension CIPID {
    var xmlElements: [XMLElement] {
        var out = displayNames.map { PIDFXML.note(NS.cipid, $0, local: "display-name") }
        for case (let local, let value?) in [
            ("card", card), ("homepage", homepage), ("icon", icon), ("map", map), ("sound", sound),
        ] {
            out.append(PIDFXML.element(NS.cipid, local, text: value))
        }
        return out
    }
}
