internal import CLibXML2
internal import CXMLRecorder

/// Limits on what a reused libxml2 parser context may keep between parses.
///
/// A context's dictionary (libxml2's string table of element and attribute
/// names, prefixes and namespace URIs) and the bridge's name tables beside it
/// grow with every distinct name parsed; a peer sending ever new names would
/// grow them without end. A context past either bound is freed after its
/// parse and a fresh one created for the next.
struct XMLParserPoolLimits: Sendable, Hashable {
    /// Most contexts kept idle for reuse (default 4: one per thread parsing at once on a small host).
    var maxIdleContexts: Int = 4
    /// Largest dictionary (distinct strings) a context may carry into its next parse (default 2,048;
    /// a presence document uses well under 100).
    var maxDictionaryEntries: Int = 2_048
    /// Most parses one context serves before it is replaced (default 10,000).
    var maxUses: Int = 10_000
}

/// Counters of the context pool, for tests and diagnostics.
struct XMLParserPoolStatistics: Sendable, Hashable {
    /// Contexts created since the process started.
    var created: Int
    /// Parses that reused an idle context.
    var reused: Int
    /// Contexts freed instead of kept: after a failed parse, past a bound, or with the pool full.
    var discarded: Int
    /// Contexts idle in the pool now.
    var idle: Int
}

/// A libxml2 parser context kept between parses, with the names it has
/// already converted.
///
/// Creating a context (`xmlCreateMemoryParserCtxt`) allocates a dictionary
/// with its hash table, input buffers and the node, name, space and namespace
/// stacks, and `xmlFreeParserCtxt` frees them all again: for a presence body
/// of a few kilobytes that is a large part of the parse. A reused context is
/// reset by `xmlCtxtReset` (as `xmlCtxtReadMemory` does), which keeps the dictionary:
/// names seen before keep their addresses, so the sink's table (keyed by those
/// addresses) turns them into the bridge's strings without converting or
/// allocating anything.
///
/// Only a context whose previous parse succeeded, and left no namespace
/// binding, open element or document behind, is reused: a parse stopped
/// half-way (an error, a refused DOCTYPE, a limit) leaves state that
/// libxml2 2.9's `xmlCtxtReset` is not documented to clear (its namespace
/// stack is not among what it resets), so such a context is freed.
final class XMLParserContext: @unchecked Sendable {
    let ctxt: xmlParserCtxtPtr
    /// The dictionary the interned names' addresses belong to.
    let dict: xmlDictPtr?
    /// Parses served so far. Only the parse holding the context (taken out of
    /// its pool) touches it, so no dynamic exclusivity check is made.
    @exclusivity(unchecked) var uses = 0
    /// The sink of this context's parses, in memory of its own so that it
    /// stays in place: its names, prefixes and namespace URIs by dictionary
    /// address, and its recorder, emptied for each parse.
    let sink: UnsafeMutablePointer<EventSink>

    /// The input buffer of the context's last parse, taken back from its input stream
    /// (``keepInputBuffer(documentBytes:)``) for the next parse to copy its document into.
    @exclusivity(unchecked) private var spareInput: xmlParserInputBufferPtr?

    /// Largest document whose input buffer is kept for the next parse (libxml2's buffer holds
    /// the document and at most doubles past it, so a context keeps at most about twice this).
    static let maxKeptInputBytes = 64 << 10

    private init(ctxt: xmlParserCtxtPtr) {
        self.ctxt = ctxt
        self.dict = ctxt.pointee.dict
        sink = .allocate(capacity: 1)
        sink.initialize(to: EventSink(context: ctxt))
        sink.pointee.state.pointee.owner = UnsafeMutableRawPointer(sink)
    }

    /// A new context with the bridge's SAX2 handler in place of the tree builder.
    static func make(handler: xmlSAXHandler) -> XMLParserContext? {
        guard let ctxt = xmlNewParserCtxt() else { return nil }
        guard let sax = ctxt.pointee.sax else {
            xmlFreeParserCtxt(ctxt)
            return nil
        }
        sax.pointee = handler
        // Set once: the options only set fields of the context that xmlCtxtReset keeps (and
        // setting them again each parse cost about 75 instructions and a dozen cache lines).
        // No XML_PARSE_NOENT (no entity substitution), no DTDLOAD/DTDATTR/DTDVALID, no HUGE
        // (libxml2's own limits stay), no network.
        xmlCtxtUseOptions(ctxt, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOWARNING.rawValue))
        return XMLParserContext(ctxt: ctxt)
    }

    /// An input buffer holding a copy of `document`, as `xmlParserInputBufferCreateMem` makes
    /// one, but without a read callback (see `XMLParser.run`): the last parse's buffer, emptied
    /// and refilled, when the context kept one. Making a buffer costs three allocations, one of
    /// them the size of the document and so outside malloc's per-thread cache (a slow path that
    /// first consolidates every small chunk freed since), and freeing it three more.
    func inputBuffer(holding document: UnsafeRawBufferPointer) -> xmlParserInputBufferPtr? {
        let bytes = document.baseAddress?.assumingMemoryBound(to: CChar.self)
        guard let input = spareInput else {
            let made = xmlParserInputBufferCreateMem(bytes, Int32(document.count), XML_CHAR_ENCODING_NONE)
            made?.pointee.readcallback = nil
            return made
        }
        spareInput = nil
        // Kept only after a clean parse of UTF-8 (no encoder, no raw buffer); the error a
        // read past the end left is cleared, as a new buffer has none.
        input.pointee.error = 0
        input.pointee.rawconsumed = 0
        input.pointee.compressed = -1
        _ = xmlBufShrink(input.pointee.buffer, xmlBufUse(input.pointee.buffer))
        guard xmlParserInputBufferPush(input, Int32(document.count), bytes) == Int32(document.count) else {
            xmlFreeParserInputBuffer(input)
            return nil
        }
        return input
    }

    /// After a successful parse of UTF-8 input made by ``inputBuffer(holding:)``: its buffer is
    /// taken from the input stream (which the next reset frees without it) and kept, unless
    /// the document was larger than ``maxKeptInputBytes`` or libxml2 changed the buffer.
    func keepInputBuffer(documentBytes: Int) {
        guard documentBytes <= Self.maxKeptInputBytes, let stream = ctxt.pointee.input, ctxt.pointee.inputNr == 1,
            let input = stream.pointee.buf, input.pointee.encoder == nil, input.pointee.raw == nil,
            input.pointee.buffer != nil, input.pointee.readcallback == nil, input.pointee.closecallback == nil
        else { return }
        stream.pointee.buf = nil
        if let old = spareInput { xmlFreeParserInputBuffer(old) }
        spareInput = input
    }

    deinit {
        if let spareInput { xmlFreeParserInputBuffer(spareInput) }
        sink.deinitialize(count: 1)
        sink.deallocate()
        if let doc = ctxt.pointee.myDoc {
            xmlFreeDoc(doc)
            ctxt.pointee.myDoc = nil
        }
        xmlFreeParserCtxt(ctxt)
    }

    /// Entries in the context's dictionary.
    var dictionarySize: Int {
        guard let dict = ctxt.pointee.dict else { return 0 }
        return Int(xmlDictSize(dict))
    }

    /// True when the context may serve another parse: the last one ended
    /// cleanly (no namespace binding, element or input left over), the
    /// dictionary is the one the table was built on, and no bound is passed.
    func reusable(after succeeded: Bool, limits: XMLParserPoolLimits) -> Bool {
        guard succeeded, !sink.pointee.saturated else { return false }
        let c = ctxt
        return c.pointee.nsNr == 0 && c.pointee.nameNr == 0 && c.pointee.nodeNr == 0 && c.pointee.myDoc == nil
            && c.pointee.dict == dict
            && uses < limits.maxUses && dictionarySize <= limits.maxDictionaryEntries
    }
}

/// Idle parser contexts: a short lock-protected stack. ``shared`` serves
/// every parse (the gateway parses on several event-loop threads at once;
/// each parse takes a context out and puts it back, so no two parses ever
/// share one); tests make their own to watch the bounds at work.
final class XMLParserContextPool: @unchecked Sendable {
    static let shared = XMLParserContextPool(limits: XMLParserPoolLimits())

    let limits: XMLParserPoolLimits
    private let lock = Lock()
    // Read and written under `lock` only, so no dynamic exclusivity check is made.
    @exclusivity(unchecked) private var idle: [XMLParserContext] = []
    @exclusivity(unchecked) private var counters = XMLParserPoolStatistics(created: 0, reused: 0, discarded: 0, idle: 0)

    init(limits: XMLParserPoolLimits) {
        self.limits = limits
    }

    var statistics: XMLParserPoolStatistics {
        lock.lock()
        defer { lock.unlock() }
        var s = counters
        s.idle = idle.count
        return s
    }

    /// An idle context, or a new one.
    func take(handler: xmlSAXHandler) -> XMLParserContext? {
        lock.lock()
        if let context = idle.popLast() {
            counters.reused += 1
            lock.unlock()
            return context
        }
        counters.created += 1
        lock.unlock()
        return XMLParserContext.make(handler: handler)
    }

    /// Puts `context` back after a parse, or frees it when the parse failed,
    /// a bound is passed, or the pool is full. The caller's reference moves
    /// into the pool (no reference count).
    func give(_ context: consuming XMLParserContext, succeeded: Bool) {
        let keep = context.reusable(after: succeeded, limits: limits)
        lock.lock()
        if keep, idle.count < limits.maxIdleContexts {
            idle.append(context)
            lock.unlock()
        } else {
            counters.discarded += 1
            lock.unlock()
            // The last reference goes when this returns, outside the lock:
            // deinit frees the libxml2 context.
        }
    }
}

/// The names, prefixes and namespace URIs one parser context has converted.
///
/// The sink's C state (`pg_sink.names`, a CXMLRecorder `pg_intern`) maps
/// each one's address in the context's dictionary, which gives each distinct
/// string one address for the dictionary's whole life, to its index here: a
/// (local name, namespace URI) pair to its entry in ``names``, a prefix to
/// ``prefixes``, a URI to ``uris``. The tables are handed to each parse's
/// ``XMLEvents`` as one ``XMLNameTables``, the same object while no name is
/// added (one reference count), so a name met before costs nothing. The C table starts with
/// ``initialSlots`` slots (room for the few hundred keys of a context serving
/// several kinds of presence document at a low load, so that nearly every
/// lookup ends at its first slot) and doubles up to ``maxSlots``; past that
/// further names are still recorded but not cached, and the context is marked
/// saturated so that it is not reused.
struct InternTable {
    static let initialSlots = Int(PG_INTERN_INITIAL_SLOTS)
    static let maxSlots = Int(PG_INTERN_MAX_SLOTS)

    private(set) var names: [XMLName] = [XMLName("", "")]
    private(set) var prefixes: [String] = []
    private(set) var uris: [String] = []
    /// The tables as the last recording was handed them, while nothing was added since.
    private var handedOver: XMLNameTables?

    /// Adds a name, prefix or URI; its index.
    mutating func add(name: XMLName) -> Int32 {
        // Dropped first, so that the arrays are unique again unless a recording holds them.
        handedOver = nil
        names.append(name)
        return Int32(names.count - 1)
    }

    mutating func add(prefix: String) -> Int32 {
        handedOver = nil
        prefixes.append(prefix)
        return Int32(prefixes.count - 1)
    }

    mutating func add(uri: String) -> Int32 {
        handedOver = nil
        uris.append(uri)
        return Int32(uris.count - 1)
    }

    /// The tables for a recording: the object the last recording got, while
    /// no name, prefix or URI was added since.
    mutating func tables() -> XMLNameTables {
        if let handedOver { return handedOver }
        let tables = XMLNameTables(names: names, prefixes: prefixes, uris: uris)
        handedOver = tables
        return tables
    }
}
