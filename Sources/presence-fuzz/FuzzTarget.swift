import PresenceDocuments
import PresenceMapping
import XMLBridge

/// One fuzz iteration over the XML bridge, the document codecs and the
/// mappers: nothing may trap, and everything the project writes must parse
/// again (the writer never emits malformed XML).
enum FuzzTarget {
    static let mapper: PresenceMapper? = try? PresenceMapper(tables: MappingTables.builtIn())

    static func run(_ bytes: [UInt8]) {
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
