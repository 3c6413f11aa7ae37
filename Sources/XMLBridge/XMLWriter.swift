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

    public func string(_ root: XMLElement) -> String {
        String(decoding: bytes(root), as: UTF8.self)
    }

    public func bytes(_ root: XMLElement) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(2048)
        if declaration {
            out.append(contentsOf: #"<?xml version="1.0" encoding="UTF-8"?>"#.utf8)
            if indent != nil { out.append(0x0A) }
        }
        var scope = Scope()
        write(root, depth: 0, scope: &scope, into: &out)
        if indent != nil { out.append(0x0A) }
        return out
    }

    /// Prefix bindings in force, innermost last.
    private struct Scope {
        var bindings: [(prefix: String?, uri: String)] = []
        func lookup(_ prefix: String?) -> String? {
            if prefix == "xml" { return XMLWriter.xmlNamespace }
            return bindings.last { $0.prefix == prefix }?.uri ?? (prefix == nil ? "" : nil)
        }
        func prefix(for uri: String) -> String?? {
            if uri == XMLWriter.xmlNamespace { return .some("xml") }
            for b in bindings.reversed() where b.uri == uri && b.prefix != nil && lookup(b.prefix) == uri {
                return .some(b.prefix)
            }
            return nil
        }
    }

    private func write(_ element: XMLElement, depth: Int, scope: inout Scope, into out: inout [UInt8]) {
        let saved = scope.bindings.count
        defer { scope.bindings.removeLast(scope.bindings.count - saved) }
        var declarations: [(prefix: String?, uri: String)] = []
        func bind(_ prefix: String?, _ uri: String) {
            if scope.lookup(prefix) != uri {
                scope.bindings.append((prefix, uri))
                declarations.append((prefix, uri))
            }
        }
        // Declarations the source had (QName-valued content may rely on them),
        // unless they would rebind the prefix this element needs.
        for d in element.namespaceDeclarations where d.prefix != element.prefix || d.uri == element.name.namespace {
            if d.uri.isEmpty && d.prefix != nil { continue }
            bind(d.prefix, d.uri)
        }
        // The element's own name.
        var elementPrefix = element.prefix
        if element.name.namespace.isEmpty {
            elementPrefix = nil
            bind(nil, "")
        } else if let p = elementPrefix, p != "xml" {
            bind(p, element.name.namespace)
        } else if elementPrefix == nil {
            bind(nil, element.name.namespace)
        }
        // Namespaced attributes need a prefix that is bound to their namespace.
        var attributePrefixes: [String?] = []
        attributePrefixes.reserveCapacity(element.attributes.count)
        for attribute in element.attributes {
            let ns = attribute.name.namespace
            if ns.isEmpty { attributePrefixes.append(nil); continue }
            if let p = attribute.prefix, scope.lookup(p) == ns {
                attributePrefixes.append(p)
            } else if let found = scope.prefix(for: ns) {
                attributePrefixes.append(found)
            } else {
                var p = attribute.prefix ?? "ns"
                var n = 1
                while scope.lookup(p) != nil { p = "\(attribute.prefix ?? "ns")\(n)"; n += 1 }
                bind(p, ns)
                attributePrefixes.append(p)
            }
        }

        out.append(0x3C)  // <
        appendQName(elementPrefix, element.name.local, into: &out)
        for d in declarations {
            out.append(0x20)
            out.append(contentsOf: "xmlns".utf8)
            if let p = d.prefix { out.append(0x3A); out.append(contentsOf: p.utf8) }
            out.append(contentsOf: "=\"".utf8)
            escape(d.uri, attribute: true, into: &out)
            out.append(0x22)
        }
        for (attribute, prefix) in zip(element.attributes, attributePrefixes) {
            out.append(0x20)
            appendQName(prefix, attribute.name.local, into: &out)
            out.append(contentsOf: "=\"".utf8)
            escape(attribute.value, attribute: true, into: &out)
            out.append(0x22)
        }
        if element.children.isEmpty {
            out.append(contentsOf: "/>".utf8)
            return
        }
        out.append(0x3E)  // >
        let pretty = indent != nil && !element.children.contains { if case .text = $0 { true } else { false } }
        for child in element.children {
            switch child {
            case .text(let text):
                escape(text, attribute: false, into: &out)
            case .element(let e):
                if pretty { newline(depth + 1, into: &out) }
                write(e, depth: depth + 1, scope: &scope, into: &out)
            }
        }
        if pretty { newline(depth, into: &out) }
        out.append(contentsOf: "</".utf8)
        appendQName(elementPrefix, element.name.local, into: &out)
        out.append(0x3E)
    }

    private func newline(_ depth: Int, into out: inout [UInt8]) {
        guard let indent else { return }
        out.append(0x0A)
        for _ in 0..<depth { out.append(contentsOf: indent.utf8) }
    }

    private func appendQName(_ prefix: String?, _ local: String, into out: inout [UInt8]) {
        if let prefix { out.append(contentsOf: prefix.utf8); out.append(0x3A) }
        out.append(contentsOf: local.utf8)
    }

    private func escape(_ s: String, attribute: Bool, into out: inout [UInt8]) {
        for byte in s.utf8 {
            switch byte {
            case 0x26: out.append(contentsOf: "&amp;".utf8)
            case 0x3C: out.append(contentsOf: "&lt;".utf8)
            case 0x3E: out.append(contentsOf: "&gt;".utf8)
            case 0x22 where attribute: out.append(contentsOf: "&quot;".utf8)
            case 0x09 where attribute: out.append(contentsOf: "&#9;".utf8)
            case 0x0A where attribute: out.append(contentsOf: "&#10;".utf8)
            case 0x0D: out.append(contentsOf: "&#13;".utf8)
            default: out.append(byte)
            }
        }
    }
}
