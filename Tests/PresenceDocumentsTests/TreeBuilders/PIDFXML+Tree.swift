@testable import PresenceDocuments
import XMLBridge

extension PIDFXML {
    /// An element with the codec's prefix for its namespace; `nil` attribute values are left out.
    static func element(
        _ namespace: String, _ local: String, attributes: [(String, String?)] = [], lang: String? = nil,
        text: String? = nil, children: [XMLElement] = []
    ) -> XMLElement {
        var e = XMLElement(XMLName(namespace, local), prefix: prefix(for: namespace))
        for case (let name, let value?) in attributes {
            e.attributes.append(XMLAttribute(XMLName("", name), value))
        }
        if let lang { e.attributes.append(XMLAttribute(langName, lang, prefix: "xml")) }
        if let text { e.children.append(.text(text)) }
        e.children += children.map { .element($0) }
        return e
    }

    static func note(_ namespace: String, _ note: PIDFNote, local: String = "note") -> XMLElement {
        element(namespace, local, lang: note.lang, text: note.text)
    }

    /// A kept element, marked so that an indenting ``XMLWriter`` writes it
    /// exactly as it came: every element whose children are all elements gets
    /// an empty text child, which the writer treats as mixed content (no
    /// re-indentation) and which writes no characters. Without it, re-indented
    /// extension content would parse back with extra white-space text.
    static func verbatim(_ e: XMLElement) -> XMLElement {
        var copy = e
        var onlyElements = !copy.children.isEmpty
        copy.children = copy.children.map {
            switch $0 {
            case .element(let child): return .element(verbatim(child))
            case .text:
                onlyElements = false
                return $0
            }
        }
        if onlyElements { copy.children.append(.text("")) }
        return copy
    }

    /// Declares on `root` the codec's namespaces that the tree uses with the
    /// codec's prefix, in ``prefixes`` order, so output is tidy.
    static func declareNamespaces(on root: inout XMLElement) {
        // Bit i set: prefixes[i] is used with the codec's prefix somewhere in the tree.
        let table = prefixes
        var used: UInt32 = 0
        func walk(_ e: XMLElement) {
            let namespace = e.name.namespace
            let length = namespace.utf8.count
            // Lengths first: most of these URIs share a long common prefix.
            for i in table.indices where table[i].uri.utf8.count == length && table[i].uri == namespace {
                if table[i].prefix == e.prefix { used |= 1 << UInt32(i) }
                break
            }
            for child in e.children { if case .element(let c) = child { walk(c) } }
        }
        walk(root)
        root.namespaceDeclarations = table.indices.filter { used & (1 << UInt32($0)) != 0 }.map {
            (table[$0].prefix, table[$0].uri)
        }
    }
}
