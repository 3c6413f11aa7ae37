/// Writes value trees as namespace-well-formed XML 1.0 in UTF-8.
///
/// Each element is written with the prefix it prefers (`nil` = default
/// namespace); a declaration is added wherever the prefix is not already bound
/// to the element's namespace. Elements whose children are elements only are
/// indented when `indent` is set; elements with any text child are written
/// exactly as they are, so mixed and verbatim content round-trips.
public struct XMLWriter: Sendable {
    public var indent: String?
    public var declaration: Bool

    public init(indent: String? = "  ", declaration: Bool = true) {
        self.indent = indent
        self.declaration = declaration
    }

    private static let xmlNamespace = "http://www.w3.org/XML/1998/namespace"
    private static let xmlnsNamespace = "http://www.w3.org/2000/xmlns/"

    /// Whether `prefix` may be bound to `uri` (Namespaces in XML 1.0 §3):
    /// `xmlns` never, `xml` only to its own namespace, and neither namespace
    /// to any other prefix.
    private static func canDeclare(_ prefix: String, _ uri: String) -> Bool {
        if prefix.isEmpty || prefix == "xmlns" || uri == xmlnsNamespace { return false }
        return (prefix == "xml") == (uri == xmlNamespace)
    }

    public func string(_ root: XMLElement) -> String {
        String(decoding: bytes(root), as: UTF8.self)
    }

    public func bytes(_ root: XMLElement) -> [UInt8] {
        var out = XMLByteSink(capacity: 2048)
        if declaration {
            out.append(#"<?xml version="1.0" encoding="UTF-8"?>"# as StaticString)
            if indent != nil { out.append(0x0A) }
        }
        var scope = Scope()
        scope.bindings.reserveCapacity(16)
        let indentBytes = indent.map { Array($0.utf8) }
        write(root, depth: 0, scope: &scope, indent: indentBytes, into: &out)
        if indent != nil { out.append(0x0A) }
        return out.finish()
    }

    /// Prefix bindings in force, innermost last.
    private struct Scope {
        var bindings: [(prefix: String?, uri: String)] = []
        func lookup(_ prefix: String?) -> String? {
            if prefix == "xml" { return XMLWriter.xmlNamespace }
            var i = bindings.endIndex
            while i > bindings.startIndex {
                i -= 1
                if bindings[i].prefix == prefix { return bindings[i].uri }
            }
            return prefix == nil ? "" : nil
        }
        func prefix(for uri: String) -> String?? {
            if uri == XMLWriter.xmlNamespace { return .some("xml") }
            for b in bindings.reversed() where b.uri == uri && b.prefix != nil && lookup(b.prefix) == uri {
                return .some(b.prefix)
            }
            return nil
        }
        /// Binds `prefix` to `uri` unless it already is (a new binding is a declaration to write).
        mutating func bind(_ prefix: String?, _ uri: String) {
            if lookup(prefix) != uri { bindings.append((prefix, uri)) }
        }
    }

    private func write(_ element: XMLElement, depth: Int, scope: inout Scope, indent: [UInt8]?, into out: inout XMLByteSink) {
        // The bindings this element adds are its declarations: scope.bindings[saved...].
        let saved = scope.bindings.count
        defer { scope.bindings.removeLast(scope.bindings.count - saved) }
        // The element's own prefix: a hint that cannot be declared (`xmlns`, or
        // `xml` for another namespace; Namespaces in XML 1.0 §3) is dropped, and
        // the XML namespace is always written with its predeclared `xml` prefix.
        let namespace = element.name.namespace
        var elementPrefix = element.prefix.flatMap { Self.canDeclare($0, namespace) ? $0 : nil }
        if namespace == Self.xmlNamespace {
            elementPrefix = "xml"
        } else if namespace.isEmpty {
            elementPrefix = nil
        }
        // Declarations the source had (QName-valued content may rely on them),
        // unless they would rebind the prefix this element needs or are not
        // declarable at all.
        for d in element.namespaceDeclarations where d.prefix != elementPrefix || d.uri == namespace {
            if d.uri.isEmpty && d.prefix != nil { continue }
            if let p = d.prefix, !Self.canDeclare(p, d.uri) { continue }
            if d.prefix == nil && (d.uri == Self.xmlNamespace || d.uri == Self.xmlnsNamespace) { continue }
            scope.bind(d.prefix, d.uri)
        }
        if namespace == Self.xmlNamespace {
            // predeclared
        } else if namespace.isEmpty {
            scope.bind(nil, "")
        } else {
            scope.bind(elementPrefix, namespace)
        }
        // Namespaced attributes need a prefix that is bound to their namespace
        // (computed only when some attribute has a namespace).
        var attributePrefixes: [String?] = []
        if element.attributes.contains(where: { !$0.name.namespace.isEmpty }) {
            attributePrefixes.reserveCapacity(element.attributes.count)
            for attribute in element.attributes {
                let ns = attribute.name.namespace
                if ns.isEmpty { attributePrefixes.append(nil); continue }
                let hint = attribute.prefix.flatMap { Self.canDeclare($0, ns) ? $0 : nil }
                if let p = hint, scope.lookup(p) == ns {
                    attributePrefixes.append(p)
                } else if let found = scope.prefix(for: ns) {
                    attributePrefixes.append(found)
                } else {
                    let stem = hint ?? "ns"
                    var p = stem
                    var n = 1
                    while scope.lookup(p) != nil { p = "\(stem)\(n)"; n += 1 }
                    scope.bind(p, ns)
                    attributePrefixes.append(p)
                }
            }
        }

        out.append(0x3C)  // <
        appendQName(elementPrefix, element.name.local, into: &out)
        for d in scope.bindings[saved...] {
            out.append(0x20)
            out.append(0x78); out.append(0x6D); out.append(0x6C); out.append(0x6E); out.append(0x73)  // xmlns
            if let p = d.prefix { out.append(0x3A); out.append(p) }
            out.append(0x3D); out.append(0x22)  // ="
            escape(d.uri, attribute: true, into: &out)
            out.append(0x22)
        }
        for (i, attribute) in element.attributes.enumerated() {
            out.append(0x20)
            appendQName(attributePrefixes.isEmpty ? nil : attributePrefixes[i], attribute.name.local, into: &out)
            out.append(0x3D); out.append(0x22)  // ="
            escape(attribute.value, attribute: true, into: &out)
            out.append(0x22)
        }
        if element.children.isEmpty {
            out.append(0x2F); out.append(0x3E)  // />
            return
        }
        out.append(0x3E)  // >
        let pretty = indent != nil && !element.children.contains { if case .text = $0 { true } else { false } }
        for child in element.children {
            switch child {
            case .text(let text):
                escape(text, attribute: false, into: &out)
            case .element(let e):
                if pretty { newline(depth + 1, indent, into: &out) }
                write(e, depth: depth + 1, scope: &scope, indent: indent, into: &out)
            }
        }
        if pretty { newline(depth, indent, into: &out) }
        out.append(0x3C); out.append(0x2F)  // </
        appendQName(elementPrefix, element.name.local, into: &out)
        out.append(0x3E)
    }

    private func newline(_ depth: Int, _ indent: [UInt8]?, into out: inout XMLByteSink) {
        guard let indent else { return }
        out.append(0x0A)
        for _ in 0..<depth { out.append(indent) }
    }


    private func appendQName(_ prefix: String?, _ local: String, into out: inout XMLByteSink) {
        if let prefix { out.append(prefix); out.append(0x3A) }
        out.append(local)
    }

    private func escape(_ s: String, attribute: Bool, into out: inout XMLByteSink) {
        var s = s
        s.withUTF8 { bytes in
            // Most text needs no escaping: copy runs of plain bytes at once.
            var runStart = 0
            for (i, byte) in bytes.enumerated() {
                let replacement: StaticString
                switch byte {
                case 0x26: replacement = "&amp;"
                case 0x3C: replacement = "&lt;"
                case 0x3E: replacement = "&gt;"
                case 0x22 where attribute: replacement = "&quot;"
                case 0x09 where attribute: replacement = "&#9;"
                case 0x0A where attribute: replacement = "&#10;"
                case 0x0D: replacement = "&#13;"
                case 0x00..<0x20 where byte != 0x09 && byte != 0x0A:
                    // XML 1.0 §2.2 admits no other C0 control, not even as a reference: U+FFFD stands in.
                    replacement = "\u{FFFD}"
                default: continue
                }
                out.append(UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
                out.append(replacement)
                runStart = i + 1
            }
            out.append(UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
        }
    }
}
