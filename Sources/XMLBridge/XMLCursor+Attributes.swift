extension XMLCursor {
    /// Where one attribute's value lies in the recording, left there until a decoder asks for
    /// it in the form it needs (a number is read from the bytes without making a `String`).
    /// Plain integers, like the recording's own nodes: holding one costs no reference
    /// counting. Read through a cursor into the same recording (``string(_:)``,
    /// ``withUTF8(_:_:)``, ``plainUInt32(_:)``).
    public struct AttributeValue: Sendable {
        @usableFromInline let start: Int32
        @usableFromInline let count: Int32

        @usableFromInline
        init(start: Int32, count: Int32) {
            self.start = start
            self.count = count
        }
    }

    /// Calls `body` with each attribute's name and where its value lies, in source order
    /// (``forEachAttribute(_:)`` makes a `String` of each value).
    public func forEachAttributeValue(_ body: (XMLName, AttributeValue) throws -> Void) rethrows {
        let n = events.nodes[index]
        let start = Int(n.attributeStart)
        for i in start..<start + Int(n.attributeCount) {
            let a = events.attributes[i]
            try body(events.names[Int(a.name)], AttributeValue(start: a.valueStart, count: a.valueCount))
        }
    }

    /// Calls `body` with each attribute's position in `names` (nil for a name not there) and
    /// where its value lies, in source order. The names are compared in the recording (lengths
    /// first): no name is handed out, where ``forEachAttributeValue(_:)`` copies each
    /// attribute's ``XMLName`` for `body` (a retain and a release of both its strings).
    /// Inlinable, as ``forEachElement(_:)`` is: the decoder's closure is inlined into the loop.
    @inlinable
    public func forEachAttributeValue(in names: XMLNameTable, _ body: (Int?, AttributeValue) throws -> Void) rethrows {
        let n = events.nodes[index]
        let start = Int(n.attributeStart)
        for i in start..<start + Int(n.attributeCount) {
            let a = events.attributes[i]
            try body(
                names.position(of: events.names[Int(a.name)]), AttributeValue(start: a.valueStart, count: a.valueCount))
        }
    }

    /// Calls `body` with each attribute's case in `names` (nil for a name not there) and where
    /// its value lies, in source order (the positions in its table read as cases).
    @inlinable
    public func forEachAttributeValue<Case>(
        in names: XMLNameCases<Case>, _ body: (Case?, AttributeValue) throws -> Void
    ) rethrows {
        try forEachAttributeValue(in: names.table) { position, value in try body(names[position], value) }
    }

    /// True when every attribute's name is in `names` (true when there are none): names compared
    /// in the recording, none copied out.
    public func allAttributes(in names: XMLNameTable) -> Bool {
        let n = events.nodes[index]
        let start = Int(n.attributeStart)
        for i in start..<start + Int(n.attributeCount)
        where names.position(of: events.names[Int(events.attributes[i].name)]) == nil {
            return false
        }
        return true
    }

    /// The element's position in `names` (nil for text and for a name not there), compared in
    /// the recording: a decoder tells its children apart without copying each name out and
    /// comparing it with one string after another.
    public func position(in names: XMLNameTable) -> Int? {
        let n = events.nodes[index]
        if n.isText { return nil }
        return names.position(of: events.names[Int(n.name)])
    }

    /// The element's case in `names` (nil for text and for a name not there), compared in the
    /// recording as ``position(in:)`` compares it.
    @inlinable
    public func match<Case>(in names: XMLNameCases<Case>) -> Case? {
        names[position(in: names.table)]
    }

    /// An attribute value of this recording as text.
    public func string(_ value: AttributeValue) -> String { events.string(value.start, value.count) }

    /// An attribute value's UTF-8 bytes in the recording (no copy), for reads within `body`: a
    /// `Span`, bounds-checked and unable to outlive the call. Inlinable, so that a decoder's
    /// closure is inlined here instead of called through a generic context.
    @inlinable
    public func withUTF8<R>(_ value: AttributeValue, _ body: (Span<UInt8>) throws -> R) rethrows -> R {
        try events.bytes.withUnsafeBufferPointer { bytes in
            try body(UnsafeBufferPointer(rebasing: bytes[Int(value.start)..<Int(value.start + value.count)]).span)
        }
    }

    /// The bytes `range` of an attribute value (offsets within it) as text.
    public func string(_ value: AttributeValue, _ range: Range<Int>) -> String {
        precondition(range.lowerBound >= 0 && range.upperBound <= Int(value.count))
        return events.string(value.start + Int32(range.lowerBound), Int32(range.count))
    }

    /// True when this element's attributes are written as `other`'s: the same names (prefixes
    /// aside) in the same order, with the same value bytes, compared in the recordings (no name
    /// or value copied out). A decoder's value of one then serves for the other.
    public func hasSameAttributes(as other: XMLCursor) -> Bool {
        let a = events.nodes[index]
        let b = other.events.nodes[other.index]
        guard a.attributeCount == b.attributeCount else { return false }
        let sameRecording = events === other.events
        for k in 0..<Int(a.attributeCount) {
            let x = events.attributes[Int(a.attributeStart) + k]
            let y = other.events.attributes[Int(b.attributeStart) + k]
            // A recording holds each distinct name once: in one, equal names are equal indices.
            let sameName =
                sameRecording ? x.name == y.name : events.names[Int(x.name)] == other.events.names[Int(y.name)]
            guard sameName, x.valueCount == y.valueCount else { return false }
            let sameValue = events.bytes.withUnsafeBufferPointer { xs in
                other.events.bytes.withUnsafeBufferPointer { ys in
                    xs[Int(x.valueStart)..<Int(x.valueStart + x.valueCount)].elementsEqual(
                        ys[Int(y.valueStart)..<Int(y.valueStart + y.valueCount)])
                }
            }
            if !sameValue { return false }
        }
        return true
    }

    /// An attribute value as a number when it is written as writers write one: 1 to 9 ASCII
    /// digits and nothing else (which always fits a `UInt32`). Nil for any other form (white
    /// space, a sign, more digits, anything not a number), which callers read from
    /// ``string(_:)`` as before.
    public func plainUInt32(_ value: AttributeValue) -> UInt32? {
        guard value.count > 0, value.count <= 9 else { return nil }
        return withUTF8(value) { bytes -> UInt32? in
            var number: UInt32 = 0
            for i in bytes.indices {
                let digit = bytes[i] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                number = number &* 10 &+ UInt32(digit)
            }
            return number
        }
    }
}

extension XMLCursor {
    /// The element's one child element when everything else in it is white space; nil when
    /// it has no child element, several, or text that is not white space (and for text).
    /// The recorded nodes are walked in place: no cursor is made per child.
    public var soleElement: XMLCursor? {
        let found = events.nodes.withUnsafeBufferPointer { nodes -> Int? in
            let n = nodes[index]
            if n.isText { return nil }
            var found: Int?
            var i = index + 1
            while i < Int(n.end) {
                let child = nodes[i]
                if child.isText {
                    if !events.isWhitespace(child) { return nil }
                    i += 1
                } else {
                    if found != nil { return nil }
                    found = i
                    i = Int(child.end)
                }
            }
            return found
        }
        return found.map { XMLCursor(events: events, index: $0) }
    }
}

extension XMLCursor {
    /// Calls `body` with a cursor at each child element, in document order (``elements``
    /// walked by a closure): each cursor is lent to `body` for the call, where the iterator
    /// hands out one it owns (a retain and a release of the recording per child).
    /// Inlinable: specialized for and inlined into each decoder, its closure is inlined into
    /// the loop instead of being called through a context for every child.
    @inlinable
    public func forEachElement<E: Error>(_ body: (XMLCursor) throws(E) -> Void) throws(E) {
        let n = events.nodes[index]
        if n.isText { return }
        var i = index + 1
        while i < Int(n.end) {
            let child = events.nodes[i]
            if child.isText {
                i += 1
            } else {
                try body(XMLCursor(events: events, index: i))
                i = Int(child.end)
            }
        }
    }
}

/// A decoder's fixed list of attribute names, for ``XMLCursor/forEachAttributeValue(in:_:)``,
/// which gives each attribute's position in the list instead of its name.
public struct XMLNameTable: Sendable {
    /// The names, in the order given.
    public let names: [XMLName]
    /// The local names' UTF-8 lengths: most names asked about differ in length from most
    /// names in the table, and that test is a load where a string comparison is a call.
    /// The local names are ASCII (as the schemas' names are): no other string is canonically
    /// equivalent to one, so a different length means a different name, as `==` would find.
    @usableFromInline let lengths: [Int]

    public init(_ names: [XMLName]) {
        assert(names.allSatisfy { $0.local.utf8.allSatisfy { $0 < 0x80 } }, "local names must be ASCII")
        self.names = names
        lengths = names.map(\.local.utf8.count)
    }

    /// Names in no namespace.
    public init(unqualified locals: [String]) {
        self.init(locals.map { XMLName("", $0) })
    }

    /// The position of the first entry equal to `name`, or nil. Inlinable, so that the walks
    /// above, inlined into a decoder, make no call per attribute or child for it.
    @inlinable
    public func position(of name: XMLName) -> Int? {
        let length = name.local.utf8.count
        return lengths.withUnsafeBufferPointer { lengths in
            names.withUnsafeBufferPointer { names in
                for i in lengths.indices where lengths[i] == length {
                    if names[i].local == name.local && names[i].namespace == name.namespace { return i }
                }
                return nil
            }
        }
    }
}

/// The names a decoder tells apart, as the cases of an enum: the table is built from the cases
/// in their order, each case's name given beside it, so a name and its case cannot drift apart
/// as a separate list of names and enum of positions could.
public struct XMLNameCases<Case: CaseIterable & Sendable>: Sendable {
    /// The cases' names, in the order of the cases.
    public let table: XMLNameTable
    @usableFromInline let cases: [Case]

    /// Names each case with `name`.
    public init(_ name: (Case) -> XMLName) {
        cases = Array(Case.allCases)
        table = XMLNameTable(cases.map(name))
    }

    /// Names each case by its raw value, in `namespace` (none by default).
    public init(namespace: String = "") where Case: RawRepresentable, Case.RawValue == String {
        self.init { XMLName(namespace, $0.rawValue) }
    }

    /// The case at a position of ``table``, nil for nil. Inlinable: called generically from
    /// another module, it was not specialized, and cost more than the lookup it follows.
    @inlinable
    public subscript(position: Int?) -> Case? {
        position.map { cases[$0] }
    }
}
