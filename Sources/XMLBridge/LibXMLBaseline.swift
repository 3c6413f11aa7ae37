internal import CLibXML2

/// Raw libxml2, for benchmarks: the cost of libxml2 alone parsing a document,
/// with the same safety options the bridge uses. Not for application use.
public enum LibXMLBaseline {
    /// The libxml2 version compiled against, e.g. "20914".
    public static var versionString: String { String(LibXML.version) }

    /// Parses with `xmlReadMemory` into libxml2's own tree and frees the
    /// document; true when well-formed.
    public static func parseAndFree(_ bytes: [UInt8]) -> Bool {
        LibXML.initialize()
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOERROR.rawValue)
        return bytes.withUnsafeBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            let doc = base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                xmlReadMemory($0, Int32(buffer.count), nil, nil, options)
            }
            guard let doc else { return false }
            xmlFreeDoc(doc)
            return true
        }
    }
}

/// The floor under any converter built on libxml2's SAX2 interface: one
/// parser context, reset and reused for every parse as the bridge's pooled
/// contexts are, input set up as the bridge sets up UTF-8 input, and element
/// and text callbacks that do nothing. What a
/// conversion costs above this is the bridge's recording, decoding, mapping
/// and writing. Not for application use; one instance per thread.
public final class LibXMLSAXFloor {
    private let ctxt: xmlParserCtxtPtr

    public init?() {
        LibXML.initialize()
        guard let ctxt = xmlNewParserCtxt() else { return nil }
        guard let sax = ctxt.pointee.sax else {
            xmlFreeParserCtxt(ctxt)
            return nil
        }
        self.ctxt = ctxt
        var handler = xmlSAXHandler()
        handler.initialized = XML_SAX2_MAGIC
        handler.startElementNs = { _, _, _, _, _, _, _, _, _ in }
        handler.endElementNs = { _, _, _, _ in }
        handler.characters = { _, _, _ in }
        sax.pointee = handler
    }

    deinit { xmlFreeParserCtxt(ctxt) }

    /// Parses `bytes` with callbacks that do nothing; true when well-formed.
    public func parse(_ bytes: [UInt8]) -> Bool {
        xmlCtxtReset(ctxt)
        return bytes.withUnsafeBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress,
                  let input = xmlParserInputBufferCreateMem(
                      UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(buffer.count), XML_CHAR_ENCODING_NONE)
            else { return false }
            // As the bridge does for UTF-8 input: nothing more to read, so
            // libxml2 answers its "grow the input" checks at once.
            input.pointee.readcallback = nil
            guard let stream = xmlNewIOInputStream(ctxt, input, XML_CHAR_ENCODING_NONE) else {
                xmlFreeParserInputBuffer(input)
                return false
            }
            guard inputPush(ctxt, stream) >= 0 else {
                xmlFreeInputStream(stream)
                return false
            }
            xmlCtxtUseOptions(ctxt, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOERROR.rawValue))
            xmlParseDocument(ctxt)
            if let doc = ctxt.pointee.myDoc {
                xmlFreeDoc(doc)
                ctxt.pointee.myDoc = nil
            }
            return ctxt.pointee.wellFormed != 0
        }
    }
}
