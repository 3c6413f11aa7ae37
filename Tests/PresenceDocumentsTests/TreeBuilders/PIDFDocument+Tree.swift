@testable import PresenceDocuments
import XMLBridge

extension PIDFDocument {
    /// The document as an element tree: tuples, notes, persons, devices, then
    /// Microsoft `linked-identities`, `cid`, top-level CIPID (the order of
    /// [MS-PRES] §4.10), then kept extensions.
    var xml: XMLElement {
        var root = PIDFXML.element(NS.pidf, "presence", attributes: [("entity", entity)])
        var children = tuples.map(\.xml)
        children += notes.map { PIDFXML.note(NS.pidf, $0) }
        children += persons.map(\.xml)
        children += devices.map(\.xml)
        if let linkedIdentities { children.append(linkedIdentities.xml) }
        if let cid { children.append(PIDFXML.element(NS.pidf, "cid", text: cid)) }
        children += cipid.xmlElements
        children += extensions.map(PIDFXML.verbatim)
        root.children = children.map { .element($0) }
        PIDFXML.declareNamespaces(on: &root)
        return root
    }
}

extension PIDFTuple {
    var xml: XMLElement {
        var children = [status.xml]
        children += deviceIDs.map { PIDFXML.element(NS.dataModel, "deviceID", text: $0) }
        if let caps = status.capabilities { children.append(caps.xml) }
        children += rpid.xmlElements
        children += cipid.xmlElements
        children += extensions.map(PIDFXML.verbatim)
        if let contact {
            children.append(
                PIDFXML.element(NS.pidf, "contact", attributes: [("priority", contact.priority)], text: contact.uri))
        }
        children += notes.map { PIDFXML.note(NS.pidf, $0) }
        if let timestamp { children.append(PIDFXML.element(NS.pidf, "timestamp", text: timestamp)) }
        return PIDFXML.element(NS.pidf, "tuple", attributes: [("id", id)], children: children)
    }
}

extension PIDFStatus {
    /// Written without `capabilities`, which ``PIDFTuple`` writes in the tuple (RFC 5196 §5).
    var xml: XMLElement {
        var children: [XMLElement] = []
        if let text = basic?.rawValue ?? unrecognizedBasic {
            children.append(PIDFXML.element(NS.pidf, "basic", text: text))
        }
        children += rpid.xmlElements
        children += extensions.map(PIDFXML.verbatim)
        return PIDFXML.element(NS.pidf, "status", children: children)
    }
}

extension PIDFPerson {
    var xml: XMLElement {
        var children = rpid.xmlElements + cipid.xmlElements + extensions.map(PIDFXML.verbatim)
        children += notes.map { PIDFXML.note(NS.dataModel, $0) }
        if let timestamp { children.append(PIDFXML.element(NS.dataModel, "timestamp", text: timestamp)) }
        return PIDFXML.element(NS.dataModel, "person", attributes: [("id", id)], children: children)
    }
}

extension PIDFDevice {
    var xml: XMLElement {
        var children = rpid.xmlElements + extensions.map(PIDFXML.verbatim)
        if let deviceID { children.append(PIDFXML.element(NS.dataModel, "deviceID", text: deviceID)) }
        children += notes.map { PIDFXML.note(NS.dataModel, $0) }
        if let timestamp { children.append(PIDFXML.element(NS.dataModel, "timestamp", text: timestamp)) }
        return PIDFXML.element(NS.dataModel, "device", attributes: [("id", id)], children: children)
    }
}

extension LinkedIdentities {
    var xml: XMLElement {
        let list =
            secondaryIdentities.isEmpty
            ? []
            : [
                PIDFXML.element(
                    NS.pidf, "secondary-identities",
                    children: secondaryIdentities.map { PIDFXML.element(NS.pidf, "secondary-identity", text: $0) })
            ]
        return PIDFXML.element(NS.pidf, "linked-identities", attributes: [("primary-id", primaryID)], children: list)
    }
}
