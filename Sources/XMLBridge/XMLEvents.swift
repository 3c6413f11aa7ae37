internal import CXMLRecorder

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

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
    /// Laid out as CXMLRecorder's `pg_node`, which the parse records (as
    /// ``Attribute`` and ``Declaration`` are as `pg_attribute` and `pg_declaration`).
    @usableFromInline
    struct Node: Sendable, BitwiseCopyable {
        /// For an element, the index one past its last descendant (the next
        /// sibling's index); for text, `-1`.
        @usableFromInline var end: Int32
        /// Index in `names` (0, the empty name, for text).
        @usableFromInline var name: Int32
        /// Index in `prefixes`; -1 for none.
        @usableFromInline var prefix: Int32
        /// Start-tag position (1-based; 0 for replayed elements without one).
        @usableFromInline var line: Int32
        @usableFromInline var column: Int32
        /// Attributes: `attributes[attributeStart ..< attributeStart + attributeCount]`.
        @usableFromInline var attributeStart: Int32
        @usableFromInline var attributeCount: Int32
        /// Namespace declarations on the start tag, in `declarations`.
        @usableFromInline var declarationStart: Int32
        @usableFromInline var declarationCount: Int32
        /// Text: `bytes[textStart ..< textStart + textCount]`.
        @usableFromInline var textStart: Int32
        @usableFromInline var textCount: Int32

        @inlinable var isText: Bool { end < 0 }
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
    @usableFromInline
    struct Attribute: Sendable, BitwiseCopyable {
        @usableFromInline var name: Int32
        @usableFromInline var prefix: Int32
        @usableFromInline var valueStart: Int32
        @usableFromInline var valueCount: Int32
    }

    @usableFromInline let nodes: FixedRun<Node>
    /// The names, prefixes and URIs the entries' indices refer to.
    @usableFromInline let tables: XMLNameTables
    /// Each distinct qualified name of the document once; entry 0 is the empty name.
    @inlinable var names: [XMLName] { tables.names }
    /// Each distinct prefix of the document once.
    var prefixes: [String] { tables.prefixes }
    @usableFromInline let attributes: FixedRun<Attribute>
    let declarations: FixedRun<Declaration>
    /// The namespace URIs declarations refer to (each distinct one once).
    var uris: [String] { tables.uris }
    /// Attribute values and text, UTF-8, decoded (no references left).
    @usableFromInline let bytes: FixedRun<UInt8>
    /// The one allocation `nodes`, `attributes`, `declarations` and `bytes` lie in, in that
    /// order, freed with the recording.
    private let storage: UnsafeMutableRawPointer

    /// A recording holding copies of the given values; `adjust`, when given,
    /// then rewrites the copied nodes and attributes in place (before anything
    /// else can read them).
    init(
        nodes: UnsafeBufferPointer<Node>, tables: XMLNameTables, attributes: UnsafeBufferPointer<Attribute>,
        declarations: UnsafeBufferPointer<Declaration>, bytes: UnsafeBufferPointer<UInt8>,
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
        // malloc's alignment (16) suits every part.
        guard let memory = malloc(max(total, 1)) else { fatalError("out of memory") }
        self.storage = memory
        self.nodes = FixedRun(copying: nodes, to: memory)
        self.attributes = FixedRun(copying: attributes, to: memory + nodeBytes)
        self.declarations = FixedRun(copying: declarations, to: memory + nodeBytes + attributeBytes)
        self.bytes = FixedRun(copying: bytes, to: memory + nodeBytes + attributeBytes + declarationBytes)
        if let adjust {
            adjust(
                UnsafeMutableBufferPointer(start: memory.assumingMemoryBound(to: Node.self), count: nodes.count),
                UnsafeMutableBufferPointer(
                    start: (memory + nodeBytes).assumingMemoryBound(to: Attribute.self), count: attributes.count))
        }
        self.tables = tables
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
                        XMLEvents(
                            nodes: n, tables: XMLNameTables(names: names, prefixes: prefixes, uris: uris),
                            attributes: a,
                            declarations: d, bytes: b)
                    }
                }
            }
        }
    }

    deinit { free(storage) }

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
            nodes: recorder.nodes,
            tables: XMLNameTables(names: recorder.names, prefixes: recorder.prefixes, uris: recorder.uris),
            attributes: recorder.attributes, declarations: recorder.declarations, bytes: recorder.bytes)
    }

    func name(_ id: Int32) -> XMLName { names[Int(id)] }

    func prefix(_ id: Int32) -> String? { id < 0 ? nil : prefixes[Int(id)] }

    func string(_ start: Int32, _ count: Int32) -> String {
        guard count > 0 else { return "" }
        return bytes.withUnsafeBufferPointer {
            Self.string(UnsafeBufferPointer(rebasing: $0[Int(start)..<Int(start + count)]))
        }
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
                attributeList.append(
                    XMLAttribute(name(a.name), string(a.valueStart, a.valueCount), prefix: prefix(a.prefix)))
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
@usableFromInline
struct FixedRun<Element: BitwiseCopyable>: @unchecked Sendable {
    @usableFromInline let base: UnsafePointer<Element>
    @usableFromInline let count: Int

    /// Copies `source` to `destination` (aligned for `Element`, room for `source.count` values).
    init(copying source: UnsafeBufferPointer<Element>, to destination: UnsafeMutableRawPointer) {
        let typed = destination.bindMemory(to: Element.self, capacity: source.count)
        if let from = source.baseAddress, !source.isEmpty { typed.initialize(from: from, count: source.count) }
        base = UnsafePointer(typed)
        count = source.count
    }

    @inlinable @inline(__always)
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
    @inlinable @inline(__always)
    func withUnsafeBufferPointer<R>(_ body: (UnsafeBufferPointer<Element>) throws -> R) rethrows -> R {
        try body(UnsafeBufferPointer(start: base, count: count))
    }
}

/// The names, prefixes and namespace URIs a recording's entries refer to by
/// index, in one object: a parser context's recordings share one while the
/// context meets no new name (each recording holds one reference, not one per
/// table), and a recording and the subtrees detached from it share theirs.
@usableFromInline
final class XMLNameTables: Sendable {
    @usableFromInline let names: [XMLName]
    let prefixes: [String]
    let uris: [String]

    init(names: [XMLName], prefixes: [String], uris: [String]) {
        self.names = names
        self.prefixes = prefixes
        self.uris = uris
    }
}

/// Appends events to the flat runs of an ``XMLEvents``: libxml2's SAX2
/// callbacks (``EventSink``'s, in C) while it parses, ``XMLEvents/init(replaying:)``
/// while walking a tree. The runs (nodes, attributes, declarations, value
/// bytes and the open-element stack) are a C `pg_recorder` (CXMLRecorder),
/// in memory of its own so that the callbacks reach it through their sink,
/// and are copied into the ``XMLEvents`` at their exact size.
/// Names and prefixes are interned by the caller: a parse in its parser
/// context's tables (handed over by ``finished(tables:)``),
/// a replay here (``addName(_:)``, ``addPrefix(_:)``, entry 0 the empty name).
struct XMLEventRecorder: ~Copyable {
    let state: UnsafeMutablePointer<pg_recorder>
    var names: [XMLName] = []
    var prefixes: [String] = []
    /// Namespace URIs, for a replay (a parse keeps them in its context's table).
    var uris: [String] = []

    /// Room reserved for a document of about `estimatedBytes` (presence
    /// documents run to about one start tag per 30-40 bytes, as many runs of
    /// text, values and text about half the bytes), so that a typical body
    /// records without growing a run.
    init(estimatedBytes: Int) {
        state = .allocate(capacity: 1)
        pg_recorder_init(state, estimatedBytes)
    }

    deinit {
        pg_recorder_destroy(state)
        state.deallocate()
    }

    /// Ready to record another document, as a new recorder for
    /// `estimatedBytes` would be, in the memory it already has (grown where
    /// that estimate needs more): a reused parser context records its next
    /// parse without allocating.
    mutating func reset(estimatedBytes: Int) {
        pg_recorder_reset(state, estimatedBytes)
        // Filled by a replay only: a parser context's recorder leaves them empty.
        if !names.isEmpty { names.removeAll() }
        if !prefixes.isEmpty { prefixes.removeAll() }
        if !uris.isEmpty { uris.removeAll() }
    }

    /// The memory the recorder's runs hold.
    var allocatedBytes: Int { pg_recorder_allocated_bytes(state) }

    /// Most memory a parser context keeps a recorder with between parses
    /// (a presence body of a few kilobytes needs about 20 KiB): after a
    /// larger document the recorder is freed instead.
    static let maxKeptBytes = 128 << 10

    var depth: Int { state.pointee.open.count }

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
            let name = nameID(a.name)
            let prefix = prefixID(a.prefix)
            value.withUTF8 { pg_record_attribute(state, name, prefix, $0.baseAddress, $0.count) }
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
            pg_record_declaration(state, prefixID(d.prefix), uri)
        }
        pg_record_start(
            state, nameID(e.name), prefixID(e.prefix),
            Int32(truncatingIfNeeded: e.line), Int32(truncatingIfNeeded: e.column),
            e.attributes.count, e.namespaceDeclarations.count)
        for child in e.children {
            switch child {
            case .element(let c): replay(c, names: &nameIDs, prefixes: &prefixIDs, uris: &uriIDs)
            // A tree may hold adjacent or empty text nodes; a parse never gives them.
            case .text(var t): t.withUTF8 { pg_record_text(state, $0.baseAddress, $0.count) }
            }
        }
        pg_record_end(state)
    }

    /// The recording (copied out at its exact size, into one allocation), with name, prefix and URI tables kept outside the recorder.
    func finished(tables: consuming XMLNameTables) -> XMLEvents {
        XMLEvents(nodes: nodes, tables: tables, attributes: attributes, declarations: declarations, bytes: bytes)
    }

    /// The values recorded so far, in place (valid until the next record or
    /// reset). The C entry types (`pg_node`, `pg_attribute`, `pg_declaration`)
    /// and their Swift twins have the same layout.
    var nodes: UnsafeBufferPointer<XMLEvents.Node> { Self.values(state.pointee.nodes) }
    var attributes: UnsafeBufferPointer<XMLEvents.Attribute> { Self.values(state.pointee.attributes) }
    var declarations: UnsafeBufferPointer<XMLEvents.Declaration> { Self.values(state.pointee.declarations) }
    var bytes: UnsafeBufferPointer<UInt8> { Self.values(state.pointee.bytes) }

    private static func values<T>(_ run: pg_run) -> UnsafeBufferPointer<T> {
        UnsafeBufferPointer(start: run.base?.bindMemory(to: T.self, capacity: run.count), count: run.count)
    }
}
