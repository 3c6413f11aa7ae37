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

    public init(
        primaryServer: DNSName, responsibleMailbox: DNSName, serial: UInt32, refresh: UInt32,
        retry: UInt32, expire: UInt32, minimum: UInt32
    ) {
        self.primaryServer = primaryServer
        self.responsibleMailbox = responsibleMailbox
        self.serial = serial
        self.refresh = refresh
        self.retry = retry
        self.expire = expire
        self.minimum = minimum
    }
}
