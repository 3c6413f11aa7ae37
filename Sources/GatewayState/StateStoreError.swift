/// The one error type of the GatewayState module: a stable ``Code``, where (the file or the
/// database, never with a password) and what went wrong.
public struct StateStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code. Open vocabulary: compare with the static members.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The file is not a database, or its pages do not check (`PRAGMA quick_check`).
        public static let corrupt = Code(rawValue: "corrupt")
        /// A database, but not a presence-gateway store (another application's tables).
        public static let foreign = Code(rawValue: "foreign")
        /// Written by a newer presence-gateway: its schema version is above this program's.
        public static let newerSchema = Code(rawValue: "newer-schema")
        /// Another process holds the store (a second gateway on the same file).
        public static let locked = Code(rawValue: "locked")
        /// The disk is full, or the file may not grow.
        public static let full = Code(rawValue: "full")
        /// The file or its directory cannot be created, opened or written.
        public static let io = Code(rawValue: "io")
        /// The database server cannot be reached or refused the connection.
        public static let unreachable = Code(rawValue: "unreachable")
        /// The database answered with an error.
        public static let database = Code(rawValue: "database")
    }

    public var code: Code
    /// The file, or the database (host, port, name: no credentials).
    public var location: String
    public var detail: String

    public init(_ code: Code, location: String, _ detail: String) {
        self.code = code
        self.location = location
        self.detail = detail
    }

    public var description: String { "\(location): \(detail)" }
}
