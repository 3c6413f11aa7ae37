/// A configuration file that cannot be used: what is wrong and where (1-based line and column;
/// 0 when the problem is not at one place).
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var message: String

    public init(_ message: String, line: Int = 0, column: Int = 0) {
        self.message = message
        self.line = line
        self.column = column
    }

    public var description: String { line > 0 ? "\(line):\(column): \(message)" : message }
}
