internal import CLibXML2

/// A compiled W3C XML Schema, loaded from a local file (its imports and
/// includes must be local files too: nothing is fetched over a network).
///
/// A compiled schema may be shared between threads; each validation uses its
/// own context.
public final class XMLSchema: @unchecked Sendable {
    private let schema: xmlSchemaPtr
    public let path: String

    public init(path: String) throws(XMLError) {
        LibXML.initialize()
        self.path = path
        let collector = ErrorCollector()
        guard let parserContext = xmlSchemaNewParserCtxt(path) else {
            throw XMLError(.schemaUnusable, "cannot read schema \(path)")
        }
        defer { xmlSchemaFreeParserCtxt(parserContext) }
        xmlSchemaSetParserStructuredErrors(
            parserContext, ErrorCollector.callback, Unmanaged.passUnretained(collector).toOpaque())
        let compiled = withExtendedLifetime(collector) { xmlSchemaParse(parserContext) }
        guard let compiled else {
            let detail = collector.errors.first.map { ": \($0.message)" } ?? ""
            throw XMLError(.schemaUnusable, "schema \(path) does not compile\(detail)")
        }
        schema = compiled
    }

    deinit { xmlSchemaFree(schema) }

    /// Validates a document and returns every violation with its line and
    /// column (empty when the document is valid). The document is first
    /// checked by ``XMLParser`` so the same safety rules and limits apply.
    public func validate(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) -> [XMLError] {
        _ = try XMLParser.parse(bytes, limits: limits)
        let collector = ErrorCollector()
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOERROR.rawValue)
        let doc: xmlDocPtr? = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.flatMap { base in
                base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    xmlReadMemory($0, Int32(buffer.count), nil, nil, options)
                }
            }
        }
        guard let doc else { throw XMLError(.notWellFormed, "document is not well-formed") }
        defer { xmlFreeDoc(doc) }
        guard let validation = xmlSchemaNewValidCtxt(schema) else {
            throw XMLError(.schemaUnusable, "cannot create a validation context for \(path)")
        }
        defer { xmlSchemaFreeValidCtxt(validation) }
        xmlSchemaSetValidStructuredErrors(
            validation, ErrorCollector.callback, Unmanaged.passUnretained(collector).toOpaque())
        let status = withExtendedLifetime(collector) { xmlSchemaValidateDoc(validation, doc) }
        if status != 0 && collector.errors.isEmpty {
            return [XMLError(.schemaViolation, "document is not valid against \(path)")]
        }
        return collector.errors.map { Self.locatingColumn($0, in: bytes) }
    }

    /// libxml2 reports schema violations by line only; the column given is
    /// that of the first start tag on the line (violations name an element).
    static func locatingColumn(_ error: XMLError, in bytes: [UInt8]) -> XMLError {
        guard error.line > 0, error.column == 0 else { return error }
        var line = 1
        var index = 0
        while index < bytes.count, line < error.line {
            if bytes[index] == 0x0A { line += 1 }
            index += 1
        }
        var column = 1
        var i = index
        while i < bytes.count, bytes[i] != 0x0A {
            if bytes[i] == 0x3C, i + 1 < bytes.count, bytes[i + 1] != 0x2F {
                var located = error
                located.column = column
                return located
            }
            // Count characters, not bytes: skip UTF-8 continuation bytes.
            if bytes[i] & 0xC0 != 0x80 { column += 1 }
            i += 1
        }
        var located = error
        located.column = 1
        return located
    }
}

/// Collects libxml2 structured errors; the callback cannot capture context,
/// so the collector travels as the callback's user data.
private final class ErrorCollector {
    var errors: [XMLError] = []

    static let callback: xmlStructuredErrorFunc = { userData, error in
        guard let userData, let error else { return }
        let collector = Unmanaged<ErrorCollector>.fromOpaque(userData).takeUnretainedValue()
        guard error.pointee.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
        var message = error.pointee.message.map { String(cString: $0) } ?? "schema error"
        while message.last == "\n" { message.removeLast() }
        collector.errors.append(
            XMLError(.schemaViolation, message, line: Int(error.pointee.line), column: Int(error.pointee.int2)))
    }
}
