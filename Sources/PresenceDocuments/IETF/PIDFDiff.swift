public import XMLBridge

/// Partial PIDF (RFC 5262, `application/pidf-diff+xml`, for RFC 5263 partial notifications):
/// either the full state as a `pidf-full` document, or the changes to the last state as a
/// `pidf-diff` document of RFC 5261 patch operations, each numbered by `version`.
///
/// The patch operations are applied to a presence document held as an ``XMLElement`` tree;
/// their selectors are the RFC 5261 §4.1 subset of XPath: location steps of names or `*` with
/// `[@attr='v']`, `[name='v']`, `[.='v']` and `[n]` predicates, ending in an element, an
/// attribute (`@name`) or text (`text()`). `id()` and `namespace::` selectors are refused.
public enum PIDFDiff: Sendable, Equatable {
    /// `<pidf-full version=..>`: the whole presence document, as a `presence` element.
    case full(version: UInt32?, presence: XMLElement)
    /// `<pidf-diff version=..>`: the changes to the previous version.
    case diff(version: UInt32?, operations: [Operation])

    public static let namespace = "urn:ietf:params:xml:ns:pidf-diff"

    /// One RFC 5261 operation with the namespaces in scope where it was written.
    public struct Operation: Sendable, Equatable {
        public enum Kind: String, Sendable {
            case add, replace, remove
        }

        public var kind: Kind
        /// The selector (`sel`).
        public var selector: String
        /// `add` only: `before`, `after`, `prepend`, or nil (append).
        public var position: String?
        /// `add` only: `@name` when an attribute is added.
        public var type: String?
        /// `remove` only: `before`, `after` or `both` to take the whitespace beside the element.
        public var whitespace: String?
        /// What is added, or the replacement.
        public var content: [XMLNode]
        /// Prefix → namespace in scope (nil: the default namespace).
        public var namespaces: [String?: String]

        public init(
            kind: Kind, selector: String, position: String? = nil, type: String? = nil, whitespace: String? = nil,
            content: [XMLNode] = [], namespaces: [String?: String] = [:]
        ) {
            self.kind = kind
            self.selector = selector
            self.position = position
            self.type = type
            self.whitespace = whitespace
            self.content = content
            self.namespaces = namespaces
        }
    }

    public var version: UInt32? {
        switch self {
        case .full(let version, _), .diff(let version, _): version
        }
    }

    // MARK: - Reading

    /// Parses an `application/pidf-diff+xml` body; errors carry line and column.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        let root = try XMLParser.parse(bytes, limits: limits)
        var version: UInt32?
        if let raw = root[attribute: "version"] {
            guard let value = UInt32(raw.trimmingXMLWhitespace()) else {
                throw root.error("version=\"\(raw)\" is not an unsignedInt (RFC 5262 §4)")
            }
            version = value
        }
        switch root.name {
        case XMLName(Self.namespace, "pidf-full"):
            var presence = XMLElement(
                XMLName(NS.pidf, "presence"), attributes: root.attributes.filter { $0.name.local != "version" },
                children: root.children, namespaceDeclarations: root.namespaceDeclarations)
            presence.prefix = root.namespaceDeclarations.contains { $0.prefix == nil && $0.uri == NS.pidf } ? nil : "p"
            self = .full(version: version, presence: presence)
        case XMLName(Self.namespace, "pidf-diff"):
            var scope: [String?: String] = [:]
            for (prefix, uri) in root.namespaceDeclarations { scope[prefix] = uri }
            var operations: [Operation] = []
            for element in root.elements {
                guard element.name.namespace == Self.namespace, let kind = Operation.Kind(rawValue: element.name.local),
                    let selector = element[attribute: "sel"]
                else {
                    throw element.error("expected add, replace or remove with sel (RFC 5261 §4), found \(element.name)")
                }
                var namespaces = scope
                for (prefix, uri) in element.namespaceDeclarations { namespaces[prefix] = uri }
                operations.append(
                    Operation(
                        kind: kind, selector: selector, position: element[attribute: "pos"],
                        type: element[attribute: "type"], whitespace: element[attribute: "ws"],
                        content: element.children, namespaces: namespaces))
            }
            self = .diff(version: version, operations: operations)
        default:
            throw root.error("expected pidf-full or pidf-diff (RFC 5262 §4), found \(root.name)")
        }
    }

    // MARK: - Writing

    /// The children of `new` that differ from `old`'s, when each can be named by its name alone:
    /// the same attributes, no text but whitespace, and the same element names in the same
    /// order, each once. nil otherwise.
    private static func changedChildren(_ old: XMLElement, _ new: XMLElement) -> [XMLElement]? {
        func attributes(_ e: XMLElement) -> [String] { e.attributes.map { "\($0.name) \($0.value)" }.sorted() }
        func textFree(_ e: XMLElement) -> Bool {
            e.children.allSatisfy { if case .text(let t) = $0 { t.isXMLWhitespace } else { true } }
        }
        let before = Array(old.elements)
        let after = Array(new.elements)
        let names = after.map(\.name)
        guard attributes(old) == attributes(new), textFree(old), textFree(new), before.map(\.name) == names,
            Set(names).count == names.count
        else { return nil }
        return zip(before, after).filter { $0 != $1 }.map(\.1)
    }

    /// The full state as a `pidf-full` document of `version` (RFC 5262 §4).
    public static func full(_ presence: XMLElement, version: UInt32) -> [UInt8] {
        let root = XMLElement(
            XMLName(namespace, "pidf-full"),
            attributes: presence.attributes + [XMLAttribute(XMLName("", "version"), String(version))],
            children: presence.children, prefix: "d", namespaceDeclarations: [(nil, NS.pidf)])
        return XMLWriter(indent: nil).bytes(root)
    }

    /// The changes from `old` to `new` (two presence documents) as a `pidf-diff` document of
    /// `version`, or nil when they are not simple enough to say so: the same entity, and the
    /// top-level elements the same by name and `id` in the same order, with elements removed,
    /// or added after one with an `id`. A changed element is replaced whole, or only its changed
    /// children when it kept its attributes and its children are the same names, each once.
    /// nil also when nothing changed, or when the diff is not smaller than the full document.
    public static func diff(from old: XMLElement, to new: XMLElement, version: UInt32) -> [UInt8]? {
        guard old.name == new.name, old[attribute: "entity"] == new[attribute: "entity"] else { return nil }
        let before = Array(old.elements)
        let after = Array(new.elements)
        func key(_ e: XMLElement) -> String? { e[attribute: "id"].map { "\(e.name) \($0)" } }
        let beforeKeys = before.map(key)
        let afterKeys = after.map(key)
        // Every element named by id, each id once: otherwise nothing can be addressed.
        guard !beforeKeys.contains(nil), !afterKeys.contains(nil), Set(afterKeys).count == afterKeys.count,
            Set(beforeKeys).count == beforeKeys.count
        else { return nil }
        var prefixes: [String: String] = [NS.pidf: ""]
        func qname(_ name: XMLName) -> String {
            let prefix: String
            if let known = prefixes[name.namespace] {
                prefix = known
            } else {
                prefix = "n\(prefixes.count)"
                prefixes[name.namespace] = prefix
            }
            return (prefix.isEmpty ? "" : prefix + ":") + name.local
        }
        func step(_ e: XMLElement) -> String { "*/\(qname(e.name))[@id='\(e[attribute: "id"] ?? "")']" }
        var operations: [XMLElement] = []
        func operation(_ kind: String, _ selector: String, _ extra: [XMLAttribute] = [], _ content: [XMLNode] = [])
            -> XMLElement
        {
            XMLElement(
                XMLName(namespace, kind), attributes: [XMLAttribute(XMLName("", "sel"), selector)] + extra,
                children: content, prefix: "d")
        }
        let kept = afterKeys.filter { beforeKeys.contains($0) }
        guard kept == beforeKeys.filter({ afterKeys.contains($0) }) else { return nil }
        for (index, element) in before.enumerated() where !afterKeys.contains(beforeKeys[index]) {
            operations.append(operation("remove", step(element)))
        }
        for (index, element) in after.enumerated() {
            if let at = beforeKeys.firstIndex(of: afterKeys[index]) {
                guard before[at] != element else { continue }
                if let changed = changedChildren(before[at], element) {
                    for child in changed {
                        operations.append(
                            operation("replace", step(element) + "/" + qname(child.name), [], [.element(child)]))
                    }
                } else {
                    operations.append(operation("replace", step(before[at]), [], [.element(element)]))
                }
            } else {
                // Added after the element before it (kept, or added by an earlier operation).
                guard index > 0 else { return nil }
                operations.append(
                    operation(
                        "add", step(after[index - 1]), [XMLAttribute(XMLName("", "pos"), "after")], [.element(element)])
                )
            }
        }
        guard !operations.isEmpty else { return nil }
        var declarations: [(prefix: String?, uri: String)] = [(nil, NS.pidf)]
        for (uri, prefix) in prefixes.sorted(by: { $0.value < $1.value }) where !prefix.isEmpty {
            declarations.append((prefix, uri))
        }
        let root = XMLElement(
            XMLName(namespace, "pidf-diff"),
            attributes: new.attributes + [XMLAttribute(XMLName("", "version"), String(version))],
            children: operations.map { .element($0) }, prefix: "d", namespaceDeclarations: declarations)
        let bytes = XMLWriter(indent: nil).bytes(root)
        return bytes.count < XMLWriter(indent: nil).bytes(new).count ? bytes : nil
    }
}
