/// The SAX2 events of one document, recorded in document order into a few
/// flat arrays, for decoders that read straight from the events.
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
public final class XMLEvents: Sendable {
    /// A start tag with its content range, or a run of character data. Plain
    /// integers only (names live in ``names``), so reading one costs no
    /// reference counting.
    struct Node: Sendable {
        /// For an element, the index one past its last descendant (the next
        /// sibling's index); for text, `-1`.
        var end: Int32
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

    /// An attribute: qualified name, prefix hint, value bytes.
    struct Attribute: Sendable {
        var name: XMLName
        var prefix: String?
        var valueStart: Int32
        var valueCount: Int32
    }

    let nodes: [Node]
    /// The name of each node (empty for text), parallel to `nodes`.
    let names: [XMLName]
    /// The prefix of each node, parallel to `nodes`.
    let prefixes: [String?]
    let attributes: [Attribute]
    let declarations: [(prefix: String?, uri: String)]
    /// Attribute values and text, UTF-8, decoded (no references left).
    let bytes: [UInt8]

    init(
        nodes: [Node], names: [XMLName], prefixes: [String?], attributes: [Attribute],
        declarations: [(prefix: String?, uri: String)], bytes: [UInt8]
    ) {
        self.nodes = nodes
        self.names = names
        self.prefixes = prefixes
        self.attributes = attributes
        self.declarations = declarations
        self.bytes = bytes
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
        recorder.replay(element)
        self.init(
            nodes: recorder.nodes, names: recorder.names, prefixes: recorder.prefixes, attributes: recorder.attributes,
            declarations: recorder.declarations, bytes: recorder.bytes)
    }

    /// The name of a text node.
    static let noName = XMLName("", "")

    func string(_ start: Int32, _ count: Int32) -> String {
        guard count > 0 else { return "" }
        return bytes.withUnsafeBufferPointer {
            String(decoding: UnsafeBufferPointer(rebasing: $0[Int(start)..<Int(start + count)]), as: UTF8.self)
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
                attributeList.append(XMLAttribute(a.name, string(a.valueStart, a.valueCount), prefix: a.prefix))
            }
        }
        let declared = node.declarationCount == 0
            ? [] : Array(declarations[Int(node.declarationStart)..<Int(node.declarationStart + node.declarationCount)])
        var e = XMLElement(
            names[index], attributes: attributeList, prefix: prefixes[index], namespaceDeclarations: declared,
            line: Int(node.line), column: Int(node.column))
        if count > 0 { e.children = children }
        return e
    }
}

/// Appends events to the flat arrays of an ``XMLEvents``: the SAX2 callbacks
/// call it while libxml2 parses, ``XMLEvents/init(replaying:)`` while walking a tree.
struct XMLEventRecorder {
    var nodes: [XMLEvents.Node] = []
    var names: [XMLName] = []
    var prefixes: [String?] = []
    var attributes: [XMLEvents.Attribute] = []
    var declarations: [(prefix: String?, uri: String)] = []
    var bytes: [UInt8] = []
    /// Indices of the open elements, outermost first.
    var open: [Int32] = []
    /// The text node that further character data extends (nil after any tag).
    var openText: Int?

    init(estimatedBytes: Int) {
        // Presence documents run to about one start tag per 30 bytes.
        nodes.reserveCapacity(max(16, estimatedBytes / 24))
        names.reserveCapacity(max(16, estimatedBytes / 24))
        prefixes.reserveCapacity(max(16, estimatedBytes / 24))
        bytes.reserveCapacity(max(64, estimatedBytes / 2))
        attributes.reserveCapacity(max(8, estimatedBytes / 64))
        open.reserveCapacity(16)
    }

    var depth: Int { open.count }

    /// A start tag. The element's content follows until the matching ``end()``.
    mutating func start(
        _ name: XMLName, prefix: String?, line: Int, column: Int,
        attributes attributeCount: Int, declarations declarationCount: Int
    ) {
        openText = nil
        open.append(Int32(nodes.count))
        names.append(name)
        prefixes.append(prefix)
        nodes.append(XMLEvents.Node(
            end: Int32(nodes.count + 1), line: Int32(truncatingIfNeeded: line), column: Int32(truncatingIfNeeded: column),
            attributeStart: Int32(attributes.count - attributeCount), attributeCount: Int32(attributeCount),
            declarationStart: Int32(declarations.count - declarationCount), declarationCount: Int32(declarationCount),
            textStart: 0, textCount: 0))
    }

    /// Records an attribute of the next ``start(_:prefix:line:column:attributes:declarations:)``.
    mutating func attribute(_ name: XMLName, prefix: String?, value: UnsafeBufferPointer<UInt8>) {
        let start = Int32(bytes.count)
        bytes.append(contentsOf: value)
        attributes.append(XMLEvents.Attribute(name: name, prefix: prefix, valueStart: start, valueCount: Int32(value.count)))
    }

    /// Records an attribute whose value is already decoded bytes (appended to `bytes` by the caller from `start`).
    mutating func attribute(_ name: XMLName, prefix: String?, valueFrom start: Int) {
        attributes.append(XMLEvents.Attribute(
            name: name, prefix: prefix, valueStart: Int32(start), valueCount: Int32(bytes.count - start)))
    }

    mutating func end() {
        openText = nil
        guard let index = open.popLast() else { return }
        nodes[Int(index)].end = Int32(nodes.count)
    }

    /// Character data inside the open element (outside the root it is ignored).
    mutating func characters(_ text: UnsafeBufferPointer<UInt8>) {
        guard !open.isEmpty, !text.isEmpty else { return }
        if let openText {
            bytes.append(contentsOf: text)
            nodes[openText].textCount += Int32(text.count)
            return
        }
        openText = nodes.count
        let start = Int32(bytes.count)
        bytes.append(contentsOf: text)
        names.append(XMLEvents.noName)
        prefixes.append(nil)
        nodes.append(XMLEvents.Node(
            end: -1, line: 0, column: 0,
            attributeStart: 0, attributeCount: 0, declarationStart: 0, declarationCount: 0,
            textStart: start, textCount: Int32(text.count)))
    }

    /// Walks a tree, recording what its parse would have reported.
    mutating func replay(_ e: XMLElement) {
        for a in e.attributes {
            var value = a.value
            value.withUTF8 { attribute(a.name, prefix: a.prefix, value: $0) }
        }
        declarations += e.namespaceDeclarations
        start(
            e.name, prefix: e.prefix, line: e.line, column: e.column,
            attributes: e.attributes.count, declarations: e.namespaceDeclarations.count)
        for child in e.children {
            switch child {
            case .element(let c): replay(c)
            case .text(var t):
                // A tree may hold adjacent text nodes; a parse never gives two in a row.
                openText = nil
                t.withUTF8 { characters($0) }
                if t.isEmpty { emptyText() }
            }
        }
        end()
    }

    /// An empty text node (only trees have them; kept so a replay gives the tree back).
    private mutating func emptyText() {
        guard !open.isEmpty else { return }
        names.append(XMLEvents.noName)
        prefixes.append(nil)
        nodes.append(XMLEvents.Node(
            end: -1, line: 0, column: 0,
            attributeStart: 0, attributeCount: 0, declarationStart: 0, declarationCount: 0,
            textStart: Int32(bytes.count), textCount: 0))
        openText = nil
    }

    func finished() -> XMLEvents {
        XMLEvents(
            nodes: nodes, names: names, prefixes: prefixes, attributes: attributes, declarations: declarations, bytes: bytes)
    }
}
