@testable import PresenceDocuments
import XMLBridge

extension UserProperties {
    /// Writes `userProperties` in the categories namespace: lines, fields, extensions.
    var xml: XMLElement {
        let ns = NS.categories
        var e = XMLElement.make(ns, "userProperties")
        if !lines.isEmpty {
            e.append(
                .make(
                    ns, "lines",
                    children: lines.map {
                        .text(ns, "line", $0.uri, [("lineType", $0.lineType), ("lineServer", $0.lineServer)])
                    }))
        }
        for f in fields { e.append(.text(ns, f.name, f.value)) }
        for x in extensions { e.append(x) }
        return e
    }
}
