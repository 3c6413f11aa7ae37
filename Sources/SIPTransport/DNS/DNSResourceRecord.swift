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
