/// One entry of the question section (RFC 1035 §4.1.2): QNAME, QTYPE, QCLASS.
public struct DNSQuestion: Sendable, Hashable, CustomStringConvertible {
    public var name: DNSName
    public var type: DNSRecordType
    public var dnsClass: DNSClass

    public init(name: DNSName, type: DNSRecordType, dnsClass: DNSClass = .internet) {
        self.name = name
        self.type = type
        self.dnsClass = dnsClass
    }

    public var description: String { "\(name) \(dnsClass) \(type)" }
}
