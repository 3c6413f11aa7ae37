@testable import PresenceDocuments
import XMLBridge

extension MSNote {
    /// Writes the `note` element in its default namespace.
    var xml: XMLElement {
        var e = XMLElement.make(NS.note, "note")
        for b in bodies {
            var body = XMLElement.text(
                NS.note, "body", b.text,
                [
                    ("type", b.type), ("uri", b.uri), ("startTime", b.startTime), ("endTime", b.endTime),
                ])
            body.attributes += b.otherAttributes
            e.append(body)
        }
        return e
    }
}
