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

/// The floor under any converter built on libxml2's SAX2 interface: a parser
/// context made, reset and reused for every parse as the bridge's pooled
/// contexts are (the same options, set once, and the last parse's input buffer
/// refilled), white space passed to the same callback as other text, and
/// element, text and error callbacks that do nothing. What a conversion costs above
/// this is the bridge's recording, decoding, mapping and writing. Not for
/// application use; one instance per thread.
public final class LibXMLSAXFloor {
    private let context: XMLParserContext

    public init?() {
        LibXML.initialize()
        var handler = xmlSAXHandler()
        handler.initialized = XML_SAX2_MAGIC
        handler.startElementNs = { _, _, _, _, _, _, _, _, _ in }
        handler.endElementNs = { _, _, _, _ in }
        handler.characters = { _, _, _ in }
        handler.ignorableWhitespace = handler.characters
        handler.serror = { _, _ in }  // errors are not printed (the tree parse's XML_PARSE_NOERROR)
        guard let context = XMLParserContext.make(handler: handler) else { return nil }
        self.context = context
    }

    /// Parses `bytes` with callbacks that do nothing; true when well-formed.
    public func parse(_ bytes: [UInt8]) -> Bool {
        let ctxt = context.ctxt
        xmlCtxtReset(ctxt)
        return bytes.withUnsafeBytes { buffer -> Bool in
            guard buffer.count > 0, let input = context.inputBuffer(holding: buffer) else { return false }
            guard let stream = xmlNewIOInputStream(ctxt, input, XML_CHAR_ENCODING_NONE) else {
                xmlFreeParserInputBuffer(input)
                return false
            }
            guard inputPush(ctxt, stream) >= 0 else {
                xmlFreeInputStream(stream)
                return false
            }
            xmlParseDocument(ctxt)
            if let doc = ctxt.pointee.myDoc {
                xmlFreeDoc(doc)
                ctxt.pointee.myDoc = nil
            }
            guard ctxt.pointee.wellFormed != 0 else { return false }
            context.keepInputBuffer(documentBytes: buffer.count)
            return true
        }
    }
}
