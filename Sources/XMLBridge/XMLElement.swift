/// A namespace-qualified name: elements and attributes are matched by
/// (namespace URI, local name), never by prefix.
public struct XMLName: Hashable, Sendable, CustomStringConvertible {
    /// The namespace URI; the empty string means "no namespace".
    public var namespace: String
    public var local: String

    public init(_ namespace: String, _ local: String) {
        self.namespace = namespace
        self.local = local
    }

    public var description: String { namespace.isEmpty ? local : "{\(namespace)}\(local)" }
}

/// An attribute of an element. `prefix` is only a hint for writing.
public struct XMLAttribute: Sendable {
    public var name: XMLName
    public var value: String
    public var prefix: String?

    public init(_ name: XMLName, _ value: String, prefix: String? = nil) {
        self.name = name
        self.value = value
        self.prefix = prefix
    }
}

/// A child of an element: another element or character data (CDATA is folded
/// into text; comments and processing instructions are not kept).
public enum XMLNode: Sendable, Hashable {
    case element(XMLElement)
    case text(String)
}

/// An XML element as a value.
///
/// `prefix` and `namespaceDeclarations` record how the source spelled the
/// names, so that extension content is written back the way it came in; they
/// take no part in equality, which compares names, attributes (in any order)
/// and children.
public struct XMLElement: Sendable {
    public var name: XMLName
    public var attributes: [XMLAttribute]
    public var children: [XMLNode]
    /// Preferred prefix when writing; `nil` writes the element in the default namespace.
    public var prefix: String?
    /// Declarations that appeared on this element in the source (prefix `nil` = default).
    public var namespaceDeclarations: [(prefix: String?, uri: String)]
    /// Where the start tag was in the source (1-based; 0 for built elements).
    public var line: Int = 0
    public var column: Int = 0

    public init(
        _ name: XMLName,
        attributes: [XMLAttribute] = [],
        children: [XMLNode] = [],
        prefix: String? = nil,
        namespaceDeclarations: [(prefix: String?, uri: String)] = []
    ) {
        self.name = name
        self.attributes = attributes
        self.children = children
        self.prefix = prefix
        self.namespaceDeclarations = namespaceDeclarations
    }

    /// Child elements, in document order.
    public var elements: some Sequence<XMLElement> {
        children.lazy.compactMap { if case .element(let e) = $0 { e } else { nil } }
    }

    /// Child elements with the given name.
    public func elements(_ name: XMLName) -> [XMLElement] {
        elements.filter { $0.name == name }
    }

    /// The first child element with the given name.
    public func element(_ name: XMLName) -> XMLElement? {
        for case .element(let e) in children where e.name == name { return e }
        return nil
    }

    /// The concatenated character data directly inside this element.
    /// An error about this element's content, located at its start tag.
    public func error(_ message: String, code: XMLError.Code = .unexpectedContent) -> XMLError {
        XMLError(code, "<\(name.local)>: \(message)", line: line, column: column)
    }

    public var text: String {
        var result = ""
        for case .text(let t) in children { result += t }
        return result
    }

    /// The text with surrounding XML white space removed.
    public var trimmedText: String { text.trimmingXMLWhitespace() }

    /// The value of an attribute in no namespace.
    public subscript(attribute local: String) -> String? {
        attribute(XMLName("", local))
    }

    public func attribute(_ name: XMLName) -> String? {
        attributes.first { $0.name == name }?.value
    }

    /// Sets (or with `nil` removes) an attribute.
    public mutating func setAttribute(_ name: XMLName, _ value: String?, prefix: String? = nil) {
        attributes.removeAll { $0.name == name }
        if let value { attributes.append(XMLAttribute(name, value, prefix: prefix)) }
    }

    public mutating func append(_ element: XMLElement) { children.append(.element(element)) }

    /// A copy without white-space-only text nodes anywhere below, for
    /// comparisons that ignore indentation.
    public var strippingWhitespaceText: XMLElement {
        var copy = self
        copy.children = children.compactMap {
            switch $0 {
            case .text(let t): t.isXMLWhitespace ? nil : .text(t)
            case .element(let e): .element(e.strippingWhitespaceText)
            }
        }
        return copy
    }
}

extension XMLElement: Hashable {
    public static func == (a: XMLElement, b: XMLElement) -> Bool {
        guard a.name == b.name, a.children == b.children, a.attributes.count == b.attributes.count else {
            return false
        }
        return a.attributes.allSatisfy { b.attribute($0.name) == $0.value }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(children)
        hasher.combine(attributes.count)
    }
}

extension StringProtocol {
    /// True when the string consists of XML white space only (XML 1.0 §2.3 S).
    public var isXMLWhitespace: Bool {
        utf8.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
    }

    /// The string without leading and trailing XML white space.
    public func trimmingXMLWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
