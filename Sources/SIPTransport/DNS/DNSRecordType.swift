/// A resource record TYPE (RFC 1035 §3.2.2). Open vocabulary: unknown types are kept by number.
public struct DNSRecordType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// A host address, 4 octets (RFC 1035 §3.4.1).
    public static let a = Self(rawValue: 1)
    /// An authoritative name server (RFC 1035 §3.3.11).
    public static let ns = Self(rawValue: 2)
    /// The canonical name for an alias (RFC 1035 §3.3.1).
    public static let cname = Self(rawValue: 5)
    /// Start of a zone of authority (RFC 1035 §3.3.13); its MINIMUM bounds negative caching
    /// (RFC 2308 §5).
    public static let soa = Self(rawValue: 6)
    /// An IPv6 host address, 16 octets (RFC 3596 §2.2).
    public static let aaaa = Self(rawValue: 28)
    /// Service location (RFC 2782).
    public static let srv = Self(rawValue: 33)
    /// Naming authority pointer (RFC 3403 §4).
    public static let naptr = Self(rawValue: 35)
    /// The EDNS(0) pseudo-record (RFC 6891 §6.1.1), kept as ``DNSRecordData/other(type:rdata:)``.
    public static let opt = Self(rawValue: 41)

    public var description: String {
        switch self {
        case .a: "A"
        case .ns: "NS"
        case .cname: "CNAME"
        case .soa: "SOA"
        case .aaaa: "AAAA"
        case .srv: "SRV"
        case .naptr: "NAPTR"
        case .opt: "OPT"
        default: "TYPE\(rawValue)"
        }
    }
}
