public import XMLBridge

extension PIDFDiff {
    /// Applies `operations` in order to `presence` (RFC 5261 §4.3–§4.5). An operation whose
    /// selector does not select exactly one node, or whose content does not fit what it selects,
    /// is an error naming it; `presence` is then left as it was.
    public static func apply(_ operations: [Operation], to presence: inout XMLElement) throws(XMLError) {
        var document = presence
        for (index, operation) in operations.enumerated() {
            do throws(PatchError) {
                try operation.apply(to: &document)
            } catch {
                throw XMLError(
                    .unexpectedContent,
                    "operation \(index + 1) (\(operation.kind.rawValue) \(operation.selector)): \(error.text)")
            }
        }
        presence = document
    }

    /// The PIDF document a patched presence tree holds, read from its bytes as any PIDF body,
    /// at most `maxBytes` of them: diffs cannot grow a document past what one message could
    /// carry (a SIP message is at most 64 KiB here, ``SIPParserLimits``).
    public static func document(_ presence: XMLElement, maxBytes: Int = 65_536) throws(XMLError) -> PIDFDocument {
        let bytes = XMLWriter(indent: nil, declaration: false).bytes(presence)
        guard bytes.count <= maxBytes else {
            throw XMLError(.unexpectedContent, "the patched document has \(bytes.count) bytes, more than \(maxBytes)")
        }
        return try PIDFDocument(bytes: bytes)
    }

    struct PatchError: Error {
        var text: String
        init(_ text: String) { self.text = text }
    }
}

extension PIDFDiff.Operation {
    typealias PatchError = PIDFDiff.PatchError

    fileprivate func apply(to document: inout XMLElement) throws(PatchError) {
        var selector = try Selector(selector, namespaces: namespaces)
        let path = try selector.locate(in: document)
        let text = content.compactMap { if case .text(let t) = $0 { t } else { nil } }.joined()
        switch (kind, selector.target) {
        case (.add, .element):
            if let type {
                guard type.hasPrefix("@") else { throw PatchError("type must name an attribute") }
                let name = try Selector.name(String(type.dropFirst()), namespaces: namespaces, attribute: true)
                try Self.modify(&document, path[...]) { (e: inout XMLElement) throws(PatchError) in
                    guard e.attribute(name) == nil else { throw PatchError("the attribute is there already") }
                    e.setAttribute(name, text)
                }
                return
            }
            switch position {
            case nil: try Self.modify(&document, path[...]) { $0.children += content }
            case "prepend": try Self.modify(&document, path[...]) { $0.children.insert(contentsOf: content, at: 0) }
            case "before", "after":
                guard let last = path.last else { throw PatchError("nothing can stand beside the root") }
                try Self.modify(&document, path.dropLast()) {
                    $0.children.insert(contentsOf: content, at: position == "before" ? last : last + 1)
                }
            default: throw PatchError("pos must be before, after or prepend")
            }
        case (.replace, .element):
            let elements = content.filter { if case .text(let t) = $0 { !t.isXMLWhitespace } else { true } }
            guard elements.count == 1, case .element(let replacement) = elements[0] else {
                throw PatchError("an element is replaced by exactly one element")
            }
            guard let last = path.last else {
                document = replacement
                return
            }
            try Self.modify(&document, path.dropLast()) { $0.children[last] = .element(replacement) }
        case (.replace, .attribute(let name)):
            try Self.modify(&document, path[...]) { $0.setAttribute(name, text) }
        case (.replace, .text(let at)):
            try Self.modify(&document, path[...]) { $0.children[at] = .text(text) }
        case (.remove, .element):
            guard let last = path.last else { throw PatchError("the root cannot be removed") }
            try Self.modify(&document, path.dropLast()) { parent in
                func blank(_ i: Int) -> Bool {
                    guard parent.children.indices.contains(i), case .text(let t) = parent.children[i] else {
                        return false
                    }
                    return t.isXMLWhitespace
                }
                // `ws` also takes the whitespace text beside the element (RFC 5261 §4.5).
                let lower = (whitespace == "before" || whitespace == "both") && blank(last - 1) ? last - 1 : last
                let upper = (whitespace == "after" || whitespace == "both") && blank(last + 1) ? last + 1 : last
                parent.children.removeSubrange(lower...upper)
            }
        case (.remove, .attribute(let name)):
            try Self.modify(&document, path[...]) { $0.setAttribute(name, nil) }
        case (.remove, .text(let at)):
            try Self.modify(&document, path[...]) { $0.children.remove(at: at) }
        case (.add, _):
            throw PatchError("add selects an element")
        }
    }

    /// Runs `body` on the element at `path` (indices into `children`, from `root`).
    fileprivate static func modify(
        _ root: inout XMLElement, _ path: ArraySlice<Int>, _ body: (inout XMLElement) throws(PatchError) -> Void
    ) throws(PatchError) {
        guard let first = path.first else { return try body(&root) }
        guard case .element(var child) = root.children[first] else { throw PatchError("not an element") }
        try modify(&child, path.dropFirst(), body)
        root.children[first] = .element(child)
    }
}
