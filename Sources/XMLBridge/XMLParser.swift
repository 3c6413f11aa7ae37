internal import CLibXML2
internal import CXMLRecorder

/// Limits applied to every parse. The defaults suit presence bodies, which
/// are a few kilobytes: a SIP message is limited to far less than 2 MiB.
public struct XMLLimits: Sendable, Hashable {
    /// Largest accepted input, in bytes (default 2 MiB).
    public var maxBytes: Int = 2 << 20
    /// Deepest accepted element nesting (default 64; presence documents use < 12).
    public var maxDepth: Int = 64
    /// Most elements accepted in one document (default 50,000).
    public var maxElements: Int = 50_000

    public init(maxBytes: Int = 2 << 20, maxDepth: Int = 64, maxElements: Int = 50_000) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
        self.maxElements = maxElements
    }
}

/// Safe, namespace-aware XML parsing on libxml2's SAX2 interface.
///
/// Safe by default: a document type declaration is refused outright (so no
/// DTD is loaded and no entity other than the five predefined ones and
/// character references exists: no XXE, no entity expansion), nothing is
/// fetched from a network, and size, depth and element-count limits apply.
/// libxml2 builds no tree of its own: its SAX2 events are recorded into an
/// ``XMLEvents`` (flat arrays), which typed decoders read with an
/// ``XMLCursor``; ``parse(_:limits:vocabulary:)`` builds a value tree from them.
///
/// Parser contexts are reused: each parse takes one from a small shared pool
/// (at most 4 idle) and returns it, keeping its dictionary and the names it
/// has converted. A context is freed instead after a parse that failed, once
/// its dictionary holds more than 2,048 strings, after 10,000 parses, or when
/// its name table is full; none of this changes a result.
public enum XMLParser {
    /// Parses a complete document and returns its root element.
    ///
    /// Namespace URIs found in `vocabulary` are handed out as the vocabulary's
    /// own `String` instances, so that comparing them with the same constants
    /// later takes the identity fast path instead of comparing bytes.
    public static func parse(
        _ bytes: some Collection<UInt8>, limits: XMLLimits = XMLLimits(), vocabulary: XMLVocabulary = XMLVocabulary()
    ) throws(XMLError) -> XMLElement {
        try events(bytes, limits: limits, vocabulary: vocabulary).root.subtree
    }

    public static func parse(
        _ string: String, limits: XMLLimits = XMLLimits(), vocabulary: XMLVocabulary = XMLVocabulary()
    ) throws(XMLError) -> XMLElement {
        try parse(Array(string.utf8), limits: limits, vocabulary: vocabulary)
    }

    /// Parses a complete document into its recorded SAX2 events, for the
    /// decoders that read with an ``XMLCursor`` instead of a tree. Same rules,
    /// limits and errors as ``parse(_:limits:vocabulary:)``.
    public static func events(
        _ bytes: some Collection<UInt8>, limits: XMLLimits = XMLLimits(), vocabulary: XMLVocabulary = XMLVocabulary()
    ) throws(XMLError) -> XMLEvents {
        try events(bytes, limits: limits, vocabulary: vocabulary, pool: .shared)
    }

    /// ``events(_:limits:vocabulary:)`` for an array, the decoders' input: its bytes are
    /// parsed in place, without the generic path's calls through `Collection`'s witness
    /// table (this module's code is not specialized for its callers).
    public static func events(
        _ bytes: [UInt8], limits: XMLLimits = XMLLimits(), vocabulary: XMLVocabulary = XMLVocabulary()
    ) throws(XMLError) -> XMLEvents {
        try bytes.withUnsafeBytes {
            parseBuffer(
                $0, limits: limits, vocabulary: vocabulary, decodeAmpersands: attributesKeepAmpersandReferences,
                pool: .shared)
        }.get()
    }

    /// ``events(_:limits:vocabulary:)`` with the parser contexts of `pool`.
    static func events(
        _ bytes: some Collection<UInt8>, limits: XMLLimits, vocabulary: XMLVocabulary, pool: XMLParserContextPool
    ) throws(XMLError) -> XMLEvents {
        let decode = attributesKeepAmpersandReferences
        let result: Result<XMLEvents, XMLError> =
            bytes.withContiguousStorageIfAvailable { buffer in
                parseBuffer(
                    UnsafeRawBufferPointer(buffer), limits: limits, vocabulary: vocabulary, decodeAmpersands: decode,
                    pool: pool)
            }
            ?? Array(bytes).withUnsafeBytes {
                parseBuffer($0, limits: limits, vocabulary: vocabulary, decodeAmpersands: decode, pool: pool)
            }
        return try result.get()
    }

    /// Whether libxml2 hands SAX2 attribute values over with each `&` still
    /// written as the reference `&#38;`.
    ///
    /// libxml2 2.9 does so whenever entity substitution is off (its own SAX2
    /// tree builder decodes them afterwards): `a="x&amp;y"` arrives as
    /// `x&#38;y`. Other versions may decode it themselves, so one probe parse
    /// decides, instead of a version check.
    private static let attributesKeepAmpersandReferences: Bool = {
        let probe = Array(#"<p a="&amp;"/>"#.utf8)
        // A pool of its own: the probe's context never serves a real parse.
        let result = probe.withUnsafeBytes {
            parseBuffer(
                $0, limits: XMLLimits(), vocabulary: XMLVocabulary(), decodeAmpersands: false,
                pool: XMLParserContextPool(limits: XMLParserPoolLimits(maxIdleContexts: 0)))
        }
        guard case .success(let events) = result else { return true }
        return events.root[attribute: "a"] == "&#38;"
    }()

    /// The SAX2 callbacks, set up once: the element and character events in
    /// C, the rest here. Each finds the ``EventSink``'s state through the
    /// parser's user data.
    nonisolated(unsafe) private static let handler: xmlSAXHandler = {
        var handler = xmlSAXHandler()
        handler.initialized = XML_SAX2_MAGIC
        handler.startElementNs = pg_sink_start
        handler.endElementNs = pg_sink_end
        handler.characters = pg_sink_characters
        handler.cdataBlock = pg_sink_characters
        // White space is character data like any other here. With the same callback for
        // both, libxml2 calls it at once instead of first testing each run of white space
        // for being ignorable (a scan that, without a tree or DTD, always answered no).
        handler.ignorableWhitespace = pg_sink_characters
        handler.internalSubset = { ctx, _, _, _ in
            EventSink.from(ctx).pointee.fail(.doctypeForbidden, "document type declarations (DTDs) are not accepted")
        }
        handler.externalSubset = { ctx, _, _, _ in
            EventSink.from(ctx).pointee.fail(.doctypeForbidden, "document type declarations (DTDs) are not accepted")
        }
        handler.entityDecl = { ctx, _, _, _, _, _ in
            EventSink.from(ctx).pointee.fail(.doctypeForbidden, "entity declarations are not accepted")
        }
        handler.serror = { ctx, error in
            guard let ctx, let error else { return }
            EventSink.from(ctx).pointee.libxmlError(error.pointee)
        }
        return handler
    }()

    private static func parseBuffer(
        _ buffer: UnsafeRawBufferPointer, limits: XMLLimits, vocabulary: XMLVocabulary, decodeAmpersands: Bool,
        pool: XMLParserContextPool
    ) -> Result<XMLEvents, XMLError> {
        guard buffer.count <= limits.maxBytes, buffer.count <= Int(Int32.max), buffer.count > 0,
            let base = buffer.baseAddress
        else { return .failure(refused(buffer.count, limits: limits)) }
        LibXML.initialize()

        // The input is complete, so a memory parser over the whole buffer (a
        // push parser would only add chunk bookkeeping), on a parser context
        // from the pool. A document libxml2 had to transcode (another
        // encoding than UTF-8) is parsed again with the input libxml2 builds
        // itself; see `run`.
        guard let context = pool.take(handler: handler) else { return .failure(noParser()) }
        let first = run(
            buffer, base, context, limits: limits, vocabulary: vocabulary, decodeAmpersands: decodeAmpersands,
            fixedInput: true)
        guard first.transcoded else {
            pool.give(context, succeeded: first.result.isSuccess)
            return first.result
        }
        pool.give(context, succeeded: false)
        guard let fresh = pool.take(handler: handler) else { return .failure(noParser()) }
        let second = run(
            buffer, base, fresh, limits: limits, vocabulary: vocabulary, decodeAmpersands: decodeAmpersands,
            fixedInput: false)
        pool.give(fresh, succeeded: second.result.isSuccess)
        return second.result
    }

    /// Why a document of `count` bytes is not parsed at all: too large, or empty. Out of line,
    /// as the other failures below: built in place, the messages spread the code every parse
    /// runs over more cache lines.
    @inline(never)
    private static func refused(_ count: Int, limits: XMLLimits) -> XMLError {
        if count > limits.maxBytes {
            return XMLError(.tooLarge, "document is \(count) bytes; the limit is \(limits.maxBytes)")
        }
        if count > Int(Int32.max) {
            return XMLError(.tooLarge, "document is \(count) bytes; libxml2 takes at most \(Int32.max)")
        }
        return XMLError(.notWellFormed, "document is empty", line: 1, column: 1)
    }

    @inline(never)
    private static func noParser() -> XMLError { XMLError(.notWellFormed, "libxml2 could not create a parser") }

    @inline(never)
    private static func noInput() -> (result: Result<XMLEvents, XMLError>, transcoded: Bool) {
        (.failure(XMLError(.notWellFormed, "libxml2 could not create a parser input")), false)
    }

    @inline(never)
    private static func notWellFormed(_ ctxt: xmlParserCtxtPtr) -> XMLError {
        XMLError(.notWellFormed, "document is not well-formed", line: Int(ctxt.pointee.input?.pointee.line ?? 0))
    }

    /// One parse of `buffer` on `context` (reset first, its dictionary,
    /// name tables and recorder kept), with our handler in place of libxml2's
    /// tree builder.
    ///
    /// With `fixedInput`, the input is marked as having nothing more to read
    /// (no read callback): libxml2 2.9 then answers its frequent "grow the
    /// input" checks at once instead of asking the buffer layer each time
    /// near the end of the document (newer libxml2 treats memory input so by
    /// itself). That holds for UTF-8, whose bytes libxml2 reads in place; a
    /// document it has to transcode (a BOM or `encoding` declaration for
    /// UTF-16, ISO-8859-1, ...) is converted as it grows, so `transcoded`
    /// tells the caller to parse again without `fixedInput`.
    private static func run(
        _ buffer: UnsafeRawBufferPointer, _ base: UnsafeRawPointer, _ context: XMLParserContext, limits: XMLLimits,
        vocabulary: XMLVocabulary, decodeAmpersands: Bool, fixedInput: Bool
    ) -> (result: Result<XMLEvents, XMLError>, transcoded: Bool) {
        context.uses += 1
        let ctxt = context.ctxt
        xmlCtxtReset(ctxt)
        let input: xmlParserInputBufferPtr
        if fixedInput {
            guard let reused = context.inputBuffer(holding: buffer) else { return noInput() }
            input = reused
        } else {
            guard
                let made = xmlParserInputBufferCreateMem(
                    base.assumingMemoryBound(to: CChar.self), Int32(buffer.count), XML_CHAR_ENCODING_NONE)
            else { return noInput() }
            input = made
        }
        guard let stream = xmlNewIOInputStream(ctxt, input, XML_CHAR_ENCODING_NONE) else {
            xmlFreeParserInputBuffer(input)
            return noInput()
        }
        guard inputPush(ctxt, stream) >= 0 else {
            xmlFreeInputStream(stream)
            return noInput()
        }
        // The parse options were set when the context was made (XMLParserContext.make):
        // xmlCtxtReset leaves them as they are.
        // The context's sink, with its name tables and recorder, stays where
        // it is; the callbacks reach it through the user data pointer (a
        // plain struct, so no dynamic exclusivity bookkeeping on every event).
        let sink = context.sink
        sink.pointee.begin(
            limits: limits, vocabulary: vocabulary, decodeAmpersands: decodeAmpersands, estimatedBytes: buffer.count)
        ctxt.pointee.userData = UnsafeMutableRawPointer(sink.pointee.state)
        xmlParseDocument(ctxt)
        ctxt.pointee.userData = nil
        // libxml2 may build a document of its own (for a DOCTYPE it met
        // before our handler stopped it); freeing it is the caller's job.
        if let doc = ctxt.pointee.myDoc {
            xmlFreeDoc(doc)
            ctxt.pointee.myDoc = nil
        }
        let result: Result<XMLEvents, XMLError>
        // Noted here rather than asked of `result`, which would copy (retain) the recording.
        var succeeded = false
        if let error = sink.pointee.error {
            result = .failure(error)
        } else if ctxt.pointee.wellFormed == 0 || !sink.pointee.complete {
            result = .failure(notWellFormed(ctxt))
        } else {
            result = .success(sink.pointee.finished())
            succeeded = true
        }
        sink.pointee.finish()
        let transcoded = fixedInput && ctxt.pointee.input?.pointee.buf?.pointee.encoder != nil
        if fixedInput && !transcoded && succeeded { context.keepInputBuffer(documentBytes: buffer.count) }
        return (result, transcoded)
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { true } else { false }
    }
}

/// Strings a parse hands out by identity: namespace URIs equal to one of
/// these come back as this very `String`, so later comparisons with the same
/// constant are a pointer compare. Any URI not listed is read as usual; the
/// vocabulary changes speed, never results.
public struct XMLVocabulary: Sendable {
    /// The namespace URIs, with their UTF-8 lengths for a quick first test,
    /// in one object, which also identifies this vocabulary (and its copies)
    /// to a reused parser context, whose cached URIs are one vocabulary's
    /// instances. One reference: passing a vocabulary to a parse retains and
    /// releases it once.
    final class Token: Sendable {
        static let empty = Token(namespaces: [])

        let namespaces: [(count: Int, uri: String)]

        init(namespaces: [(count: Int, uri: String)]) {
            self.namespaces = namespaces
        }
    }
    let token: Token

    public init(namespaces: [String] = []) {
        self.token = namespaces.isEmpty ? .empty : Token(namespaces: namespaces.map { ($0.utf8.count, $0) })
    }

    /// The listed string equal to the `count` bytes at `p`, if any.
    func match(_ p: UnsafePointer<xmlChar>, count: Int) -> String? {
        for entry in token.namespaces where entry.count == count {
            var uri = entry.uri
            let equal = uri.withUTF8 { bytes in
                for i in 0..<count where bytes[i] != p[i] { return false }
                return true
            }
            if equal { return entry.uri }
        }
        return nil
    }
}

/// Receives SAX2 events, applies the limits, and records the events.
///
/// Each ``XMLParserContext`` has one, which serves all its parses in place:
/// its recorder's runs and its name tables are kept from one parse to the
/// next (a reused context records without allocating or moving them), and
/// ``begin(limits:vocabulary:decodeAmpersands:estimatedBytes:)`` sets up the rest.
///
/// The start-tag, end-tag and character events, a few hundred per document,
/// are handled in C (CXMLRecorder's `pg_sink_start`, `pg_sink_end` and
/// `pg_sink_characters`, with ``state`` as the parse's user data): they check
/// the limits, find names, prefixes and URIs by dictionary address and record.
/// The sink converts what C meets for the first time (``addName(_:_:)``,
/// ``addPrefix(_:)``, ``addNamespace(_:)``), and makes the errors.
struct EventSink: ~Copyable {
    var limits = XMLLimits()
    /// The vocabulary whose URI instances ``table`` holds.
    var vocabulary = XMLVocabulary()
    let context: xmlParserCtxtPtr
    var recorder: XMLEventRecorder
    var error: XMLError?

    /// What the C callbacks read and update, in memory of its own: the
    /// recorder, the names by dictionary address, the limits and the parse's
    /// counts, and this sink (set by its context, which holds the sink in place).
    let state: UnsafeMutablePointer<pg_sink>

    /// Names, prefixes and URIs converted so far, kept by the parser context
    /// from one parse to the next.
    var table = InternTable()

    init(context: xmlParserCtxtPtr) {
        self.context = context
        recorder = XMLEventRecorder(estimatedBytes: 0)
        state = .allocate(capacity: 1)
        state.initialize(to: pg_sink())
        state.pointee.recorder = recorder.state
        state.pointee.context = UnsafeMutableRawPointer(context)
        state.pointee.addName = { owner, local, uri in EventSink.owner(owner).pointee.addName(local, uri) }
        state.pointee.addPrefix = { owner, prefix in EventSink.owner(owner).pointee.addPrefix(prefix.unsafelyUnwrapped)
        }
        state.pointee.addNamespace = { owner, uri in EventSink.owner(owner).pointee.addNamespace(uri) }
        state.pointee.fail = { owner, code in EventSink.owner(owner).pointee.limitPassed(code) }
    }

    deinit {
        pg_intern_clear(&state.pointee.names)
        state.deallocate()
    }

    /// Ready for a parse of about `estimatedBytes`: the recorder emptied (its
    /// memory kept), the count and state of the last parse cleared, and the
    /// name tables started afresh when they hold another vocabulary's URIs.
    mutating func begin(limits: XMLLimits, vocabulary: XMLVocabulary, decodeAmpersands: Bool, estimatedBytes: Int) {
        if vocabulary.token !== self.vocabulary.token {
            self.vocabulary = vocabulary
            table = InternTable()
            pg_intern_clear(&state.pointee.names)
        }
        self.limits = limits
        recorder.reset(estimatedBytes: estimatedBytes)
        if error != nil { error = nil }
        state.pointee.maxElements = limits.maxElements
        state.pointee.maxDepth = limits.maxDepth
        state.pointee.elementCount = 0
        state.pointee.decodeAmpersands = decodeAmpersands
        state.pointee.complete = false
        state.pointee.stopped = false
    }

    /// True once the root element has ended.
    var complete: Bool { state.pointee.complete }

    /// True when a name could not be remembered: the tables no longer
    /// describe the names by address alone, so the context is not reused.
    var saturated: Bool { state.pointee.names.saturated }

    /// After a parse: a recorder grown past what a context keeps
    /// (``XMLEventRecorder/maxKeptBytes``) gives its memory back.
    mutating func finish() {
        if recorder.allocatedBytes > XMLEventRecorder.maxKeptBytes {
            recorder = XMLEventRecorder(estimatedBytes: 0)
            state.pointee.recorder = recorder.state
        }
    }

    /// The recording, with the context's name, prefix and URI tables.
    mutating func finished() -> XMLEvents {
        recorder.finished(tables: table.tables())
    }

    /// The sink of a parse's user data (its ``state``).
    static func from(_ ctx: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<EventSink> {
        // The parser is always run with a sink's state as its user data.
        owner(ctx.unsafelyUnwrapped.assumingMemoryBound(to: pg_sink.self).pointee.owner)
    }

    private static func owner(_ owner: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<EventSink> {
        owner.unsafelyUnwrapped.assumingMemoryBound(to: EventSink.self)
    }

    mutating func fail(_ code: XMLError.Code, _ message: String) {
        guard error == nil else { return }
        let line = Int(xmlSAX2GetLineNumber(context))
        let column = Int(xmlSAX2GetColumnNumber(context))
        xmlStopParser(context)
        error = XMLError(code, message, line: line, column: column)
        state.pointee.stopped = true
    }

    /// A limit the C callbacks found passed (`PG_FAIL_...`).
    mutating func limitPassed(_ code: Int32) {
        if code == PG_FAIL_TOO_MANY_ELEMENTS {
            fail(.tooManyElements, "more than \(limits.maxElements) elements")
        } else {
            fail(.tooDeep, "elements nested deeper than \(limits.maxDepth)")
        }
    }

    mutating func libxmlError(_ e: xmlError) {
        guard error == nil, e.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
        var message = e.message.map { String(cString: $0) } ?? "parse error"
        while message.last == "\n" { message.removeLast() }
        error = XMLError(.notWellFormed, message, line: Int(e.line), column: Int(e.int2))
        state.pointee.stopped = true
    }

    /// Names, prefixes and namespace URIs come from the parser's dictionary,
    /// so each distinct one has one address for the dictionary's whole life,
    /// which a reused context carries from parse to parse. The sink's
    /// ``state`` maps (address, address or kind tag) to an index in
    /// ``table``'s names, prefixes and URIs: each distinct name is converted
    /// once per context, every further use is an integer.
    private static func name(_ p: UnsafePointer<xmlChar>) -> String { String(cString: p) }

    /// A namespace URI met for the first time in this context: the
    /// vocabulary's own instance when it lists the URI (a missing one reads as empty).
    mutating func addNamespace(_ p: UnsafePointer<xmlChar>?) -> Int32 {
        let uri =
            p.map { vocabulary.match($0, count: Int(xmlStrlen($0))) ?? Self.decodingAmpersands(String(cString: $0)) }
            ?? ""
        let id = table.add(uri: uri)
        pg_sink_remember_namespace(state, p, id)
        return id
    }

    /// `value` with each `&#38;` turned back into `&`. With entity substitution off, libxml2 2.9
    /// hands every & of an attribute value (from `&amp;` or `&#38;`) as `&#38;`, and a namespace
    /// declaration is an attribute: its URI is decoded as the C recorder decodes attribute values
    /// (`append_decoding_ampersands`), or it was written back as `&amp;#38;`, another URI
    /// (found by fuzzing the categories codec; Vectors/fuzz/categories).
    static func decodingAmpersands(_ value: String) -> String {
        guard value.utf8.contains(UInt8(ascii: "&")) else { return value }
        let bytes = Array(value.utf8)
        let reference = Array("&#38;".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "&"), i + 5 <= bytes.count, bytes[i..<(i + 5)].elementsEqual(reference) {
                out.append(UInt8(ascii: "&"))
                i += 5
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A (local name, URI) pair met for the first time in this context: converted and remembered.
    mutating func addName(_ local: UnsafePointer<xmlChar>?, _ uri: UnsafePointer<xmlChar>?) -> Int32 {
        let known = pg_sink_lookup_namespace(state, uri)
        let uriID = known >= 0 ? known : addNamespace(uri)
        let namespace = table.uris[Int(uriID)]
        let id = table.add(name: XMLName(namespace, local.map(Self.name) ?? ""))
        pg_sink_remember_name(state, local, uri, id)
        return id
    }

    /// A prefix met for the first time in this context: converted and remembered.
    mutating func addPrefix(_ prefix: UnsafePointer<xmlChar>) -> Int32 {
        let id = table.add(prefix: Self.name(prefix))
        pg_sink_remember_prefix(state, prefix, id)
        return id
    }
}

/// One-time libxml2 set-up shared by every entry point of this module.
enum LibXML {
    private static let once: Void = {
        xmlInitParser()
        pg_installLocalOnlyLoader()
    }()

    static func initialize() { once }

    /// The libxml2 version this module was compiled against, e.g. 20914.
    static var version: Int { Int(pg_libxmlVersion()) }
}
