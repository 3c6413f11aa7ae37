/// The failures of the device's own machinery (binding a socket, a bad configuration), each with a
/// stable code.
public struct UPnPDeviceError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidConfiguration = Code("invalid-configuration")
        public static let bindFailed = Code("bind-failed")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
