import PresenceDocuments
import PresenceMapping
import SIPMessages
import XMLBridge

/// One fuzz iteration over the SIP message parser and stream framer, the XML
/// bridge, the document codecs and the mappers: nothing may trap, a SIP message
/// that parses must serialize and parse back to the same bytes, and everything
/// the project writes as XML must parse again (the writer never emits
/// malformed XML).
enum FuzzTarget {
    static let mapper: PresenceMapper? = try? PresenceMapper(tables: MappingTables.builtIn())

    static func run(_ bytes: [UInt8]) {
        runSIP(bytes)
        runXML(bytes)
    }

    /// RFC 3261 messages as a datagram (one message) and as a stream cut in two at an
    /// input-chosen point (framing by Content-Length, CRLF keep-alives).
    static func runSIP(_ bytes: [UInt8]) {
        if case .unstable(let why) = fuzzSIPMessage(bytes) {
            fatalError("SIP round trip unstable: \(why)\n\(String(decoding: bytes, as: UTF8.self))")
        }
        var framer = SIPStreamFramer(maxBufferedBytes: 1 << 16)
        let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        for chunk in [bytes[..<cut], bytes[cut...]] {
            do {
                try framer.append(chunk)
                while let _ = try framer.next() {}
            } catch {
                return
            }
        }
    }

    static func runXML(_ bytes: [UInt8]) {
        guard let root = try? XMLParser.parse(bytes) else { return }
        mustReparse(XMLWriter().bytes(root))
        guard let mapper else { fatalError("built-in mapping tables do not load") }
        if let doc = try? CategoriesDocument(xml: root) {
            mustReparse(doc.serialized())
            mustReparse(mapper.pidf(from: doc, dialect: .rfc).0.serialized())
            mustReparse(mapper.pidf(from: doc, dialect: .microsoft).0.serialized())
            mustReparse(mapper.msrtc(from: doc).0.serialized())
        }
        if let doc = try? PIDFDocument(xml: root) {
            mustReparse(doc.serialized())
            mustReparse(mapper.categories(from: doc).0.serialized())
            mustReparse(mapper.msrtc(from: doc).0.serialized())
        }
        if let doc = try? MSRTCPresentity(xml: root) {
            mustReparse(doc.serialized())
            mustReparse(mapper.categories(from: doc).0.serialized())
        }
        if let doc = try? BatchSubscribe(xml: root) { mustReparse(doc.serialized()) }
        if let doc = try? RLMIList(xml: root) { mustReparse(doc.serialized()) }
        if let doc = try? CategoryPublish(xml: root) { mustReparse(doc.serialized()) }
    }

    static func mustReparse(_ bytes: [UInt8]) {
        do {
            _ = try XMLParser.parse(bytes, limits: XMLLimits(maxBytes: 64 << 20, maxDepth: 256, maxElements: 1 << 20))
        } catch {
            fatalError("the project wrote XML it cannot read back: \(error)\n\(String(decoding: bytes, as: UTF8.self))")
        }
    }
}
