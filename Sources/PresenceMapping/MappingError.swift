/// An error in a mapping table or in a mapping, with the table file and the
/// line and column of the offending field when there is one.
public struct MappingError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A table file is missing or unreadable.
        public static let missingTable = Code("missing-table")
        /// A row does not have the columns of the header, or a field is malformed.
        public static let malformedRow = Code("malformed-row")
        /// Availability ranges leave a gap or overlap.
        public static let coverage = Code("coverage")
        /// A token is not in the vocabulary it must come from.
        public static let unknownToken = Code("unknown-token")
    }

    public var code: Code
    public var message: String
    public var file: String
    public var line: Int
    public var column: Int

    public init(_ code: Code, _ message: String, file: String, line: Int = 0, column: Int = 0) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String {
        line > 0 ? "\(file):\(line):\(column): \(message) [\(code)]" : "\(file): \(message) [\(code)]"
    }
}
