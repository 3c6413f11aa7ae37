/// The SAX2 events of one document, recorded in document order into a few
/// flat runs of plain values, for decoders that read straight from the events.
///
/// What libxml2 reports through its SAX2 interface (XML Namespaces §3-§6
/// resolved: each start tag comes with its namespace URI, local name, prefix,
/// attributes and namespace declarations) is appended as it arrives: one
/// entry per start tag (its end tag fills in where its content stops) and one
/// per run of character data (adjacent text and CDATA sections folded into
/// one, comments and processing instructions dropped, as in ``XMLElement``).
/// Attribute values and text stay bytes until a decoder asks for them.
///
/// Nothing here allocates per element: a decoder walks the events with an
/// ``XMLCursor`` (recursive descent, any number of passes, so "take this
/// element only if the model can hold all of it" costs no copy), and only the
/// parts it does not understand are turned into an ``XMLElement``
/// (``XMLCursor/subtree``), with the same names, prefixes, declarations,
/// attributes, text and positions the tree parser gives.
///
/// Made by ``XMLParser/events(_:limits:vocabulary:)`` (same SAX2 set-up and
/// safety rules as ``XMLParser/parse(_:limits:vocabulary:)``: no DTD, no
/// entities, no network, size/depth/element-count limits) or by replaying a
/// tree (``init(replaying:)``), so a decoder written against the cursor also
/// serves callers that hold a tree. Immutable once made.
///
/// Nodes, attributes, declarations and value bytes lie in one allocation of
/// their exact size, made once per recording and freed with it (four arrays
/// cost four allocations to make and four to free, per parse).
public final class XMLEvents: @unchecked Sendable {
    /// A start tag with its content range, or a run of character data. Plain
    /// integers only (names and prefixes are indices into ``names`` and
    /// ``prefixes``), so recording and reading one costs no reference counting.
    struct Node: Sendable {
        /// For an element, the index one past its last descendant (the next
        /// sibling's index); for text, `-1`.
        var end: Int32
        /// Index in `names` (0, the empty name, for text).
        var name: Int32
        /// Index in `prefixes`; -1 for none.
        var prefix: Int32
        /// Start-tag position (1-based; 0 for replayed elements without one).
        var line: Int32
        var column: Int32
        /// Attributes: `attributes[attributeStart ..< attributeStart + attributeCount]`.
        var attributeStart: Int32
        var attributeCount: Int32
        /// Namespace declarations on the start tag, in `declarations`.
        var declarationStart: Int32
        var declarationCount: Int32
        /// Text: `bytes[textStart ..< textStart + textCount]`.
        var textStart: Int32
        var textCount: Int32

        var isText: Bool { end < 0 }
    }

    /// A namespace declaration: prefix (index in `prefixes`, -1 for the
    /// default namespace) and URI (index in `uris`). Plain integers, like
    /// ``Node``: recording one retains no string, and freeing the recording
    /// destroys none.
    struct Declaration: Sendable {
        var prefix: Int32
        var uri: Int32
    }

    /// An attribute: qualified name and prefix (indices, as in ``Node``), value bytes.
    struct Attribute: Sendable {
        var name: Int32
        var prefix: Int32
        var valueStart: Int32
        var valueCount: Int32
    }

    let nodes: FixedRun<Node>
    /// Each distinct qualified name of the document once; entry 0 is the empty name.
    let names: [XMLName]
    /// Each distinct prefix of the document once.
    let prefixes: [String]
    let attributes: FixedRun<Attribute>
    let declarations: FixedRun<Declaration>
    /// The namespace URIs declarations refer to (each distinct one once).
    let uris: [String]
    /// Attribute values and text, UTF-8, decoded (no references left).
    let bytes: FixedRun<UInt8>
    /// The one allocation `nodes`, `attributes`, `declarations` and `bytes` lie in, in that order.
    private let storage: UnsafeMutableRawPointer

    /// A recording holding copies of the given values; `adjust`, when given,
    /// then rewrites the copied nodes and attributes in place (before anything
    /// else can read them).
    init(
        nodes: UnsafeBufferPointer<Node>, names: [XMLName], prefixes: [String], attributes: UnsafeBufferPointer<Attribute>,
        declarations: UnsafeBufferPointer<Declaration>, uris: [String], bytes: UnsafeBufferPointer<UInt8>,
        adjusting adjust: ((UnsafeMutableBufferPointer<Node>, UnsafeMutableBufferPointer<Attribute>) -> Void)? = nil
    ) {
        // The recorder stored counts and positions without an overflow test each (a parse
        // cannot exceed these bounds; a replayed tree is checked here, once).
        let limit = Int(Int32.max)
        precondition(
            nodes.count <= limit && attributes.count <= limit && declarations.count <= limit && bytes.count <= limit,
            "recording too large")
        // Every part but the bytes is made of 4-byte integers, so each starts aligned after the one before.
        let nodeBytes = nodes.count * MemoryLayout<Node>.stride
        let attributeBytes = attributes.count * MemoryLayout<Attribute>.stride
        let declarationBytes = declarations.count * MemoryLayout<Declaration>.stride
        let total = nodeBytes + attributeBytes + declarationBytes + bytes.count
        let alignment = max(MemoryLayout<Node>.alignment, MemoryLayout<Attribute>.alignment, MemoryLayout<Declaration>.alignment)
        storage = .allocate(byteCount: max(total, 1), alignment: alignment)
        self.nodes = FixedRun(copying: nodes, to: storage)
        self.attributes = FixedRun(copying: attributes, to: storage + nodeBytes)
        self.declarations = FixedRun(copying: declarations, to: storage + nodeBytes + attributeBytes)
        self.bytes = FixedRun(copying: bytes, to: storage + nodeBytes + attributeBytes + declarationBytes)
        if let adjust {
            adjust(
                UnsafeMutableBufferPointer(start: storage.assumingMemoryBound(to: Node.self), count: nodes.count),
                UnsafeMutableBufferPointer(start: (storage + nodeBytes).assumingMemoryBound(to: Attribute.self), count: attributes.count))
        }
        self.names = names
        self.prefixes = prefixes
        self.uris = uris
    }

    /// A recording holding copies of the given arrays.
    static func copying(
        nodes: [Node], names: [XMLName], prefixes: [String], attributes: [Attribute],
        declarations: [Declaration], uris: [String], bytes: [UInt8]
    ) -> XMLEvents {
        nodes.withUnsafeBufferPointer { n in
            attributes.withUnsafeBufferPointer { a in
                declarations.withUnsafeBufferPointer { d in
                    bytes.withUnsafeBufferPointer { b in
                        XMLEvents(nodes: n, names: names, prefixes: prefixes, attributes: a, declarations: d, uris: uris, bytes: b)
                    }
                }
            }
        }
    }

    deinit { storage.deallocate() }

    /// The declarations `start ..< start + count` as (prefix, URI) pairs.
    func declarationList(_ start: Int32, _ count: Int32) -> [(prefix: String?, uri: String)] {
        guard count > 0 else { return [] }
        var list: [(prefix: String?, uri: String)] = []
        list.reserveCapacity(Int(count))
        for d in declarations[Int(start)..<Int(start + count)] {
            list.append((prefix(d.prefix), uris[Int(d.uri)]))
        }
        return list
    }

    /// The root element. A recorded or replayed document always has one.
    public var root: XMLCursor { XMLCursor(events: self, index: 0) }

    /// Start tags and text runs recorded (a measure of the document's size).
    public var count: Int { nodes.count }

    /// The events a parse of `element`'s serialization would give: the same
    /// names, prefixes, declarations, attributes (in order), text nodes and
    /// recorded positions. Lets tree holders use the event decoders.
    public convenience init(replaying element: XMLElement) {
        var recorder = XMLEventRecorder(estimatedBytes: 256)
        recorder.names = [XMLName("", "")]
        var names: [XMLName: Int32] = [:]
        var prefixes: [String: Int32] = [:]
        var uris: [String: Int32] = [:]
        recorder.replay(element, names: &names, prefixes: &prefixes, uris: &uris)
        self.init(
            nodes: recorder.nodes.buffer, names: recorder.names, prefixes: recorder.prefixes,
            attributes: recorder.attributes.buffer, declarations: recorder.declarations.buffer, uris: recorder.uris,
            bytes: recorder.bytes.buffer)
    }

    func name(_ id: Int32) -> XMLName { names[Int(id)] }

    func prefix(_ id: Int32) -> String? { id < 0 ? nil : prefixes[Int(id)] }

    func string(_ start: Int32, _ count: Int32) -> String {
        guard count > 0 else { return "" }
        return bytes.withUnsafeBufferPointer { Self.string(UnsafeBufferPointer(rebasing: $0[Int(start)..<Int(start + count)])) }
    }

    /// The text of UTF-8 bytes, ill-formed sequences repaired as `String(decoding:as:)` repairs
    /// them. Copied into the string's own storage and validated there, which measured cheaper
    /// than `String(decoding:as:)` for the short texts of presence documents.
    static func string(_ utf8: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: utf8.count) { buffer in
            _ = buffer.initialize(from: utf8)
            return utf8.count
        }
    }

    /// The subtree of the element at `index` as a value tree.
    func element(at index: Int) -> XMLElement {
        let node = nodes[index]
        let end = Int(node.end)
        var count = 0
        var i = index + 1
        while i < end {
            count += 1
            i = nodes[i].isText ? i + 1 : Int(nodes[i].end)
        }
        var children: [XMLNode] = []
        if count > 0 {
            children.reserveCapacity(count)
            i = index + 1
            while i < end {
                let child = nodes[i]
                if child.isText {
                    children.append(.text(string(child.textStart, child.textCount)))
                    i += 1
                } else {
                    children.append(.element(element(at: i)))
                    i = Int(child.end)
                }
            }
        }
        var attributeList: [XMLAttribute] = []
        if node.attributeCount > 0 {
            attributeList.reserveCapacity(Int(node.attributeCount))
            for a in attributes[Int(node.attributeStart)..<Int(node.attributeStart + node.attributeCount)] {
                attributeList.append(XMLAttribute(name(a.name), string(a.valueStart, a.valueCount), prefix: prefix(a.prefix)))
            }
        }
        let declared = declarationList(node.declarationStart, node.declarationCount)
        var e = XMLElement(
            name(node.name), attributes: attributeList, prefix: prefix(node.prefix), namespaceDeclarations: declared,
            line: Int(node.line), column: Int(node.column))
        if count > 0 { e.children = children }
        return e
    }
}

/// A run of plain values inside an ``XMLEvents``' allocation, read like an
/// array: every subscript is bounds-checked, as an array's is.
struct FixedRun<Element: BitwiseCopyable>: @unchecked Sendable {
    private let base: UnsafePointer<Element>
    let count: Int

    /// Copies `source` to `destination` (aligned for `Element`, room for `source.count` values).
    init(copying source: UnsafeBufferPointer<Element>, to destination: UnsafeMutableRawPointer) {
        let typed = destination.bindMemory(to: Element.self, capacity: source.count)
        if let from = source.baseAddress, !source.isEmpty { typed.initialize(from: from, count: source.count) }
        base = UnsafePointer(typed)
        count = source.count
    }

    @inline(__always)
    subscript(i: Int) -> Element {
        precondition(UInt(bitPattern: i) < UInt(bitPattern: count), "index out of range")
        return base[i]
    }

    /// The values in `range`, which must lie within `0 ..< count`.
    @inline(__always)
    subscript(range: Range<Int>) -> Slice<UnsafeBufferPointer<Element>> {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "range out of bounds")
        return UnsafeBufferPointer(start: base, count: count)[range]
    }

    /// The values in place, for reads within `body` (its own subscripts are checked in debug builds only).
    @inline(__always)
    func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<Element>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }
}

/// Appends events to the flat arrays of an ``XMLEvents``: the SAX2 callbacks
/// call it while libxml2 parses, ``XMLEvents/init(replaying:)`` while walking a tree.
/// Names and prefixes are interned by the caller: a parse in its parser
/// context's ``InternTable`` (handed over by ``finished(names:prefixes:uris:)``),
/// a replay here (``addName(_:)``, ``addPrefix(_:)``, entry 0 the empty name).
/// Nodes, attributes, declarations, value bytes and the open-element stack are recorded in
/// ``RecordingBuffer``s and copied into the ``XMLEvents`` at their exact size.
struct XMLEventRecorder: ~Copyable {
    var nodes: RecordingBuffer<XMLEvents.Node>
    var names: [XMLName] = []
    var prefixes: [String] = []
    var attributes: RecordingBuffer<XMLEvents.Attribute>
    var declarations: RecordingBuffer<XMLEvents.Declaration>
    /// Namespace URIs, for a replay (a parse keeps them in its context's table).
    var uris: [String] = []
    /// Attribute values and text.
    var bytes: RecordingBuffer<UInt8>
    /// Indices of the open elements, outermost first.
    var open: RecordingBuffer<Int32>
    /// The text node that further character data extends (nil after any tag).
    var openText: Int?

    init(estimatedBytes: Int) {
        nodes = RecordingBuffer(capacity: Self.nodeCapacity(estimatedBytes))
        bytes = RecordingBuffer(capacity: Self.byteCapacity(estimatedBytes))
        attributes = RecordingBuffer(capacity: Self.attributeCapacity(estimatedBytes))
        open = RecordingBuffer(capacity: 16)
        declarations = RecordingBuffer(capacity: 8)
    }

    // Presence documents run to about one start tag per 30-40 bytes, and
    // as many runs of text (mostly indentation) as tags; values and text
    // are about half the bytes. Reserved once, so that a typical body
    // records without growing a buffer.
    private static func nodeCapacity(_ estimatedBytes: Int) -> Int { max(16, estimatedBytes / 16) }
    private static func byteCapacity(_ estimatedBytes: Int) -> Int { max(64, estimatedBytes * 3 / 4) }
    private static func attributeCapacity(_ estimatedBytes: Int) -> Int { max(8, estimatedBytes / 64) }

    /// Ready to record another document, as a new recorder for
    /// `estimatedBytes` would be, in the memory it already has (grown where
    /// that estimate needs more): a reused parser context records its next
    /// parse without allocating.
    mutating func reset(estimatedBytes: Int) {
        nodes.removeAll(keepingCapacity: Self.nodeCapacity(estimatedBytes))
        bytes.removeAll(keepingCapacity: Self.byteCapacity(estimatedBytes))
        attributes.removeAll(keepingCapacity: Self.attributeCapacity(estimatedBytes))
        open.removeAll(keepingCapacity: 16)
        declarations.removeAll(keepingCapacity: 8)
        // Filled by a replay only: a parser context's recorder leaves them empty.
        if !names.isEmpty { names.removeAll() }
        if !prefixes.isEmpty { prefixes.removeAll() }
        if !uris.isEmpty { uris.removeAll() }
        openText = nil
    }

    /// The memory the recorder's buffers hold.
    var allocatedBytes: Int {
        nodes.allocatedBytes + bytes.allocatedBytes + attributes.allocatedBytes + open.allocatedBytes
            + declarations.allocatedBytes
    }

    /// Most memory a parser context keeps a recorder with between parses
    /// (a presence body of a few kilobytes needs about 20 KiB): after a
    /// larger document the recorder is freed instead.
    static let maxKeptBytes = 128 << 10

    var depth: Int { open.count }

    /// A new entry in the name table; its index.
    mutating func addName(_ name: XMLName) -> Int32 {
        names.append(name)
        return Int32(names.count - 1)
    }

    /// A new entry in the prefix table; its index.
    mutating func addPrefix(_ prefix: String) -> Int32 {
        prefixes.append(prefix)
        return Int32(prefixes.count - 1)
    }

    /// A start tag (`name` and `prefix` as table indices, -1 for no prefix),
    /// after its attributes and declarations. The element's content follows
    /// until the matching ``end()``.
    ///
    /// This and the other per-event methods are inlined into the SAX2
    /// callbacks: each is a few stores, and a call per level cost about as much.
    @inline(__always)
    mutating func start(
        name: Int32, prefix: Int32, line: Int32, column: Int32, attributes attributeCount: Int, declarations declarationCount: Int
    ) {
        openText = nil
        open.append(Self.index(nodes.count))
        nodes.append(XMLEvents.Node(
            end: Self.index(nodes.count &+ 1), name: name, prefix: prefix,
            line: line, column: column,
            attributeStart: Self.index(attributes.count &- attributeCount), attributeCount: Self.index(attributeCount),
            declarationStart: Self.index(declarations.count &- declarationCount),
            declarationCount: Self.index(declarationCount),
            textStart: 0, textCount: 0))
    }

    /// A count or position as the recording stores it. Each fits: a parse
    /// reads at most `Int32.max` bytes, and every node, attribute, declaration
    /// and recorded byte comes from at least one of them (``XMLEvents`` checks
    /// the totals of a replayed tree once), so the recording converts without
    /// an overflow test per value.
    @inline(__always)
    private static func index(_ n: Int) -> Int32 { Int32(truncatingIfNeeded: n) }

    /// Records an attribute of the next start tag.
    @inline(__always)
    mutating func attribute(name: Int32, prefix: Int32, value: UnsafeBufferPointer<UInt8>) {
        let start = Self.index(bytes.count)
        bytes.append(value)
        attributes.append(XMLEvents.Attribute(name: name, prefix: prefix, valueStart: start, valueCount: Self.index(value.count)))
    }

    /// Records an attribute whose value is already decoded bytes (appended to `bytes` by the caller from `start`).
    mutating func attribute(name: Int32, prefix: Int32, valueFrom start: Int) {
        attributes.append(XMLEvents.Attribute(
            name: name, prefix: prefix, valueStart: Self.index(start), valueCount: Self.index(bytes.count &- start)))
    }

    @inline(__always)
    mutating func end() {
        openText = nil
        guard let index = open.popLast() else { return }
        nodes[Int(index)].end = Self.index(nodes.count)
    }

    /// Character data inside the open element (outside the root it is ignored).
    @inline(__always)
    mutating func characters(_ text: UnsafeBufferPointer<UInt8>) {
        guard !open.isEmpty, !text.isEmpty else { return }
        if let openText {
            bytes.append(text)
            nodes[openText].textCount &+= Self.index(text.count)
            return
        }
        openText = nodes.count
        let start = Self.index(bytes.count)
        bytes.append(text)
        appendText(start: start, count: Self.index(text.count))
    }

    @inline(__always)
    private mutating func appendText(start: Int32, count: Int32) {
        nodes.append(XMLEvents.Node(
            end: -1, name: 0, prefix: -1, line: 0, column: 0,
            attributeStart: 0, attributeCount: 0, declarationStart: 0, declarationCount: 0,
            textStart: start, textCount: count))
    }

    /// Walks a tree, recording what its parse would have reported.
    mutating func replay(
        _ e: XMLElement, names nameIDs: inout [XMLName: Int32], prefixes prefixIDs: inout [String: Int32],
        uris uriIDs: inout [String: Int32]
    ) {
        func nameID(_ n: XMLName) -> Int32 {
            if let id = nameIDs[n] { return id }
            let id = addName(n)
            nameIDs[n] = id
            return id
        }
        func prefixID(_ p: String?) -> Int32 {
            guard let p else { return -1 }
            if let id = prefixIDs[p] { return id }
            let id = addPrefix(p)
            prefixIDs[p] = id
            return id
        }
        for a in e.attributes {
            var value = a.value
            let name = nameID(a.name), prefix = prefixID(a.prefix)
            value.withUTF8 { attribute(name: name, prefix: prefix, value: $0) }
        }
        for d in e.namespaceDeclarations {
            let uri: Int32
            if let id = uriIDs[d.uri] {
                uri = id
            } else {
                uri = Int32(uris.count)
                uris.append(d.uri)
                uriIDs[d.uri] = uri
            }
            declarations.append(XMLEvents.Declaration(prefix: prefixID(d.prefix), uri: uri))
        }
        start(
            name: nameID(e.name), prefix: prefixID(e.prefix),
            line: Int32(truncatingIfNeeded: e.line), column: Int32(truncatingIfNeeded: e.column),
            attributes: e.attributes.count, declarations: e.namespaceDeclarations.count)
        for child in e.children {
            switch child {
            case .element(let c): replay(c, names: &nameIDs, prefixes: &prefixIDs, uris: &uriIDs)
            case .text(var t):
                // A tree may hold adjacent or empty text nodes; a parse never gives them.
                openText = nil
                if t.isEmpty {
                    appendText(start: Int32(bytes.count), count: 0)
                } else {
                    t.withUTF8 { characters($0) }
                }
                openText = nil
            }
        }
        end()
    }

    /// The recording (copied out at its exact size, into one allocation), with name, prefix and URI tables kept outside the recorder.
    func finished(names: [XMLName], prefixes: [String], uris: [String]) -> XMLEvents {
        XMLEvents(
            nodes: nodes.buffer, names: names, prefixes: prefixes, attributes: attributes.buffer,
            declarations: declarations.buffer, uris: uris, bytes: bytes.buffer)
    }
}
