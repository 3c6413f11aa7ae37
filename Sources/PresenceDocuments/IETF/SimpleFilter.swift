public import XMLBridge

/// An event notification filter (RFC 4661, `application/simple-filter+xml`, for RFC 4660):
/// what parts of the presence document a watcher wants (`what`: `include` and `exclude`), and
/// when it wants to hear of a change (`trigger`).
///
/// Selections are XPath location paths from the document root (`/pidf:presence/pidf:tuple/...`,
/// the prefixes bound by `ns-bindings`), with the steps and predicates of ``PIDFDiff``'s
/// selectors, or whole namespaces (`type="namespace"`). What this reader cannot evaluate is an
/// error, so that the SUBSCRIBE is refused rather than half honoured.
public struct SimpleFilter: Sendable, Equatable {
    public var id: String
    /// The resource it applies to (nil: every resource of the subscription).
    public var uri: String?
    /// RFC 4661 §3.4: `remove="true"` takes an earlier filter of this id away.
    public var remove: Bool
    /// RFC 4661 §3.4: `enabled="false"` keeps it but does not apply it.
    public var enabled: Bool
    public var includes: [Selection]
    public var excludes: [Selection]
    public var triggers: [Trigger]

    public enum Selection: Sendable, Equatable {
        /// A location path, with the prefixes in scope.
        case path(String, namespaces: [String: String])
        /// Every element of a namespace.
        case namespace(String)
    }

    /// RFC 4661 §3.6: a change that makes the watcher be notified.
    public struct Trigger: Sendable, Equatable {
        public enum Kind: String, Sendable {
            case changed, added, removed
        }
        public var kind: Kind
        public var path: String
        public var namespaces: [String: String]
        /// `changed` only: the value before, the value after, or the least numeric change.
        public var from: String?
        public var to: String?
        public var by: Double?
    }

    public static let namespace = "urn:ietf:params:xml:ns:simple-filter"

    /// Reads a `filter-set` (RFC 4661 §3): its filters, each checked for what can be evaluated.
    /// `package`, when given, must be `presence`.
    public static func filters(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) -> [SimpleFilter] {
        let root = try XMLParser.parse(bytes, limits: limits)
        guard root.name == XMLName(namespace, "filter-set") else {
            throw root.error("expected a simple-filter filter-set (RFC 4661 §3), found \(root.name)")
        }
        if let package = root[attribute: "package"], package != "presence" {
            throw root.error("filters for package \(package) are not served here", code: .notServed)
        }
        var namespaces: [String: String] = [:]
        for binding in root.element(XMLName(namespace, "ns-bindings"))?.elements(XMLName(namespace, "ns-binding")) ?? []
        {
            guard let prefix = binding[attribute: "prefix"], let urn = binding[attribute: "urn"] else {
                throw binding.error("ns-binding needs prefix and urn (RFC 4661 §3.2)")
            }
            namespaces[prefix] = urn
        }
        var filters: [SimpleFilter] = []
        for element in root.elements(XMLName(namespace, "filter")) {
            guard let id = element[attribute: "id"] else { throw element.error("filter needs an id (RFC 4661 §3.3)") }
            if element[attribute: "domain"] != nil {
                throw element.error("filters by domain are not served here: one filter per resource", code: .notServed)
            }
            var filter = SimpleFilter(
                id: id, uri: element[attribute: "uri"], remove: element[attribute: "remove"] == "true",
                enabled: element[attribute: "enabled"] != "false", includes: [], excludes: [], triggers: [])
            if let what = element.element(XMLName(namespace, "what")) {
                for selection in what.elements {
                    let parsed = try Self.selection(selection, namespaces)
                    switch selection.name.local {
                    case "include": filter.includes.append(parsed)
                    case "exclude": filter.excludes.append(parsed)
                    default: throw selection.error("expected include or exclude (RFC 4661 §3.5)")
                    }
                }
            }
            for trigger in element.elements(XMLName(namespace, "trigger")) {
                for change in trigger.elements {
                    guard let kind = Trigger.Kind(rawValue: change.name.local) else {
                        throw change.error("expected changed, added or removed (RFC 4661 §3.6)")
                    }
                    var by: Double?
                    if let raw = change[attribute: "by"] {
                        guard let value = Double(raw), value > 0 else {
                            throw change.error("by=\"\(raw)\" is not a positive number")
                        }
                        by = value
                    }
                    let path = change.trimmedText
                    try Self.check(path, namespaces, at: change)
                    filter.triggers.append(
                        Trigger(
                            kind: kind, path: path, namespaces: namespaces, from: change[attribute: "from"],
                            to: change[attribute: "to"], by: by))
                }
            }
            // Every notification runs each selection and trigger of the watcher's filter: a
            // filter is bounded as a document is (docs/security.md, "Limits").
            guard filter.includes.count + filter.excludes.count <= Self.maxSelections,
                filter.triggers.count <= Self.maxTriggers
            else {
                throw element.error(
                    "a filter has at most \(Self.maxSelections) selections and \(Self.maxTriggers) triggers here")
            }
            filters.append(filter)
        }
        return filters
    }

    /// The most `include` and `exclude` selections one filter may have.
    public static let maxSelections = 32
    /// The most `changed`, `added` and `removed` triggers one filter may have.
    public static let maxTriggers = 16

    private static func selection(_ element: XMLElement, _ namespaces: [String: String]) throws(XMLError) -> Selection {
        let text = element.trimmedText
        switch element[attribute: "type"] ?? "xpath" {
        case "xpath":
            try check(text, namespaces, at: element)
            return .path(text, namespaces: namespaces)
        case "namespace":
            guard !text.isEmpty else { throw element.error("a namespace selection names a namespace") }
            return .namespace(text)
        case let other:
            throw element.error("type=\"\(other)\" is not served here (xpath or namespace)", code: .notServed)
        }
    }

    /// A path must be absolute and of the steps this reader evaluates.
    private static func check(_ path: String, _ namespaces: [String: String], at element: XMLElement) throws(XMLError) {
        guard path.hasPrefix("/"), !path.contains("//") else {
            throw element.error("\(path) is not served here: only absolute paths of child steps", code: .notServed)
        }
        do { _ = try Selector(path, namespaces: scope(namespaces)).elementsOnly() } catch {
            throw element.error("\(path) is not served here: \(error.text)", code: .notServed)
        }
    }

    static func scope(_ namespaces: [String: String]) -> [String?: String] {
        var scope: [String?: String] = [:]
        for (prefix, uri) in namespaces { scope[prefix] = uri }
        return scope
    }
}

extension XMLError.Code {
    /// A well-formed filter asks for what this reader cannot evaluate (RFC 4660 §4.2: the
    /// SUBSCRIBE is refused, 488).
    public static let notServed = XMLError.Code("not-served")
}
