/// Writes namespace-well-formed XML 1.0 in UTF-8 straight to bytes, element
/// by element, without a value tree: the one serializer behind both
/// ``XMLWriter`` (which walks an ``XMLElement`` tree through it) and the
/// document codecs that write their values directly.
///
/// The output is exactly ``XMLWriter``'s: the same declaration, the same
/// prefix and `xmlns` choices (Namespaces in XML 1.0 §3), the same escaping
/// (XML 1.0 §2.4, §3.3.3; CR as `&#13;`; C0 controls other than TAB, LF and CR, which XML 1.0
/// §2.2 does not admit even as references, become U+FFFD), and the same
/// indentation rule: an element's children are indented when it holds
/// elements only, which a caller states up front with `indentsChildren`
/// (a tree walk computes it from the children; a codec knows it).
///
/// ```swift
/// var w = XMLStreamWriter()
/// w.startElement("urn:ietf:params:xml:ns:pidf", "presence", prefix: nil)
/// w.attribute("entity", "pres:alice@example.com")
/// w.endElement()
/// let bytes = w.finish()
/// ```
/// Attributes follow ``startElement(_:_:prefix:declarations:indentsChildren:)``
/// before any content; a namespaced attribute that needs a new declaration
/// should come before the unqualified ones (its `xmlns` is written where it is
/// asked for). Calls out of that order, or an unbalanced ``endElement()``,
/// are programming errors and are ignored rather than trapped.
public struct XMLStreamWriter: ~Copyable {
    private var out: XMLByteSink
    private let indentation: Indentation
    /// Prefix bindings in force, innermost last, the strings they name, and the namespaces the
    /// writer was made with (``Namespaces``).
    private var scope: Scope
    /// Open elements, innermost last (pushed and popped once per element,
    /// without the uniqueness check an array makes on each).
    private var frames: RecordingBuffer<Frame>
    /// True while the innermost element's start tag is open (no `>` yet, so
    /// attributes may follow). Only the innermost one can be: a child closes
    /// its parent's start tag. Kept here rather than in its frame, so that
    /// the check on every attribute reads one flag instead of a frame.
    private var startTagOpen = false

    /// An open element. Its end tag repeats the qualified name written in
    /// its start tag, so the frame keeps where those bytes are in the output
    /// instead of the name's strings (no reference counting per element).
    private struct Frame {
        /// Offset and length of the start tag's qualified name in `out`.
        var nameOffset: Int
        var nameLength: Int
        /// `scope.bindings.count` before this element's declarations.
        var savedBindings: Int
        var indentsChildren: Bool
    }

    /// How lines are indented. The default, two spaces, is a case of its own: it holds no
    /// arrays (a writer made with two of them retained and released both).
    private enum Indentation {
        case none
        case twoSpaces
        /// `unit` is one level's indentation; `run` is `unit` sixteen times (a line's
        /// indentation is one copy of a prefix of it).
        case custom(unit: [UInt8], run: [UInt8])

        var isOn: Bool {
            if case .none = self { false } else { true }
        }
    }

    /// Thirty-two spaces: the indentation of a line up to sixteen levels deep, two spaces a level.
    private static let spaces: StaticString = "                                "

    static let xmlNamespace = "http://www.w3.org/XML/1998/namespace"
    static let xmlnsNamespace = "http://www.w3.org/2000/xmlns/"

    /// A writer; `indent` nil writes no line breaks, `declaration` writes the XML declaration first.
    /// `namespaces` are the ones a codec names its elements in (``Name``, made from them), which
    /// the writer then knows by position.
    public init(
        indent: String? = "  ", declaration: Bool = true, capacity: Int = 2048, namespaces: Namespaces = .none
    ) {
        out = XMLByteSink(capacity: capacity)
        frames = RecordingBuffer(capacity: 16)
        scope = Scope(namespaces: namespaces, bindings: RecordingBuffer(capacity: 16))
        if let indent {
            // The default: nothing built or held per document.
            indentation =
                indent == "  "
                ? .twoSpaces
                : .custom(unit: Array(indent.utf8), run: Array(repeating: Array(indent.utf8), count: 16).flatMap { $0 })
        } else {
            indentation = .none
        }
        if declaration {
            out.append(#"<?xml version="1.0" encoding="UTF-8"?>"# as StaticString)
            if indentation.isOn { out.append(0x0A) }
        }
    }

    /// The document's bytes (a final line break when indenting); the writer is consumed.
    public consuming func finish() -> [UInt8] {
        while !frames.isEmpty { endElement() }
        if indentation.isOn { out.append(0x0A) }
        return out.array
    }

    /// Whether `prefix` may be bound to `uri` (Namespaces in XML 1.0 §3):
    /// `xmlns` never, `xml` only to its own namespace, and neither namespace
    /// to any other prefix.
    static func canDeclare(_ prefix: String, _ uri: String) -> Bool {
        if prefix.isEmpty || same(prefix, "xmlns") || same(uri, xmlnsNamespace) { return false }
        return same(prefix, "xml") == same(uri, xmlNamespace)
    }

    /// String equality with the UTF-8 lengths compared first: the names and
    /// URIs compared here mostly differ in length, and `==` alone goes
    /// through the general comparison for every pair that is not identical.
    @inline(__always)
    static func same(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a == b
    }

    @inline(__always)
    static func same(_ a: String?, _ b: String?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let x?, let y?): same(x, y)
        default: false
        }
    }

    /// A prefix bound to a namespace URI, both as positions in ``Scope/strings``; the
    /// default namespace's prefix is ``Scope/none``.
    struct Binding {
        var prefix: Int32
        var uri: Int32
    }

    /// Prefix bindings in force, innermost last. Prefixes and URIs are held as positions in
    /// `strings`, where each string met stands once, so that finding a binding compares
    /// integers (and ending an element drops its bindings without releasing any string).
    private struct Scope: ~Copyable {
        /// Every prefix and namespace URI met, each once: the rules' own (``builtIn``), then the
        /// writer's ``Namespaces``, then others as they come.
        var strings: [String]
        var bindings: RecordingBuffer<Binding>

        /// The prefixes and URIs the rules single out, at the positions named below.
        static let builtIn = ["xml", XMLStreamWriter.xmlNamespace, "xmlns", XMLStreamWriter.xmlnsNamespace, ""]
        static let xml: Int32 = 0, xmlNamespace: Int32 = 1, xmlns: Int32 = 2, xmlnsNamespace: Int32 = 3,
            empty: Int32 = 4
        /// No prefix: the default namespace.
        static let none: Int32 = -1

        /// The namespaces the writer was made with: ``Namespaces/lengths`` holds the UTF-8
        /// length of each of the first strings (theirs), compared first: a string is looked
        /// for among few of the same length.
        let namespaces: Namespaces
        /// The strings met after those, by position. A document's kept elements may declare
        /// any number of namespaces (50,000 within the parser's limits), which a search
        /// through `strings` would make quadratic.
        var met: [String: Int32] = [:]

        /// Their entries and declarations, held here once per writer: read through the class
        /// at each declaration, each array was retained and released around the read.
        let entries: [Namespaces.Entry]
        let declarations: [UInt8]

        init(namespaces: Namespaces, bindings: consuming RecordingBuffer<Binding>) {
            self.namespaces = namespaces
            strings = namespaces.strings
            entries = namespaces.entries
            declarations = namespaces.declarations
            self.bindings = bindings
        }

        /// The position of `string` in ``strings``, added when it is not there yet.
        mutating func intern(_ string: String) -> Int32 {
            let length = string.utf8.count
            let found = namespaces.lengths.withUnsafeBufferPointer { l in
                strings.withUnsafeBufferPointer { b -> Int? in
                    for i in l.indices where l[i] == length && b[i] == string { return i }
                    return nil
                }
            }
            if let found { return Int32(truncatingIfNeeded: found) }
            if let position = met[string] { return position }
            let position = Int32(truncatingIfNeeded: strings.count)
            strings.append(string)
            met[string] = position
            return position
        }

        mutating func intern(_ prefix: String?) -> Int32 {
            guard let prefix else { return Self.none }
            return intern(prefix)
        }

        /// True when `string` is the one at `position` (read in place: no copy of it).
        @inline(__always)
        func holds(_ string: String, at position: Int32) -> Bool {
            strings.withUnsafeBufferPointer { b in
                UInt(bitPattern: Int(position)) < UInt(b.count) && XMLStreamWriter.same(b[Int(position)], string)
            }
        }

        /// The string at `position` (a prefix other than ``none``, or a URI).
        func string(_ position: Int32) -> String { strings[Int(position)] }

        /// The URI `prefix` is bound to: `xml` to its namespace, the default namespace to none ("") when unbound.
        @inline(__always)
        func lookup(_ prefix: Int32) -> Int32? {
            if prefix == Self.xml { return Self.xmlNamespace }
            if let i = index(of: prefix) { return bindings[i].uri }
            return prefix == Self.none ? Self.empty : nil
        }

        /// The innermost binding of `prefix`.
        @inline(__always)
        func index(of prefix: Int32) -> Int? {
            let b = bindings.buffer
            var i = b.count
            while i > 0 {
                i &-= 1
                if b[i].prefix == prefix { return i }
            }
            return nil
        }

        /// A prefix (not the default namespace) in force for `uri`, innermost first.
        func prefix(for uri: Int32) -> Int32? {
            if uri == Self.xmlNamespace { return Self.xml }
            let b = bindings.buffer
            for binding in b.reversed()
            where binding.uri == uri && binding.prefix != Self.none && lookup(binding.prefix) == uri {
                return binding.prefix
            }
            return nil
        }

        /// Binds `prefix` to `uri` unless it already is; true when that is a new declaration.
        /// Inlined: every element asks it, mostly to find its binding in force already.
        @inline(__always)
        mutating func bind(_ prefix: Int32, _ uri: Int32) -> Bool {
            if lookup(prefix) == uri { return false }
            bindings.append(Binding(prefix: prefix, uri: uri))
            return true
        }
    }

    /// The namespaces a codec writes its elements in, each with the prefix it writes it with
    /// (nil: the default namespace), prepared once (a `static let`). A writer made with them
    /// holds their prefixes and URIs at known positions, so that the codec's ``Name``s are
    /// written without comparing strings, and declares them by their positions
    /// (``startElement(_:declaring:indentsChildren:)``).
    ///
    /// A class: a writer holds one reference to them, where it held (and retained) each array.
    public final class Namespaces: Sendable {
        /// The rules' own prefixes and URIs, then the entries' prefixes and URIs, each once.
        let strings: [String]
        /// Their UTF-8 lengths.
        let lengths: [Int]
        /// Each entry's prefix and URI, as positions in `strings`, and where its declaration
        /// lies in `declarations`.
        let entries: [Entry]
        /// Each entry's declaration (` xmlns:prefix="uri"`) as a writer writes it, one after the other.
        let declarations: [UInt8]
        /// An address of their own (as an integer), by which a writer tells the ``Namespace``s taken from them
        /// from others' (one pointer compared where two strings were). The byte there is never
        /// freed, so no other ``Namespaces`` is ever given it, even after these are gone; a
        /// codec's namespaces are made once (a `static let`), and the byte with them. A class
        /// instance held by each ``Namespace`` would do the same at the cost of a retain and
        /// a release for every copy of one.
        let identity = Int(bitPattern: UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1))

        struct Entry {
            var binding: Binding
            var declarationStart: Int
            var declarationEnd: Int
        }

        /// No namespaces of a codec's: the writer knows the rules' own strings only.
        public static let none = Namespaces([])

        /// At most 64 entries, each in a namespace other than none, `xml`'s and `xmlns`'s,
        /// with a prefix that may be bound to it (Namespaces in XML 1.0 §3).
        public init(_ namespaces: [(uri: String, prefix: String?)]) {
            precondition(namespaces.count <= 64, "at most 64 namespaces")
            var strings = Scope.builtIn
            func position(_ s: String) -> Int32 {
                if let i = strings.firstIndex(of: s) { return Int32(i) }
                strings.append(s)
                return Int32(strings.count - 1)
            }
            var entries: [Entry] = []
            guard !namespaces.isEmpty else {
                // ``none``, which the writer below is made with.
                (self.strings, self.lengths, self.entries, self.declarations) = (
                    strings, strings.map(\.utf8.count), entries, []
                )
                return
            }
            var declarations = XMLStreamWriter(indent: nil, declaration: false)
            for ns in namespaces {
                precondition(
                    !ns.uri.isEmpty && ns.uri != XMLStreamWriter.xmlNamespace
                        && ns.uri != XMLStreamWriter.xmlnsNamespace
                        && ns.prefix.map { XMLStreamWriter.canDeclare($0, ns.uri) } ?? true,
                    "a namespace a codec may declare")
                let start = declarations.out.count
                declarations.writeDeclaration(ns.prefix, ns.uri)
                entries.append(
                    Entry(
                        binding: Binding(prefix: ns.prefix.map(position) ?? Scope.none, uri: position(ns.uri)),
                        declarationStart: start, declarationEnd: declarations.out.count))
            }
            self.entries = entries
            self.strings = strings
            lengths = strings.map(\.utf8.count)
            self.declarations = declarations.finish()
        }

        /// Entry `index`: its namespace with its prefix.
        public subscript(index: Int) -> Namespace {
            let entry = entries[index].binding
            return Namespace(
                uri: strings[Int(entry.uri)], prefix: entry.prefix == Scope.none ? nil : strings[Int(entry.prefix)],
                uriID: entry.uri, prefixID: entry.prefix, owner: identity, entry: index)
        }
    }

    /// One of a codec's ``Namespaces`` with its prefix, and their positions in a writer made
    /// with those namespaces.
    ///
    /// A class, as ``Name``: passed as one reference, not copied (56 bytes) at each use.
    public final class Namespace: Sendable {
        public let uri: String
        public let prefix: String?
        let uriID: Int32
        let prefixID: Int32
        /// The ``Namespaces`` it was taken from: the positions are theirs.
        let owner: Int
        /// Its entry in them, whose declaration they spelled when made.
        let entry: Int

        init(uri: String, prefix: String?, uriID: Int32, prefixID: Int32, owner: Int, entry: Int) {
            self.uri = uri
            self.prefix = prefix
            self.uriID = uriID
            self.prefixID = prefixID
            self.owner = owner
            self.entry = entry
        }
    }

    /// An element name of a codec's, made once in one of its ``Namespaces``, with its
    /// qualified name as the start and end tags spell it.
    ///
    /// A class: a name is passed as one reference, where the value (two strings, a namespace
    /// and an array, 72 bytes) was copied out of its `static let` onto the stack at every
    /// element a codec writes, code of its own at each of them.
    public final class Name: Sendable {
        public let namespace: Namespace
        public let local: String
        /// The UTF-8 of `prefix:local`, or of `local` without a prefix: copied into the output
        /// as they are (a string lent its bytes through a call, and was retained for it).
        let qualified: [UInt8]

        public init(_ local: String, in namespace: Namespace) {
            self.namespace = namespace
            self.local = local
            qualified = Array((namespace.prefix.map { "\($0):\(local)" } ?? local).utf8)
        }
    }

    // MARK: Elements

    /// Opens an element and writes its start tag up to the attributes.
    ///
    /// `prefix` is a hint: one that cannot be declared is dropped, the XML
    /// namespace always uses `xml`, and no namespace uses no prefix. Each of
    /// `declarations` (the source's, which QName-valued content may rely on)
    /// is written unless it would rebind the element's own prefix or is not
    /// declarable; then the element's own binding when it is not in force.
    public mutating func startElement(
        _ namespace: String, _ local: String, prefix: String?,
        declarations: [(prefix: String?, uri: String)] = [], indentsChildren: Bool = true
    ) {
        beginChild(element: true)
        let saved = scope.bindings.count
        // The usual element: in a namespace whose binding to `prefix` is
        // already in force (a child in its parent's namespace), with nothing
        // to declare. The steps below would keep the prefix (a prefix is only
        // ever bound where it may be declared, so the test is for the one
        // binding that can break that: `ns` made up for an attribute in the
        // xmlns namespace), declare nothing and write the same start tag.
        // The bound URI is compared as a string (mostly the very string
        // passed, which compares at once), the namespace not looked up.
        if declarations.isEmpty, !namespace.isEmpty, let bound = scope.index(of: scope.intern(prefix)),
            scope.holds(namespace, at: scope.bindings[bound].uri),
            prefix == nil || !Self.same(namespace, Self.xmlnsNamespace)
        {
            out.append(0x3C)  // <
            let nameOffset = out.count
            appendQName(prefix, local)
            pushFrame(
                nameOffset: nameOffset, nameLength: out.count - nameOffset, savedBindings: saved,
                indentsChildren: indentsChildren)
            return
        }
        let namespaceID = scope.intern(namespace)
        let isXMLNamespace = namespaceID == Scope.xmlNamespace
        var elementPrefix = prefix.flatMap { Self.canDeclare($0, namespace) ? $0 : nil }
        if isXMLNamespace {
            elementPrefix = "xml"
        } else if namespaceID == Scope.empty {
            elementPrefix = nil
        }
        out.append(0x3C)  // <
        let nameOffset = out.count
        appendQName(elementPrefix, local)
        let nameLength = out.count - nameOffset
        // Each new binding is written as it is made, from the values at hand
        // (not read back from the scope), in the order it is bound.
        for d in declarations where !Self.same(d.prefix, elementPrefix) || Self.same(d.uri, namespace) {
            if d.uri.isEmpty && d.prefix != nil { continue }
            if let p = d.prefix, !Self.canDeclare(p, d.uri) { continue }
            if d.prefix == nil && (Self.same(d.uri, Self.xmlNamespace) || Self.same(d.uri, Self.xmlnsNamespace)) {
                continue
            }
            if scope.bind(scope.intern(d.prefix), scope.intern(d.uri)) { writeDeclaration(d.prefix, d.uri) }
        }
        if !isXMLNamespace {  // else predeclared
            let elementPrefixID = scope.intern(elementPrefix)
            if scope.bind(elementPrefixID, namespaceID) { writeDeclaration(elementPrefixID, namespaceID) }
        }
        pushFrame(
            nameOffset: nameOffset, nameLength: nameLength, savedBindings: saved, indentsChildren: indentsChildren)
    }

    /// Opens an element named by a codec's ``Name`` and writes its start tag up to the
    /// attributes: the bytes ``startElement(_:_:prefix:declarations:indentsChildren:)`` writes
    /// for its namespace, local name and prefix, with `declaring` (bit i: entry i of the
    /// writer's ``Namespaces``, in their order; none for a writer made without them) as the
    /// declarations. The name's binding is
    /// found by positions, and its qualified name was spelled when the name was made.
    public mutating func startElement(_ name: Name, declaring: UInt64 = 0, indentsChildren: Bool = true) {
        name.qualified.withUnsafeBufferPointer { qualified in
            open(
                name.namespace, name.local, qualified: qualified, declaring: declaring, indentsChildren: indentsChildren
            )
        }
    }

    /// Opens the element `local` in a codec's ``Namespace`` (a name known only when writing,
    /// such as a token's): ``startElement(_:declaring:indentsChildren:)`` for that name.
    public mutating func startElement(_ local: String, in namespace: Namespace, indentsChildren: Bool = true) {
        open(namespace, local, qualified: nil, declaring: 0, indentsChildren: indentsChildren)
    }

    /// Opens an element in `namespace`, its qualified name `qualified` when spelled already.
    /// Inlined into both callers, so that `qualified` is not wrapped in an optional.
    @inline(__always)
    private mutating func open(
        _ namespace: Namespace, _ local: String, qualified: UnsafeBufferPointer<UInt8>?, declaring: UInt64,
        indentsChildren: Bool
    ) {
        // A namespace from other ``Namespaces`` than the writer's: by its strings.
        guard namespace.owner == scope.namespaces.identity else {
            var declarations: [(prefix: String?, uri: String)] = []
            for i in scope.entries.indices where declaring & (1 << UInt64(i)) != 0 {
                let entry = scope.entries[i].binding
                declarations.append(
                    (entry.prefix == Scope.none ? nil : scope.string(entry.prefix), scope.string(entry.uri)))
            }
            return startElement(
                namespace.uri, local, prefix: namespace.prefix, declarations: declarations,
                indentsChildren: indentsChildren)
        }
        beginChild(element: true)
        let saved = scope.bindings.count
        // `<` and the name with one capacity check (the usual names: spelled already, or in
        // a default namespace).
        let nameOffset = out.count &+ 1
        if let qualified {
            out.append(0x3C, qualified)
        } else if let prefix = namespace.prefix {
            out.append(0x3C)  // <
            appendQName(prefix, local)
        } else {
            out.append(0x3C, local)
        }
        let nameLength = out.count - nameOffset
        // A ``Namespaces`` entry is declarable (checked when made), so the steps of the
        // general path keep the prefix and skip no declaration for that reason.
        if declaring != 0 {
            for i in scope.entries.indices where declaring & (1 << UInt64(i)) != 0 {
                let binding = scope.entries[i].binding
                guard binding.prefix != namespace.prefixID || binding.uri == namespace.uriID else { continue }
                if scope.bind(binding.prefix, binding.uri) { writeDeclaration(entry: i) }
            }
        }
        if scope.bind(namespace.prefixID, namespace.uriID) { writeDeclaration(entry: namespace.entry) }
        pushFrame(
            nameOffset: nameOffset, nameLength: nameLength, savedBindings: saved, indentsChildren: indentsChildren)
    }

    @inline(__always)
    private mutating func pushFrame(nameOffset: Int, nameLength: Int, savedBindings: Int, indentsChildren: Bool) {
        frames.append(
            Frame(
                nameOffset: nameOffset, nameLength: nameLength, savedBindings: savedBindings,
                indentsChildren: indentsChildren && indentation.isOn))
        startTagOpen = true
    }

    /// Writes an attribute in no namespace.
    public mutating func attribute(_ local: String, _ value: String) {
        guard startTagOpen else { return }
        out.appendAttributeStart(local)
        escape(value, attribute: true)
        out.append(0x22)
    }

    /// Writes an attribute in no namespace when `value` is not nil.
    public mutating func attribute(_ local: String, _ value: String?) {
        if let value { attribute(local, value) }
    }

    /// Writes an attribute in no namespace whose value is `value` in decimal
    /// (the bytes `attribute(local, String(value))` writes, without making the string).
    public mutating func attribute(_ local: String, decimal value: Int) {
        guard startTagOpen else { return }
        out.appendAttributeStart(local)
        out.appendDecimal(value)
        out.append(0x22)
    }

    /// Writes a namespaced attribute with a prefix bound to its namespace:
    /// the hint when it is bound to it, else one in force, else a new
    /// declaration (the hint, or `ns`, `ns1`, ...).
    public mutating func attribute(_ name: XMLName, _ value: String, prefix hint: String? = nil) {
        guard startTagOpen else { return }
        if name.namespace.isEmpty { return attribute(name.local, value) }
        let prefix = attributePrefix(name.namespace, hint: hint)
        out.append(0x20)
        appendQName(prefix, name.local)
        out.append(0x3D, 0x22)  // ="
        escape(value, attribute: true)
        out.append(0x22)
    }

    /// Writes `attributes` in their order, the declarations their namespaces need first (as a
    /// parsed element has them: a declaration written between two attributes reads the same but
    /// is not the same bytes).
    public mutating func attributes(_ attributes: [XMLAttribute]) {
        declarePrefixes(for: attributes)
        for a in attributes { attribute(a.name, a.value, prefix: a.prefix) }
    }

    /// Declares on the open start tag the prefixes that the namespaced `attributes` need and
    /// that are not in force, so that attributes written before them follow the declarations.
    public mutating func declarePrefixes(for attributes: [XMLAttribute]) {
        guard startTagOpen else { return }
        for a in attributes where !a.name.namespace.isEmpty {
            _ = attributePrefix(a.name.namespace, hint: a.prefix)
        }
    }

    /// Writes the attribute `local` in a codec's ``Namespace`` (`xsi:type`): with the
    /// namespace's prefix when that binding is in force, found by positions (where
    /// ``attribute(_:_:prefix:)`` looked up the URI and the prefix by their strings), else as
    /// that writes it.
    public mutating func attribute(_ local: String, in namespace: Namespace, _ value: String) {
        guard startTagOpen else { return }
        guard namespace.owner == scope.namespaces.identity, let prefix = namespace.prefix,
            scope.lookup(namespace.prefixID) == namespace.uriID
        else {
            return attribute(XMLName(namespace.uri, local), value, prefix: namespace.prefix)
        }
        out.append(0x20)
        appendQName(prefix, local)
        out.append(0x3D, 0x22)  // ="
        escape(value, attribute: true)
        out.append(0x22)
    }

    /// The prefix for an attribute in `namespace`, declared (written) here if none is in force.
    private mutating func attributePrefix(_ namespace: String, hint: String?) -> String? {
        let hint = hint.flatMap { Self.canDeclare($0, namespace) ? $0 : nil }
        let namespaceID = scope.intern(namespace)
        if let p = hint, scope.lookup(scope.intern(p)) == namespaceID { return p }
        if let found = scope.prefix(for: namespaceID) { return scope.string(found) }
        let stem = hint ?? "ns"
        var p = stem
        var n = 1
        while scope.lookup(scope.intern(p)) != nil {
            p = "\(stem)\(n)"
            n += 1
        }
        let prefixID = scope.intern(p)
        if scope.bind(prefixID, namespaceID) { writeDeclaration(prefixID, namespaceID) }
        return p
    }

    /// Writes character data (escaped). Empty text still closes the start
    /// tag, so the element is written `<a></a>`, not `<a/>`.
    public mutating func text(_ text: String) {
        guard !frames.isEmpty else { return }
        beginChild(element: false)
        escape(text, attribute: false)
    }

    /// Writes `value` in decimal as character data (the bytes `text(String(value))` writes).
    public mutating func text(decimal value: Int) {
        guard !frames.isEmpty else { return }
        beginChild(element: false)
        out.appendDecimal(value)
    }

    /// Closes the innermost element: `/>` when it has no content, else its end tag.
    public mutating func endElement() {
        guard let frame = frames.popLast() else { return }
        if startTagOpen {
            startTagOpen = false
            out.append(0x2F, 0x3E)  // />
        } else {
            if frame.indentsChildren { newline(frames.count) }
            out.appendEndTag(nameAt: frame.nameOffset, length: frame.nameLength)
        }
        scope.bindings.removeLast(scope.bindings.count - frame.savedBindings)
    }

    /// Writes a whole value tree as the next child (or the root).
    ///
    /// `verbatim` writes every element in it as mixed content (no indentation
    /// added inside), so extension content parses back exactly as it came.
    public mutating func element(_ element: XMLElement, verbatim: Bool = false) {
        let children = element.children
        let indents = !verbatim && !children.contains { if case .text = $0 { true } else { false } }
        let namespace = element.name.namespace
        startElement(
            namespace, element.name.local, prefix: element.prefix,
            declarations: element.namespaceDeclarations, indentsChildren: indents)
        attributes(element.attributes)
        for child in children {
            switch child {
            case .text(let t): text(t)
            case .element(let e): self.element(e, verbatim: verbatim)
            }
        }
        endElement()
    }

    /// Writes a recorded element and its content as the next child (or the
    /// root): the same bytes ``element(_:verbatim:)`` writes for the tree
    /// ``XMLCursor/subtree`` would build, without building it.
    public mutating func element(_ element: XMLCursor, verbatim: Bool = false) {
        if element.isText { return text(element.text) }
        let events = element.events
        let node = events.nodes[element.index]
        let end = Int(node.end)
        var indents = !verbatim
        if indents {
            var i = element.index + 1
            while i < end {
                let child = events.nodes[i]
                if child.isText {
                    indents = false
                    break
                }
                i = Int(child.end)
            }
        }
        let name = events.names[Int(node.name)]
        let declarations = events.declarationList(node.declarationStart, node.declarationCount)
        startElement(
            name.namespace, name.local, prefix: events.prefix(node.prefix), declarations: declarations,
            indentsChildren: indents)
        let attributes = events.attributes[Int(node.attributeStart)..<Int(node.attributeStart + node.attributeCount)]
        if attributes.contains(where: { !events.names[Int($0.name)].namespace.isEmpty }) {
            // Declarations for namespaced attributes come before any attribute, as the source order has them.
            var prefixes: [String?] = []
            prefixes.reserveCapacity(attributes.count)
            for a in attributes {
                let n = events.names[Int(a.name)]
                prefixes.append(n.namespace.isEmpty ? nil : attributePrefix(n.namespace, hint: events.prefix(a.prefix)))
            }
            for (i, a) in attributes.enumerated() {
                out.append(0x20)
                appendQName(prefixes[i], events.names[Int(a.name)].local)
                out.append(0x3D, 0x22)  // ="
                escape(events.string(a.valueStart, a.valueCount), attribute: true)
                out.append(0x22)
            }
        } else {
            for a in attributes {
                attribute(events.names[Int(a.name)].local, events.string(a.valueStart, a.valueCount))
            }
        }
        var i = element.index + 1
        while i < end {
            let child = events.nodes[i]
            if child.isText {
                text(events.string(child.textStart, child.textCount))
                i += 1
            } else {
                self.element(XMLCursor(events: events, index: i), verbatim: verbatim)
                i = Int(child.end)
            }
        }
        endElement()
    }

    // MARK: Bytes

    /// Closes the parent's start tag if it is open, and indents an element child.
    /// Inlined: every element and text begins with it.
    @inline(__always)
    private mutating func beginChild(element: Bool) {
        guard !frames.isEmpty else { return }
        if startTagOpen {
            startTagOpen = false
            out.append(0x3E)  // >
        }
        if element && frames[frames.count - 1].indentsChildren { newline(frames.count) }
    }

    /// The declaration of entry `i` of the writer's ``Namespaces``, as they spelled it when
    /// made (the bytes ``writeDeclaration(_:_:)`` writes for it, copied: the URI was escaped
    /// again at each declaration, a default namespace's at every category written).
    private mutating func writeDeclaration(entry i: Int) {
        let entry = scope.entries[i]
        scope.declarations.withUnsafeBufferPointer {
            out.append(UnsafeBufferPointer(rebasing: $0[entry.declarationStart..<entry.declarationEnd]))
        }
    }

    /// ` xmlns:prefix="uri"` (` xmlns="uri"` without a prefix), for a binding in the scope.
    private mutating func writeDeclaration(_ prefix: Int32, _ uri: Int32) {
        // One of the writer's ``Namespaces`` (an attribute's `xsi`): as they spelled it.
        for i in scope.entries.indices
        where scope.entries[i].binding.prefix == prefix && scope.entries[i].binding.uri == uri {
            return writeDeclaration(entry: i)
        }
        writeDeclaration(prefix == Scope.none ? nil : scope.string(prefix), scope.string(uri))
    }

    /// ` xmlns:prefix="uri"` (` xmlns="uri"` without a prefix).
    private mutating func writeDeclaration(_ prefix: String?, _ uri: String) {
        if let prefix {
            out.append(" xmlns:" as StaticString)
            out.append(prefix)
            out.append(0x3D, 0x22)  // ="
        } else {
            out.append(#" xmlns=""# as StaticString)
        }
        escape(uri, attribute: true)
        out.append(0x22)
    }

    @inline(__always)
    private mutating func newline(_ depth: Int) {
        switch indentation {
        case .none:
            return
        case .twoSpaces:
            let spaces = UnsafeBufferPointer(start: Self.spaces.utf8Start, count: Self.spaces.utf8CodeUnitCount)
            newline(depth, unit: UnsafeBufferPointer(rebasing: spaces[..<2]), run: spaces)
        case .custom(let unit, let run):
            unit.withUnsafeBufferPointer { unit in
                run.withUnsafeBufferPointer { run in newline(depth, unit: unit, run: run) }
            }
        }
    }

    /// A line break and `depth` copies of `unit`: one copy of a prefix of `run` (`unit`
    /// repeated) when it is long enough, else unit by unit.
    @inline(__always)
    private mutating func newline(_ depth: Int, unit: UnsafeBufferPointer<UInt8>, run: UnsafeBufferPointer<UInt8>) {
        let width = unit.count &* depth
        if width <= run.count {
            out.appendLine(run.baseAddress, width: width)
        } else {
            out.append(0x0A)
            for _ in 0..<depth { out.append(unit) }
        }
    }

    private mutating func appendQName(_ prefix: String?, _ local: String) {
        if let prefix {
            out.append(prefix)
            out.append(0x3A)
        }
        out.append(local)
    }

    /// XML 1.0 §2.4 (`&`, `<`, `>`), §3.3.3 (attribute values: `"`, TAB, LF
    /// and CR as references so that normalization gives them back), CR in
    /// text as a reference (§2.11 would turn it into LF).
    @inline(__always)
    private mutating func escape(_ s: String, attribute: Bool) {
        s.withUTF8Bytes { escape(bytes: $0, attribute: attribute) }
    }

    private mutating func escape(bytes: UnsafeBufferPointer<UInt8>, attribute: Bool) {
        let mask = attribute ? Self.attributeEscapes : Self.textEscapes
        do {
            // Most text needs no escaping: copy runs of plain bytes at once.
            // Every byte that may need a replacement is below 0x40, so one
            // shift and test of `mask` tells whether to look closer.
            guard let base = bytes.baseAddress else { return }
            let count = bytes.count
            // Four to seven bytes (short names, values and texts, such as "true"): two
            // overlapping four-byte loads tested as one word, instead of a byte at a time below.
            if count >= 4 && count < 8 {
                let head = UInt64(UnsafeRawPointer(base).loadUnaligned(as: UInt32.self))
                let tail = UInt64(UnsafeRawPointer(base + (count &- 4)).loadUnaligned(as: UInt32.self))
                if !Self.mayNeedEscape(head | tail << 32) {
                    out.append(bytes)
                    return
                }
            }
            var runStart = 0
            var i = 0
            var tailLooked = false
            while i < count {
                // Sixteen bytes at a time, then eight, while none of them can need a replacement.
                if i &+ 16 <= count {
                    let first = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
                    let second = UnsafeRawPointer(base + i).loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                    if !Self.mayNeedEscape(first, second) {
                        i &+= 16
                        continue
                    }
                }
                if i &+ 8 <= count {
                    let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
                    if !Self.mayNeedEscape(word) {
                        i &+= 8
                        continue
                    }
                } else if !tailLooked {
                    // Fewer than eight left: once, the last eight bytes of the value
                    // (overlapping bytes already looked at). None of them needing a
                    // replacement means none of the rest does.
                    tailLooked = true
                    if count >= 8,
                        !Self.mayNeedEscape(UnsafeRawPointer(base + count - 8).loadUnaligned(as: UInt64.self))
                    {
                        break
                    }
                }
                let byte = base[i]
                guard byte < 0x40, mask & (1 << UInt64(byte)) != 0 else {
                    i += 1
                    continue
                }
                let replacement: StaticString
                switch byte {
                case 0x26: replacement = "&amp;"
                case 0x3C: replacement = "&lt;"
                case 0x3E: replacement = "&gt;"
                case 0x22: replacement = "&quot;"
                case 0x09: replacement = "&#9;"
                case 0x0A: replacement = "&#10;"
                case 0x0D: replacement = "&#13;"
                default:
                    // XML 1.0 §2.2 admits no other C0 control, not even as a reference: U+FFFD stands in.
                    replacement = "\u{FFFD}"
                }
                out.append(UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
                out.append(replacement)
                i += 1
                runStart = i
            }
            out.append(UnsafeBufferPointer(rebasing: bytes[runStart..<count]))
        }
    }

    /// Whether any of the eight bytes in `word` may need a replacement: one
    /// below 0x20, or `"`, `&`, `<`, `>`. Exact for "none" (the word-at-a-time
    /// zero-byte test: `(x - 0x01…) & ~x & 0x80…` is non-zero iff some byte
    /// of x is zero, and likewise "below n" for n ≤ 0x80; every byte looked
    /// for is below 0x80, so `~word` stands in for each `~x`). Two pairs that
    /// differ in one bit are tested at once: `"` (0x22) and `&` (0x26) as
    /// `word | 0x04…` equal to 0x26, `<` (0x3C) and `>` (0x3E) as `word | 0x02…`
    /// equal to 0x3E. A word with `"` in text, or TAB or LF, is then looked
    /// at byte by byte, which finds nothing to replace in it.
    @inline(__always)
    private static func mayNeedEscape(_ word: UInt64) -> Bool {
        candidates(word) != 0
    }

    /// Whether any of the sixteen bytes in `first` and `second` may need a
    /// replacement: both words tested as ``mayNeedEscape(_:)`` does, with one branch.
    @inline(__always)
    private static func mayNeedEscape(_ first: UInt64, _ second: UInt64) -> Bool {
        candidates(first) | candidates(second) != 0
    }

    /// The high bit of each byte of `word` that may need a replacement set (see ``mayNeedEscape(_:)``).
    @inline(__always)
    private static func candidates(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quoteOrAmpersand = (word | ones &* 0x04) ^ (ones &* 0x26)
        let angleBracket = (word | ones &* 0x02) ^ (ones &* 0x3E)
        let found = (word &- ones &* 0x20) | (quoteOrAmpersand &- ones) | (angleBracket &- ones)
        return found & ~word & highs
    }

    /// Bit b set: byte b is replaced in character data (`&`, `<`, `>`, CR, and C0 controls but TAB and LF).
    /// Computed (constant-folded) rather than stored, so reading it costs no lazy-initialization check.
    private static var textEscapes: UInt64 {
        (0xFFFF_FFFF & ~(1 << 0x09 | 1 << 0x0A)) | 1 << 0x26 | 1 << 0x3C | 1 << 0x3E
    }

    /// Bit b set: byte b is replaced in an attribute value (as in text, plus `"`, TAB and LF).
    private static var attributeEscapes: UInt64 { textEscapes | 1 << 0x22 | 1 << 0x09 | 1 << 0x0A }
}
