/// A resource record (RFC 1035 §4.1.3): NAME, TYPE, CLASS, TTL, RDLENGTH, RDATA.
///
/// ```
///   NAME      a domain name to which this resource record pertains
///   TYPE      two octets containing one of the RR type codes
///   CLASS     two octets which specify the class of the data in the RDATA field
///   TTL       a 32 bit unsigned integer: seconds the RR may be cached
///   RDLENGTH  an unsigned 16 bit integer: the length in octets of the RDATA field
///   RDATA     a variable length string of octets that describes the resource
/// ```
public struct DNSResourceRecord: Sendable, Hashable, CustomStringConvertible {
    public var name: DNSName
    public var dnsClass: DNSClass
    /// Seconds the record may be cached (RFC 1035 §3.2.1; RFC 2181 §8 treats values with the
    /// top bit set as 0).
    public var ttl: UInt32
    public var data: DNSRecordData

    public init(name: DNSName, dnsClass: DNSClass = .internet, ttl: UInt32, data: DNSRecordData) {
        self.name = name
        self.dnsClass = dnsClass
        self.ttl = ttl
        self.data = data
    }

    /// The TYPE, from the data.
    public var type: DNSRecordType { data.type }

    public var description: String { "\(name) \(ttl) \(dnsClass) \(type) \(data)" }
}

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

/// SRV RDATA (RFC 2782): `Priority Weight Port Target`.
///
/// ```
/// _Service._Proto.Name TTL Class SRV Priority Weight Port Target
/// ```
public struct DNSSRVRecord: Sendable, Hashable {
    /// Lower values are tried first.
    public var priority: UInt16
    /// Relative weight among records of the same priority (0: very small chance).
    public var weight: UInt16
    public var port: UInt16
    /// The host; `.` means the service is decidedly not available at this domain.
    public var target: DNSName

    public init(priority: UInt16, weight: UInt16, port: UInt16, target: DNSName) {
        self.priority = priority
        self.weight = weight
        self.port = port
        self.target = target
    }
}

/// NAPTR RDATA (RFC 3403 §4.1).
///
/// ```
/// ORDER PREFERENCE FLAGS SERVICES REGEXP REPLACEMENT
/// ```
///
/// FLAGS, SERVICES and REGEXP are `<character-string>`s (RFC 1035 §3.3), kept as octets.
public struct DNSNAPTRRecord: Sendable, Hashable {
    public var order: UInt16
    public var preference: UInt16
    public var flags: [UInt8]
    public var services: [UInt8]
    public var regexp: [UInt8]
    public var replacement: DNSName

    public init(order: UInt16, preference: UInt16, flags: String, services: String, regexp: String = "",
                replacement: DNSName) {
        self.order = order
        self.preference = preference
        self.flags = Array(flags.utf8)
        self.services = Array(services.utf8)
        self.regexp = Array(regexp.utf8)
        self.replacement = replacement
    }

    init(order: UInt16, preference: UInt16, flags: [UInt8], services: [UInt8], regexp: [UInt8], replacement: DNSName) {
        self.order = order
        self.preference = preference
        self.flags = flags
        self.services = services
        self.regexp = regexp
        self.replacement = replacement
    }

    public var flagsText: String { String(decoding: flags, as: UTF8.self) }
    public var servicesText: String { String(decoding: services, as: UTF8.self) }
    public var regexpText: String { String(decoding: regexp, as: UTF8.self) }
}

/// SOA RDATA (RFC 1035 §3.3.13). Only MINIMUM and the record's TTL are used: they bound how
/// long a negative answer is cached (RFC 2308 §5).
public struct DNSSOARecord: Sendable, Hashable {
    public var primaryServer: DNSName
    public var responsibleMailbox: DNSName
    public var serial: UInt32
    public var refresh: UInt32
    public var retry: UInt32
    public var expire: UInt32
    public var minimum: UInt32

    public init(primaryServer: DNSName, responsibleMailbox: DNSName, serial: UInt32, refresh: UInt32,
                retry: UInt32, expire: UInt32, minimum: UInt32) {
        self.primaryServer = primaryServer
        self.responsibleMailbox = responsibleMailbox
        self.serial = serial
        self.refresh = refresh
        self.retry = retry
        self.expire = expire
        self.minimum = minimum
    }
}
