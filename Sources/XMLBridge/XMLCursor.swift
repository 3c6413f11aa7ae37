/// A position in an ``XMLEvents`` recording: one element (or one run of
/// character data) and, through it, its attributes and content.
///
/// The read API mirrors ``XMLElement``'s: names are matched by (namespace
/// URI, local name), never by prefix (Namespaces in XML 1.0 §6); ``error(_:code:)``
/// locates an error at the start tag. Walking children, reading attributes
/// and reading text make no tree; ``subtree`` makes the ``XMLElement`` of one
/// element when a decoder keeps it verbatim. A cursor is a value: holding one
/// keeps the whole recording alive.
public struct XMLCursor: Sendable {
    @usableFromInline let events: XMLEvents
    @usableFromInline let index: Int

    @usableFromInline
    init(events: XMLEvents, index: Int) {
        self.events = events
        self.index = index
    }

    private var node: XMLEvents.Node { events.nodes[index] }

    /// True for a run of character data, false for an element.
    public var isText: Bool { events.nodes[index].isText }

    /// The element's name (empty for text).
    public var name: XMLName { events.names[Int(events.nodes[index].name)] }

    /// The element's namespace URI ("" for none, and for text). Reading one
    /// part of the name copies one string where ``name`` copies two.
    public var namespaceURI: String { events.names[Int(events.nodes[index].name)].namespace }

    /// The element's local name ("" for text).
    public var localName: String { events.names[Int(events.nodes[index].name)].local }

    /// True when the element's name is (`namespace`, `local`). Inlinable: decoders pass
    /// constants, whose lengths are then known when compiled.
    @inlinable
    public func `is`(_ namespace: String, _ local: String) -> Bool {
        let n = events.nodes[index]
        if n.isText { return false }
        let name = events.names[Int(n.name)]
        // Lengths first: most names asked about differ in length, and that
        // test is a load where a string comparison is a call.
        return name.local.utf8.count == local.utf8.count && name.namespace.utf8.count == namespace.utf8.count
            && name.local == local && name.namespace == namespace
    }

    /// True for an element in `namespace` (false for text): `namespaceURI ==
    /// namespace` without copying the URI out of the recording (a retain and a
    /// release), with the lengths compared first, as in ``is(_:_:)``.
    @inlinable
    public func isIn(namespace: String) -> Bool {
        let n = events.nodes[index]
        if n.isText { return false }
        let uri = events.names[Int(n.name)].namespace
        return uri.utf8.count == namespace.utf8.count && uri == namespace
    }

    /// The prefix the source used (a writing hint, never used for matching).
    public var prefix: String? { events.prefix(events.nodes[index].prefix) }

    /// Where the start tag was (1-based; 0 when unknown).
    public var line: Int { Int(events.nodes[index].line) }
    public var column: Int { Int(events.nodes[index].column) }

    /// An error about this element's content, located at its start tag (the
    /// same text and position ``XMLElement/error(_:code:)`` gives).
    public func error(_ message: String, code: XMLError.Code = .unexpectedContent) -> XMLError {
        XMLError(code, "<\(name.local)>: \(message)", line: line, column: column)
    }

    // MARK: Attributes

    private var attributeRange: Range<Int> {
        let n = events.nodes[index]
        return Int(n.attributeStart)..<Int(n.attributeStart + n.attributeCount)
    }

    /// How many attributes the start tag has (namespace declarations are not attributes).
    public var attributeCount: Int { Int(events.nodes[index].attributeCount) }

    /// The value of an attribute in no namespace.
    public subscript(attribute local: String) -> String? {
        // Lengths first, as in ``is(_:_:)``: most of an element's attributes
        // differ in length from the one asked for, and that test is a load
        // where a string comparison is a call.
        let range = attributeRange
        if range.isEmpty { return nil }
        let length = local.utf8.count
        for i in range {
            let a = events.attributes[i]
            let name = events.names[Int(a.name)]
            if name.local.utf8.count == length && name.namespace.isEmpty && name.local == local {
                return events.string(a.valueStart, a.valueCount)
            }
        }
        return nil
    }

    /// The value of a namespace-qualified attribute.
    public func attribute(_ name: XMLName) -> String? {
        let range = attributeRange
        if range.isEmpty { return nil }
        let length = name.local.utf8.count
        let namespaceLength = name.namespace.utf8.count
        for i in range {
            let a = events.attributes[i]
            let found = events.names[Int(a.name)]
            if found.local.utf8.count == length && found.namespace.utf8.count == namespaceLength
                && found.local == name.local && found.namespace == name.namespace
            {
                return events.string(a.valueStart, a.valueCount)
            }
        }
        return nil
    }

    /// The attributes whose names satisfy `predicate`, as values, in source order.
    public func attributes(where predicate: (XMLName) -> Bool) -> [XMLAttribute] {
        var found: [XMLAttribute] = []
        for i in attributeRange where predicate(events.names[Int(events.attributes[i].name)]) {
            let a = events.attributes[i]
            found.append(
                XMLAttribute(
                    events.name(a.name), events.string(a.valueStart, a.valueCount), prefix: events.prefix(a.prefix)))
        }
        return found
    }

    /// Calls `body` with each attribute's name and value, in source order.
    public func forEachAttribute(_ body: (XMLName, String) throws -> Void) rethrows {
        for i in attributeRange {
            let a = events.attributes[i]
            try body(events.name(a.name), events.string(a.valueStart, a.valueCount))
        }
    }

    /// The attributes as values, in source order.
    public var attributes: [XMLAttribute] {
        attributeRange.map {
            let a = events.attributes[$0]
            return XMLAttribute(
                events.name(a.name), events.string(a.valueStart, a.valueCount), prefix: events.prefix(a.prefix))
        }
    }

    // MARK: Content

    /// The element's direct children (elements and text runs) in document order.
    public var children: Children {
        Children(events: events, start: index + 1, end: Int(node.end), elementsOnly: false)
    }

    /// The element's child elements in document order.
    public var elements: Children { Children(events: events, start: index + 1, end: Int(node.end), elementsOnly: true) }

    /// Child elements with the given name.
    public func elements(_ name: XMLName) -> [XMLCursor] {
        elements.filter { $0.is(name.namespace, name.local) }
    }

    /// The first child element with the given name.
    public func element(_ name: XMLName) -> XMLCursor? {
        elements.first { $0.is(name.namespace, name.local) }
    }

    /// Calls `body` with each node directly inside the element (none for
    /// text), in order, until it returns false. The recorded nodes are walked
    /// in place: no cursor (and no reference to the recording) is made per child.
    @inline(__always)
    private func forEachChildNode(_ body: (XMLEvents.Node) -> Bool) {
        events.nodes.withUnsafeBufferPointer { nodes in
            let n = nodes[index]
            if n.isText { return }
            var i = index + 1
            while i < Int(n.end) {
                let child = nodes[i]
                if !body(child) { return }
                i = child.isText ? i + 1 : Int(child.end)
            }
        }
    }

    /// How many child elements the element has (0 for text): a capacity to
    /// reserve before decoding them into an array.
    public var elementCount: Int {
        var count = 0
        forEachChildNode { child in
            if !child.isText { count += 1 }
            return true
        }
        return count
    }

    /// True when the element has at least one child element.
    public var hasElementChildren: Bool {
        var found = false
        forEachChildNode { child in
            found = !child.isText
            return !found
        }
        return found
    }

    /// True for an element whose content is XML white space only (or nothing),
    /// and for a run of white space.
    public var hasOnlyWhitespace: Bool {
        if isText { return events.isWhitespace(events.nodes[index]) }
        var only = true
        forEachChildNode { child in
            // A child element, or text with something other than white space.
            only = child.isText && events.isWhitespace(child)
            return only
        }
        return only
    }

    /// For an element, the concatenated character data directly inside it;
    /// for a text run, its text.
    public var text: String {
        let n = events.nodes[index]
        if n.isText { return events.string(n.textStart, n.textCount) }
        var found: XMLEvents.Node?
        var result: String?
        for child in children where child.isText {
            let t = child.node
            if let first = found {
                if result == nil { result = events.string(first.textStart, first.textCount) }
                result? += events.string(t.textStart, t.textCount)
            } else {
                found = t
            }
        }
        if let result { return result }
        guard let found else { return "" }
        return events.string(found.textStart, found.textCount)
    }

    /// ``text`` without leading and trailing XML white space (XML 1.0 §2.3 S).
    public var trimmedText: String {
        let n = events.nodes[index]
        var single = n
        if !n.isText {
            var count = 0
            forEachChildNode { child in
                if child.isText {
                    count += 1
                    single = child
                }
                return true
            }
            if count == 0 { return "" }
            if count > 1 { return text.trimmingXMLWhitespace() }
        }
        return events.bytes.withUnsafeBufferPointer { bytes -> String in
            var start = Int(single.textStart)
            var end = Int(single.textStart + single.textCount)
            while start < end, XMLEvents.isSpace(bytes[start]) { start += 1 }
            while end > start, XMLEvents.isSpace(bytes[end - 1]) { end -= 1 }
            return XMLEvents.string(UnsafeBufferPointer(rebasing: bytes[start..<end]))
        }
    }

    /// The element and everything in it as a value tree, exactly as
    /// ``XMLParser/parse(_:limits:vocabulary:)`` would have built it.
    public var subtree: XMLElement {
        let n = events.nodes[index]
        if n.isText { return XMLElement(XMLName("", ""), children: [.text(events.string(n.textStart, n.textCount))]) }
        return events.element(at: index)
    }

    /// Children of an element, in document order: a forward walk over the
    /// recording that steps over each child element's content in one jump.
    public struct Children: Sequence, Sendable {
        let events: XMLEvents
        let start: Int
        let end: Int
        let elementsOnly: Bool

        public struct Iterator: IteratorProtocol {
            let events: XMLEvents
            var position: Int
            let end: Int
            let elementsOnly: Bool

            public mutating func next() -> XMLCursor? {
                while position < end {
                    let i = position
                    let n = events.nodes[i]
                    if n.isText {
                        position = i + 1
                        if elementsOnly { continue }
                    } else {
                        position = Int(n.end)
                    }
                    return XMLCursor(events: events, index: i)
                }
                return nil
            }
        }

        public func makeIterator() -> Iterator {
            Iterator(events: events, position: start, end: end, elementsOnly: elementsOnly)
        }
    }
}

extension XMLEvents {
    static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    func isWhitespace(_ n: Node) -> Bool {
        bytes.withUnsafeBufferPointer { bytes in
            for i in Int(n.textStart)..<Int(n.textStart + n.textCount) where !Self.isSpace(bytes[i]) { return false }
            return true
        }
    }
}
