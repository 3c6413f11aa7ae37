import XMLBridge

/// An element kept verbatim: a value tree, or the recorded parse events of a
/// decoded document (``XMLCursor/detached``), whose tree is built only when
/// asked for and which writes the same bytes the tree would.
enum VerbatimElement: Sendable {
    case tree(XMLElement)
    case recorded(XMLCursor)

    var tree: XMLElement {
        switch self {
        case .tree(let e): e
        case .recorded(let c): c.subtree
        }
    }

    func write(to w: inout XMLStreamWriter) {
        switch self {
        case .tree(let e): w.element(e)
        case .recorded(let c): w.element(c)
        }
    }
}
