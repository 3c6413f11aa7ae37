@testable import PresenceDocuments
import XMLBridge

extension RPID {
    /// The elements to write, legacy activities first, then RFC 4480 §3 elements
    /// in alphabetical order (every place that holds them is `##other`, any order).
    var xmlElements: [XMLElement] {
        var out: [XMLElement] = []
        if !legacyActivities.isEmpty {
            out.append(
                PIDFXML.element(
                    NS.rpidStatus, "activities",
                    children: legacyActivities.map {
                        PIDFXML.element(NS.rpidStatus, "activity", text: $0)
                    }))
        }
        out += activities.map { $0.xml("activities") }
        if let c = `class` { out.append(PIDFXML.element(NS.rpid, "class", text: c)) }
        if let mood { out.append(mood.xml("mood")) }
        if let placeIs { out.append(placeIs.xml) }
        if let placeType { out.append(placeType.xml("place-type")) }
        if let privacy { out.append(privacy.xml("privacy")) }
        if let relationship { out.append(relationship.xml("relationship")) }
        if let serviceClass { out.append(serviceClass.xml("service-class")) }
        if let sphere { out.append(sphere.xml("sphere")) }
        if let icon = statusIcon {
            out.append(
                PIDFXML.element(
                    NS.rpid, "status-icon", attributes: [("id", icon.id), ("from", icon.from), ("until", icon.until)],
                    text: icon.uri))
        }
        for offset in timeOffsets {
            out.append(
                PIDFXML.element(
                    NS.rpid, "time-offset",
                    attributes: [
                        ("id", offset.id), ("from", offset.from), ("until", offset.until),
                        ("description", offset.description),
                    ],
                    text: String(offset.minutes)))
        }
        if let input = userInput {
            out.append(
                PIDFXML.element(
                    NS.rpid, "user-input",
                    attributes: [
                        ("id", input.id), ("idle-threshold", input.idleThreshold.map { String($0) }),
                        ("last-input", input.lastInput),
                    ],
                    text: input.value.rawValue))
        }
        return out
    }
}

extension RPIDTokens {
    /// Writes the element named `local`: notes first (the schemas require it), then the values in order.
    func xml(_ local: String) -> XMLElement {
        var e = PIDFXML.element(
            NS.rpid, local, attributes: [("id", id), ("from", from), ("until", until)],
            children: notes.map { PIDFXML.note(NS.rpid, $0) })
        for value in values {
            switch value {
            case .token(let name, let namespace): e.append(PIDFXML.element(namespace ?? NS.rpid, name))
            case .other(let text, let lang): e.append(PIDFXML.element(NS.rpid, "other", lang: lang, text: text))
            case .text(let text): e.children.append(.text(text))
            case .extensionElement(let x): e.append(PIDFXML.verbatim(x))
            }
        }
        return e
    }
}

extension RPIDPlaceIs {
    var xml: XMLElement {
        var e = PIDFXML.element(
            NS.rpid, "place-is", attributes: [("id", id), ("from", from), ("until", until)],
            children: notes.map { PIDFXML.note(NS.rpid, $0) })
        for case (let local, let token?) in [("audio", audio), ("video", video), ("text", text)] {
            e.append(PIDFXML.element(NS.rpid, local, children: [PIDFXML.element(NS.rpid, token)]))
        }
        return e
    }
}
