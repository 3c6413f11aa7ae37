/// An error from parsing, validating or limiting an XML document.
///
/// `line` and `column` are 1-based positions in the input (0 when unknown).
public struct XMLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for each kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The input is not well-formed XML (XML 1.0 well-formedness constraints).
        public static let notWellFormed = Code("not-well-formed")
        /// The input has a document type declaration; DTDs are never processed.
        public static let doctypeForbidden = Code("doctype-forbidden")
        /// The input is larger than the configured limit.
        public static let tooLarge = Code("too-large")
        /// Elements are nested deeper than the configured limit.
        public static let tooDeep = Code("too-deep")
        /// The input has more elements than the configured limit.
        public static let tooManyElements = Code("too-many-elements")
        /// The document does not satisfy its schema.
        public static let schemaViolation = Code("schema-violation")
        /// A schema file could not be loaded or compiled.
        public static let schemaUnusable = Code("schema-unusable")
        /// The document is well-formed but not the kind of document expected.
        public static let unexpectedContent = Code("unexpected-content")
    }

    public var code: Code
    public var message: String
    public var line: Int
    public var column: Int

    public init(_ code: Code, _ message: String, line: Int = 0, column: Int = 0) {
        self.code = code
        self.message = message
        self.line = line
        self.column = column
    }

    public var description: String {
        line > 0 ? "\(line):\(column): \(message) [\(code)]" : "\(message) [\(code)]"
    }
}
