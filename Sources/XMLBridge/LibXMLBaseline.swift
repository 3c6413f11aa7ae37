internal import CLibXML2

/// Raw libxml2, for benchmarks: the cost of libxml2 alone parsing a document
/// into its own tree and freeing it, with the same safety options the bridge
/// uses. Not for application use.
public enum LibXMLBaseline {
    /// The libxml2 version compiled against, e.g. "20914".
    public static var versionString: String { String(LibXML.version) }

    /// Parses with `xmlReadMemory` and frees the document; true when well-formed.
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
