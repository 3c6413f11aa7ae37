/// A response code (RFC 1035 §4.1.1 RCODE). Open vocabulary.
public struct DNSResponseCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let noError = Self(rawValue: 0)
    public static let formatError = Self(rawValue: 1)
    public static let serverFailure = Self(rawValue: 2)
    /// NXDOMAIN: the name does not exist (authoritative answers only).
    public static let nameError = Self(rawValue: 3)
    public static let notImplemented = Self(rawValue: 4)
    public static let refused = Self(rawValue: 5)
    public var description: String {
        switch self {
        case .noError: "NOERROR"
        case .formatError: "FORMERR"
        case .serverFailure: "SERVFAIL"
        case .nameError: "NXDOMAIN"
        case .notImplemented: "NOTIMP"
        case .refused: "REFUSED"
        default: "RCODE\(rawValue)"
        }
    }
}
