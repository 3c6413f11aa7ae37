/// The RDATA of the record types the resolver uses; others are kept as octets.
public enum DNSRecordData: Sendable, Hashable, CustomStringConvertible {
    /// `ADDRESS`: a 32 bit Internet address (RFC 1035 §3.4.1).
    case a(DNSIPv4Address)
    /// A 128 bit IPv6 address (RFC 3596 §2.2).
    case aaaa(DNSIPv6Address)
    /// `CNAME`: the canonical name (RFC 1035 §3.3.1).
    case cname(DNSName)
    /// Start of authority (RFC 1035 §3.3.13).
    case soa(DNSSOARecord)
    /// Service location (RFC 2782).
    case srv(DNSSRVRecord)
    /// Naming authority pointer (RFC 3403 §4.1).
    case naptr(DNSNAPTRRecord)
    /// Any other type, RDATA as received.
    case other(type: DNSRecordType, rdata: [UInt8])

    public var type: DNSRecordType {
        switch self {
        case .a: .a
        case .aaaa: .aaaa
        case .cname: .cname
        case .soa: .soa
        case .srv: .srv
        case .naptr: .naptr
        case .other(let type, _): type
        }
    }

    public var description: String {
        switch self {
        case .a(let address): "\(address)"
        case .aaaa(let address): "\(address)"
        case .cname(let name): "\(name)"
        case .soa(let soa): "\(soa.primaryServer) \(soa.responsibleMailbox) \(soa.serial) \(soa.minimum)"
        case .srv(let srv): "\(srv.priority) \(srv.weight) \(srv.port) \(srv.target)"
        case .naptr(let n):
            "\(n.order) \(n.preference) \"\(n.flagsText)\" \"\(n.servicesText)\" \"\(n.regexpText)\" \(n.replacement)"
        case .other(_, let rdata): "\\# \(rdata.count)"
        }
    }
}
