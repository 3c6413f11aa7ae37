import XMLBridge

/// An RFC 5261 §4.1 selector, as far as a presence document needs: location steps (a name or
/// `*`, each with predicates `[@attr='v']`, `[name='v']`, `[.='v']`, `[n]`) from the document
/// node, ending in an element, `@attr` or `text()` / `text()[n]`. Names resolve against the
/// namespaces in scope at the operation; an unprefixed element name is in the default namespace
/// declared there (RFC 5261 §4.2.2), an unprefixed attribute in none.
struct Selector {
    enum Target: Equatable {
        case element
        case attribute(XMLName)
        /// The index in the selected element's `children` of its n-th text node.
        case text(Int)
    }

    enum Predicate {
        case attribute(XMLName, String)
        case child(XMLName, String)
        case value(String)
        case position(Int)
    }

    struct Step {
        /// nil: `*`.
        var name: XMLName?
        var predicates: [Predicate]
    }

    var steps: [Step] = []
    /// What the last step names, before the text index is known.
    private var last: Last = .element

    private enum Last {
        case element
        case attribute(XMLName)
        case text(Int)
    }

    /// The target once located (``locate(in:)`` resolves `text()` to a child index).
    private(set) var target: Target = .element

    typealias PatchError = PIDFDiff.PatchError

    init(_ text: String, namespaces: [String?: String]) throws(PatchError) {
        var parts = try Self.split(text)
        if parts.first == "" { parts.removeFirst() }  // absolute: from the document node all the same
        guard let final = parts.last, !final.isEmpty else { throw PatchError("empty selector") }
        if final.hasPrefix("@") {
            last = .attribute(try Self.name(String(final.dropFirst()), namespaces: namespaces, attribute: true))
            parts.removeLast()
        } else if final.hasPrefix("text()") {
            let rest = final.dropFirst("text()".count)
            var n = 1
            if !rest.isEmpty {
                guard rest.hasPrefix("["), rest.hasSuffix("]"), let value = Int(rest.dropFirst().dropLast()), value > 0
                else { throw PatchError("text() takes a position [n]") }
                n = value
            }
            last = .text(n)
            parts.removeLast()
        } else if final.hasPrefix("namespace::") || final.hasPrefix("id(") || final.contains("(") {
            throw PatchError("\(final) is not supported here")
        }
        guard !parts.isEmpty else { throw PatchError("no element step") }
        for part in parts {
            guard !part.isEmpty else { throw PatchError("empty step") }
            let open = part.firstIndex(of: "[") ?? part.endIndex
            let head = String(part[..<open])
            let name = head == "*" ? nil : try Self.name(head, namespaces: namespaces, attribute: false)
            var predicates: [Predicate] = []
            var rest = part[open...]
            while !rest.isEmpty {
                guard rest.first == "[", let close = Self.closingBracket(rest) else {
                    throw PatchError("bad predicate in \(part)")
                }
                predicates.append(
                    try Self.predicate(String(rest[rest.index(after: rest.startIndex)..<close]), namespaces))
                rest = rest[rest.index(after: close)...]
            }
            steps.append(Step(name: name, predicates: predicates))
        }
    }

    /// This selector, when it selects elements (not an attribute or text).
    func elementsOnly() throws(PatchError) -> Selector {
        guard case .element = last else { throw PatchError("selects an attribute or text, not elements") }
        return self
    }

    /// The paths of every element selected (a node-set, RFC 4661's use): each step keeps the
    /// children of each element so far that match it, predicates counted per parent.
    func locateAll(in root: XMLElement) -> [[Int]] {
        guard Self.matches(root, steps[0], among: [root], at: 0) else { return [] }
        var found: [([Int], XMLElement)] = [([], root)]
        for step in steps.dropFirst() {
            var next: [([Int], XMLElement)] = []
            for (path, element) in found {
                var selected = element.children.indices.compactMap { i -> (Int, XMLElement)? in
                    guard case .element(let e) = element.children[i], step.name == nil || e.name == step.name else {
                        return nil
                    }
                    return (i, e)
                }
                for predicate in step.predicates {
                    let list = selected.map(\.1)
                    selected = selected.enumerated()
                        .filter { Self.holds(predicate, $0.element.1, position: $0.offset, of: list) }.map(\.element)
                }
                next += selected.map { (path + [$0.0], $0.1) }
            }
            found = next
        }
        return found.map(\.0)
    }

    /// The path to the selected element (indices into `children` from the root; empty for the
    /// root itself); sets ``target``. Each step must select exactly one element.
    mutating func locate(in root: XMLElement) throws(PatchError) -> [Int] {
        guard Self.matches(root, steps[0], among: [root], at: 0) else { throw PatchError("the root does not match") }
        var path: [Int] = []
        var current = root
        for step in steps.dropFirst() {
            let candidates = current.children.indices.compactMap { i -> (Int, XMLElement)? in
                guard case .element(let e) = current.children[i], step.name == nil || e.name == step.name else {
                    return nil
                }
                return (i, e)
            }
            var selected = candidates
            for predicate in step.predicates {
                let list = selected.map(\.1)
                selected = selected.enumerated().filter {
                    Self.holds(predicate, $0.element.1, position: $0.offset, of: list)
                }
                .map(\.element)
            }
            guard selected.count == 1 else {
                throw PatchError(selected.isEmpty ? "nothing is selected" : "more than one element is selected")
            }
            path.append(selected[0].0)
            current = selected[0].1
        }
        switch last {
        case .element: target = .element
        case .attribute(let name):
            guard current.attribute(name) != nil else { throw PatchError("no attribute \(name)") }
            target = .attribute(name)
        case .text(let n):
            let texts = current.children.indices.filter { if case .text = current.children[$0] { true } else { false } }
            guard texts.count >= n else { throw PatchError("no text node \(n)") }
            target = .text(texts[n - 1])
        }
        return path
    }

    private static func matches(_ e: XMLElement, _ step: Step, among list: [XMLElement], at position: Int) -> Bool {
        guard step.name == nil || e.name == step.name else { return false }
        return step.predicates.allSatisfy { holds($0, e, position: position, of: list) }
    }

    private static func holds(_ predicate: Predicate, _ e: XMLElement, position: Int, of list: [XMLElement]) -> Bool {
        switch predicate {
        case .attribute(let name, let value): e.attribute(name) == value
        case .child(let name, let value): e.elements(name).contains { $0.text == value }
        case .value(let value): e.text == value
        case .position(let n): position == n - 1
        }
    }

    private static func predicate(_ text: String, _ namespaces: [String?: String]) throws(PatchError) -> Predicate {
        if let n = Int(text), n > 0 { return .position(n) }
        guard let equals = text.firstIndex(of: "=") else { throw PatchError("unsupported predicate [\(text)]") }
        let left = String(text[..<equals]).trimmingXMLWhitespace()
        let right = String(text[text.index(after: equals)...]).trimmingXMLWhitespace()
        guard right.count >= 2, let quote = right.first, quote == "'" || quote == "\"", right.last == quote else {
            throw PatchError("the value in [\(text)] must be quoted")
        }
        let value = String(right.dropFirst().dropLast())
        if left.hasPrefix("@") {
            return .attribute(try name(String(left.dropFirst()), namespaces: namespaces, attribute: true), value)
        }
        if left == "." { return .value(value) }
        return .child(try name(left, namespaces: namespaces, attribute: false), value)
    }

    /// `prefix:local` or `local` resolved (RFC 5261 §4.2.2). It must be a QName of RFC 5261's
    /// schema (`(\i\c*:)?\i\c*`, its `qname` pattern): a name that is not one is refused as
    /// the patch directive it is in, so that no patched document carries a name XML forbids.
    static func name(_ qname: String, namespaces: [String?: String], attribute: Bool) throws(PatchError) -> XMLName {
        let parts = qname.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.allSatisfy(Self.isNCName) else { throw PatchError("\(qname) is not a name") }
        switch parts.count {
        case 1:
            return XMLName(attribute ? "" : namespaces[nil] ?? "", qname)
        case 2:
            guard let uri = namespaces[String(parts[0])] else { throw PatchError("prefix \(parts[0]) is not declared") }
            return XMLName(uri, String(parts[1]))
        default:
            throw PatchError("\(qname) is not a name")
        }
    }

    /// An NCName (Namespaces in XML 1.0 §3, on XML 1.0 §2.3's NameStartChar and NameChar).
    static func isNCName(_ text: Substring) -> Bool {
        guard let first = text.unicodeScalars.first, isNameStart(first) else { return false }
        return text.unicodeScalars.dropFirst().allSatisfy { scalar in
            isNameStart(scalar) || scalar == "-" || scalar == "." || ("0"..."9").contains(scalar)
                || scalar.value == 0xB7 || (0x300...0x36F).contains(scalar.value)
                || (0x203F...0x2040).contains(scalar.value)
        }
    }

    private static func isNameStart(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x41...0x5A, 0x61...0x7A, 0x5F: true
        case 0xC0...0xD6, 0xD8...0xF6, 0xF8...0x2FF, 0x370...0x37D, 0x37F...0x1FFF, 0x200C...0x200D,
            0x2070...0x218F, 0x2C00...0x2FEF, 0x3001...0xD7FF, 0xF900...0xFDCF, 0xFDF0...0xFFFD,
            0x10000...0xEFFFF:
            true
        default: false
        }
    }

    /// The selector's steps, split at `/` outside predicates and quotes.
    private static func split(_ text: String) throws(PatchError) -> [String] {
        var parts: [String] = []
        var current = ""
        var depth = 0
        var quote: Character?
        for c in text {
            if let q = quote {
                if c == q { quote = nil }
            } else if c == "'" || c == "\"" {
                quote = c
            } else if c == "[" {
                depth += 1
            } else if c == "]" {
                depth -= 1
            } else if c == "/", depth == 0 {
                parts.append(current)
                current = ""
                continue
            }
            current.append(c)
        }
        guard quote == nil, depth == 0 else { throw PatchError("unbalanced quotes or brackets") }
        parts.append(current)
        return parts
    }

    /// The `]` that closes the predicate opening `text`, outside quotes.
    private static func closingBracket(_ text: Substring) -> Substring.Index? {
        var quote: Character?
        for i in text.indices.dropFirst() {
            let c = text[i]
            if let q = quote {
                if c == q { quote = nil }
            } else if c == "'" || c == "\"" {
                quote = c
            } else if c == "]" {
                return i
            }
        }
        return nil
    }
}
