/// A resource record CLASS (RFC 1035 §3.2.4). Only IN is used here.
public struct DNSClass: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// The Internet (RFC 1035 §3.2.4).
    public static let internet = Self(rawValue: 1)
    public var description: String { self == .internet ? "IN" : "CLASS\(rawValue)" }
}
