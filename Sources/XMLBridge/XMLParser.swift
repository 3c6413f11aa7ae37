internal import CLibXML2

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
/// The result is a value tree, not a DOM: libxml2 builds no tree of its own.
public enum XMLParser {
    /// Parses a complete document and returns its root element.
    public static func parse(_ bytes: some Collection<UInt8>, limits: XMLLimits = XMLLimits()) throws(XMLError) -> XMLElement {
        let result: Result<XMLElement, XMLError> = bytes.withContiguousStorageIfAvailable { buffer in
            parseBuffer(UnsafeRawBufferPointer(buffer), limits: limits)
        } ?? Array(bytes).withUnsafeBytes { parseBuffer($0, limits: limits) }
        return try result.get()
    }

    public static func parse(_ string: String, limits: XMLLimits = XMLLimits()) throws(XMLError) -> XMLElement {
        try parse(Array(string.utf8), limits: limits)
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
        let result = probe.withUnsafeBytes { parseBuffer($0, limits: XMLLimits(), decodeAmpersands: false) }
        guard case .success(let element) = result else { return true }
        return element[attribute: "a"] == "&#38;"
    }()

    private static func parseBuffer(_ buffer: UnsafeRawBufferPointer, limits: XMLLimits) -> Result<XMLElement, XMLError> {
        parseBuffer(buffer, limits: limits, decodeAmpersands: attributesKeepAmpersandReferences)
    }

    private static func parseBuffer(
        _ buffer: UnsafeRawBufferPointer, limits: XMLLimits, decodeAmpersands: Bool
    ) -> Result<XMLElement, XMLError> {
        guard buffer.count <= limits.maxBytes else {
            return .failure(XMLError(.tooLarge, "document is \(buffer.count) bytes; the limit is \(limits.maxBytes)"))
        }
        guard buffer.count <= Int(Int32.max) else {
            return .failure(XMLError(.tooLarge, "document is \(buffer.count) bytes; libxml2 takes at most \(Int32.max)"))
        }
        guard buffer.count > 0, let base = buffer.baseAddress else {
            return .failure(XMLError(.notWellFormed, "document is empty", line: 1, column: 1))
        }
        LibXML.initialize()
        let builder = TreeBuilder(limits: limits, decodeAmpersands: decodeAmpersands)
        var handler = xmlSAXHandler()
        handler.initialized = XML_SAX2_MAGIC
        handler.startElementNs = { ctx, localname, prefix, uri, nbNamespaces, namespaces, nbAttributes, _, attributes in
            TreeBuilder.from(ctx).start(
                localname: localname, prefix: prefix, uri: uri,
                nbNamespaces: Int(nbNamespaces), namespaces: namespaces,
                nbAttributes: Int(nbAttributes), attributes: attributes)
        }
        handler.endElementNs = { ctx, _, _, _ in TreeBuilder.from(ctx).end() }
        handler.characters = { ctx, chars, len in TreeBuilder.from(ctx).characters(chars, Int(len)) }
        handler.cdataBlock = { ctx, chars, len in TreeBuilder.from(ctx).characters(chars, Int(len)) }
        handler.internalSubset = { ctx, _, _, _ in
            TreeBuilder.from(ctx).fail(.doctypeForbidden, "document type declarations (DTDs) are not accepted")
        }
        handler.externalSubset = { ctx, _, _, _ in
            TreeBuilder.from(ctx).fail(.doctypeForbidden, "document type declarations (DTDs) are not accepted")
        }
        handler.entityDecl = { ctx, _, _, _, _, _ in
            TreeBuilder.from(ctx).fail(.doctypeForbidden, "entity declarations are not accepted")
        }
        handler.serror = { ctx, error in
            guard let ctx, let error else { return }
            let builder = Unmanaged<TreeBuilder>.fromOpaque(ctx).takeUnretainedValue()
            builder.libxmlError(error.pointee)
        }

        // A memory parser over the whole buffer (the input is complete; a push
        // parser would only add chunk bookkeeping), with our handler in place
        // of the default SAX2 tree builder.
        guard let ctxt = xmlCreateMemoryParserCtxt(base.assumingMemoryBound(to: CChar.self), Int32(buffer.count)),
              let sax = ctxt.pointee.sax
        else {
            return .failure(XMLError(.notWellFormed, "libxml2 could not create a parser"))
        }
        defer {
            // libxml2 may build a document of its own (for a DOCTYPE it met
            // before our handler stopped it); freeing it is the caller's job.
            if let doc = ctxt.pointee.myDoc {
                xmlFreeDoc(doc)
                ctxt.pointee.myDoc = nil
            }
            xmlFreeParserCtxt(ctxt)
        }
        sax.pointee = handler
        ctxt.pointee.userData = Unmanaged.passUnretained(builder).toOpaque()
        // No XML_PARSE_NOENT (no entity substitution), no DTDLOAD/DTDATTR/DTDVALID,
        // no HUGE (libxml2's own limits stay), no network.
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOWARNING.rawValue)
        xmlCtxtUseOptions(ctxt, options)
        builder.context = ctxt
        _ = withExtendedLifetime(builder) { xmlParseDocument(ctxt) }
        if let error = builder.error { return .failure(error) }
        guard ctxt.pointee.wellFormed != 0, let root = builder.root else {
            return .failure(XMLError(.notWellFormed, "document is not well-formed", line: Int(ctxt.pointee.input?.pointee.line ?? 0)))
        }
        return .success(root)
    }
}

/// Receives SAX2 events and builds the value tree.
private final class TreeBuilder {
    let limits: XMLLimits
    var context: xmlParserCtxtPtr?
    var stack: [XMLElement] = []
    var pendingText: [UInt8] = []
    var root: XMLElement?
    var error: XMLError?
    var elementCount = 0

    /// See `XMLParser.attributesKeepAmpersandReferences`.
    let decodeAmpersands: Bool

    init(limits: XMLLimits, decodeAmpersands: Bool) {
        self.limits = limits
        self.decodeAmpersands = decodeAmpersands
    }

    static func from(_ ctx: UnsafeMutableRawPointer?) -> TreeBuilder {
        // The parser is always created with this builder as its user data.
        Unmanaged<TreeBuilder>.fromOpaque(ctx.unsafelyUnwrapped).takeUnretainedValue()
    }

    func fail(_ code: XMLError.Code, _ message: String) {
        guard error == nil else { return }
        var line = 0, column = 0
        if let context {
            line = Int(xmlSAX2GetLineNumber(context))
            column = Int(xmlSAX2GetColumnNumber(context))
            xmlStopParser(context)
        }
        error = XMLError(code, message, line: line, column: column)
    }

    func libxmlError(_ e: xmlError) {
        guard error == nil, e.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
        var message = e.message.map { String(cString: $0) } ?? "parse error"
        while message.last == "\n" { message.removeLast() }
        error = XMLError(.notWellFormed, message, line: Int(e.line), column: Int(e.int2))
    }

    func flushText() {
        guard !pendingText.isEmpty else { return }
        if !stack.isEmpty {
            stack[stack.count - 1].children.append(.text(String(decoding: pendingText, as: UTF8.self)))
        }
        pendingText.removeAll(keepingCapacity: true)
    }

    func start(
        localname: UnsafePointer<xmlChar>?, prefix: UnsafePointer<xmlChar>?, uri: UnsafePointer<xmlChar>?,
        nbNamespaces: Int, namespaces: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?,
        nbAttributes: Int, attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) {
        guard error == nil else { return }
        elementCount += 1
        if elementCount > limits.maxElements {
            return fail(.tooManyElements, "more than \(limits.maxElements) elements")
        }
        if stack.count >= limits.maxDepth {
            return fail(.tooDeep, "elements nested deeper than \(limits.maxDepth)")
        }
        flushText()
        var element = XMLElement(XMLName(string(uri), string(localname)), prefix: optionalString(prefix))
        if let context {
            element.line = Int(xmlSAX2GetLineNumber(context))
            element.column = Int(xmlSAX2GetColumnNumber(context))
        }
        if nbNamespaces > 0, let namespaces {
            element.namespaceDeclarations.reserveCapacity(nbNamespaces)
            for i in 0..<nbNamespaces {
                element.namespaceDeclarations.append((optionalString(namespaces[2 * i]), string(namespaces[2 * i + 1])))
            }
        }
        if nbAttributes > 0, let attributes {
            element.attributes.reserveCapacity(nbAttributes)
            for i in 0..<nbAttributes {
                let base = 5 * i
                let value: String
                if let start = attributes[base + 3], let end = attributes[base + 4] {
                    let raw = UnsafeBufferPointer(start: start, count: end - start)
                    value = decodeAmpersands && raw.contains(0x26)
                        ? String(decoding: Self.decodingAmpersandReferences(raw), as: UTF8.self)
                        : String(decoding: raw, as: UTF8.self)
                } else {
                    value = ""
                }
                element.attributes.append(XMLAttribute(
                    XMLName(string(attributes[base + 2]), string(attributes[base])),
                    value, prefix: optionalString(attributes[base + 1])))
            }
        }
        stack.append(element)
    }

    /// Turns each `&#38;` back into `&`. With entity substitution off,
    /// libxml2 writes every `&` of an attribute value (from `&amp;` or
    /// `&#38;`) as `&#38;` and decodes everything else, so each `&` in `raw`
    /// starts such a reference and a left-to-right scan is exact
    /// (`&amp;#38;` arrives as `&#38;#38;` and becomes `&#38;`).
    static func decodingAmpersandReferences(_ raw: UnsafeBufferPointer<xmlChar>) -> [UInt8] {
        let reference: [UInt8] = Array("&#38;".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = 0
        while i < raw.count {
            if raw[i] == 0x26, i + reference.count <= raw.count,
               raw[i..<(i + reference.count)].elementsEqual(reference) {
                out.append(0x26)
                i += reference.count
            } else {
                out.append(raw[i])
                i += 1
            }
        }
        return out
    }

    func end() {
        guard error == nil else { return }
        flushText()
        guard let element = stack.popLast() else { return }
        if stack.isEmpty {
            root = element
        } else {
            stack[stack.count - 1].children.append(.element(element))
        }
    }

    func characters(_ chars: UnsafePointer<xmlChar>?, _ count: Int) {
        guard error == nil, let chars, count > 0, !stack.isEmpty else { return }
        pendingText.append(contentsOf: UnsafeBufferPointer(start: chars, count: count))
    }

    /// Names, prefixes and namespace URIs come from the parser's dictionary,
    /// so each distinct one has one address for the whole parse: convert it
    /// to a String once.
    /// A presence document uses a dozen distinct names, so a short list
    /// searched by address beats hashing.
    private var nameAddresses: [UnsafeRawPointer] = []
    private var nameStrings: [String] = []

    private func string(_ p: UnsafePointer<xmlChar>?) -> String {
        guard let p else { return "" }
        let address = UnsafeRawPointer(p)
        if let i = nameAddresses.firstIndex(of: address) { return nameStrings[i] }
        let s = String(cString: p)
        if nameAddresses.count < 64 {
            nameAddresses.append(address)
            nameStrings.append(s)
        }
        return s
    }

    private func optionalString(_ p: UnsafePointer<xmlChar>?) -> String? {
        guard let p else { return nil }
        return string(p)
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
