@testable import PresenceDocuments
import XMLBridge

extension PublishFault {
    /// Writes the fault (no namespace).
    var xml: XMLElement {
        let ops = operations.map { op in
            var e = XMLElement.make(
                "", "operation",
                [
                    ("index", String(op.index)), ("version", op.version.map(String.init)),
                    ("curVersion", op.currentVersion.map(String.init)),
                ])
            e.children = op.data?.xmlNodes ?? []
            return e
        }
        return .make("", "Fault", children: [.text("", "Faultcode", faultCode), .make("", "details", children: ops)])
    }
}
