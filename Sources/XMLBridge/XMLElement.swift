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
///
/// The fields live in one shared, copy-on-write box: copying an element (into
/// a child list, out of one, into a decoded value) is one reference count,
/// and a tree is freed one box per element, whatever the element holds.
public struct XMLElement: Sendable {
    /// The fields. Only ever mutated through a uniquely referenced box
    /// (``XMLElement/unique()``), so sharing it between values and threads is safe.
    private final class Storage: @unchecked Sendable {
        @exclusivity(unchecked) var name: XMLName
        @exclusivity(unchecked) var attributes: [XMLAttribute]
        @exclusivity(unchecked) var children: [XMLNode]
        @exclusivity(unchecked) var prefix: String?
        @exclusivity(unchecked) var namespaceDeclarations: [(prefix: String?, uri: String)]
        @exclusivity(unchecked) var line: Int
        @exclusivity(unchecked) var column: Int

        init(
            _ name: XMLName, _ attributes: [XMLAttribute], _ children: [XMLNode], _ prefix: String?,
            _ namespaceDeclarations: [(prefix: String?, uri: String)], _ line: Int, _ column: Int
        ) {
            self.name = name
            self.attributes = attributes
            self.children = children
            self.prefix = prefix
            self.namespaceDeclarations = namespaceDeclarations
            self.line = line
            self.column = column
        }

        func copy() -> Storage {
            Storage(name, attributes, children, prefix, namespaceDeclarations, line, column)
        }
    }

    private var storage: Storage

    /// The box, copied first if another value shares it.
    private mutating func unique() -> Storage {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
        return storage
    }

    public var name: XMLName {
        get { storage.name }
        set { unique().name = newValue }
    }
    public var attributes: [XMLAttribute] {
        get { storage.attributes }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            yield &storage.attributes
        }
    }
    public var children: [XMLNode] {
        get { storage.children }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            yield &storage.children
        }
    }
    /// Preferred prefix when writing; `nil` writes the element in the default namespace.
    public var prefix: String? {
        get { storage.prefix }
        set { unique().prefix = newValue }
    }
    /// Declarations that appeared on this element in the source (prefix `nil` = default).
    public var namespaceDeclarations: [(prefix: String?, uri: String)] {
        get { storage.namespaceDeclarations }
        _modify {
            if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
            yield &storage.namespaceDeclarations
        }
    }
    /// Where the start tag was in the source (1-based; 0 for built elements).
    public var line: Int {
        get { storage.line }
        set { unique().line = newValue }
    }
    public var column: Int {
        get { storage.column }
        set { unique().column = newValue }
    }

    public init(
        _ name: XMLName,
        attributes: [XMLAttribute] = [],
        children: [XMLNode] = [],
        prefix: String? = nil,
        namespaceDeclarations: [(prefix: String?, uri: String)] = []
    ) {
        storage = Storage(name, attributes, children, prefix, namespaceDeclarations, 0, 0)
    }

    /// An element with its source position (the parser's initializer).
    init(
        _ name: XMLName, attributes: [XMLAttribute], prefix: String?,
        namespaceDeclarations: [(prefix: String?, uri: String)], line: Int, column: Int
    ) {
        storage = Storage(name, attributes, [], prefix, namespaceDeclarations, line, column)
    }

    /// Child elements, in document order.
    public var elements: some Sequence<XMLElement> {
        children.lazy.compactMap { if case .element(let e) = $0 { e } else { nil } }
    }

    /// Child elements with the given name.
    public func elements(_ name: XMLName) -> [XMLElement] {
        var found: [XMLElement] = []
        for case .element(let e) in storage.children where e.name == name { found.append(e) }
        return found
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
        let attributes = storage.attributes
        for i in attributes.indices where attributes[i].name.local == local && attributes[i].name.namespace.isEmpty {
            return attributes[i].value
        }
        return nil
    }

    public func attribute(_ name: XMLName) -> String? {
        let attributes = storage.attributes
        for i in attributes.indices
        where attributes[i].name.local == name.local && attributes[i].name.namespace == name.namespace {
            return attributes[i].value
        }
        return nil
    }

    /// Sets (or with `nil` removes) an attribute.
    public mutating func setAttribute(_ name: XMLName, _ value: String?, prefix: String? = nil) {
        attributes.removeAll { $0.name == name }
        if let value { attributes.append(XMLAttribute(name, value, prefix: prefix)) }
    }

    public mutating func append(_ element: XMLElement) { children.append(.element(element)) }
}

extension XMLElement: Hashable {
    /// Equal names, the same attributes in any order, and equal children once
    /// white-space-only text nodes are set aside: indentation is not content
    /// in any document this project reads, so a document re-indented by the
    /// writer stays equal to its source.
    public static func == (a: XMLElement, b: XMLElement) -> Bool {
        guard a.name == b.name, a.attributes.count == b.attributes.count else { return false }
        guard a.attributes.allSatisfy({ b.attribute($0.name) == $0.value }) else { return false }
        var i = a.children.startIndex
        var j = b.children.startIndex
        while true {
            while i < a.children.endIndex, a.children[i].isWhitespaceText { i += 1 }
            while j < b.children.endIndex, b.children[j].isWhitespaceText { j += 1 }
            guard i < a.children.endIndex, j < b.children.endIndex else {
                return i == a.children.endIndex && j == b.children.endIndex
            }
            guard a.children[i] == b.children[j] else { return false }
            i += 1
            j += 1
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(attributes.count)
        hasher.combine(children.lazy.filter { !$0.isWhitespaceText }.count)
    }
}

extension XMLNode {
    /// True for a text node made of XML white space only.
    public var isWhitespaceText: Bool {
        if case .text(let t) = self { t.isXMLWhitespace } else { false }
    }
}

extension String {
    /// True when the string consists of XML white space only (XML 1.0 §2.3 S).
    public var isXMLWhitespace: Bool {
        var copy = self
        return copy.withUTF8 { $0.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D } }
    }

    /// The string without leading and trailing XML white space.
    public func trimmingXMLWhitespace() -> String {
        var copy = self
        return copy.withUTF8 { bytes -> String in
            func space(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
            var start = 0
            var end = bytes.count
            while start < end, space(bytes[start]) { start += 1 }
            while end > start, space(bytes[end - 1]) { end -= 1 }
            if start == 0 && end == bytes.count { return self }
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }
}
