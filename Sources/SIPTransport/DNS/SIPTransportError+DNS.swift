/// Error codes of the DNS client and codec and of the RFC 3263 resolver.
///
/// They extend ``SIPTransportError`` (the module's one error type) so that a failed resolution
/// reaches the transaction layer as the transport error RFC 3261 §8.1.3.1 and RFC 3263 §4.3
/// expect. Parse errors put the byte offset and what was expected in ``SIPTransportError/detail``.
extension SIPTransportError.Code {
    /// The message ends inside a header, question, record or name (RFC 1035 §4.1).
    public static let dnsTruncated = Self(rawValue: "dns-truncated")
    /// A compression pointer points forward, at itself, into the header, or loops
    /// (RFC 1035 §4.1.4: a pointer refers to a *prior* occurrence of a name).
    public static let dnsBadPointer = Self(rawValue: "dns-bad-pointer")
    /// A label length octet starts with the reserved bits `01` or `10`, i.e. a label longer
    /// than 63 octets (RFC 1035 §2.3.4, §4.1.4); or a label in a name to encode is empty or too long.
    public static let dnsBadLabel = Self(rawValue: "dns-bad-label")
    /// A name longer than 255 octets in wire form (RFC 1035 §2.3.4).
    public static let dnsNameTooLong = Self(rawValue: "dns-name-too-long")
    /// The header announces more questions or records than the message could hold.
    public static let dnsCountExceedsMessage = Self(rawValue: "dns-count-exceeds-message")
    /// RDLENGTH disagrees with the record's RDATA format (A is 4 octets, AAAA 16, ...).
    public static let dnsBadRData = Self(rawValue: "dns-bad-rdata")
    /// The message or record count is above the configured limit.
    public static let dnsLimitExceeded = Self(rawValue: "dns-limit-exceeded")
    /// No matching response arrived from any nameserver within the timeout and retries.
    public static let dnsTimeout = Self(rawValue: "dns-timeout")
    /// The nameserver answered with an RCODE other than NOERROR and NXDOMAIN (RFC 1035 §4.1.1).
    public static let dnsServerFailure = Self(rawValue: "dns-server-failure")
    /// No nameserver is configured (no `nameserver` line in resolv.conf).
    public static let dnsNoNameservers = Self(rawValue: "dns-no-nameservers")
    /// A CNAME chain is longer than the configured limit or loops (RFC 1034 §3.6.2).
    public static let dnsCNAMEChain = Self(rawValue: "dns-cname-chain")
    /// The resolver configuration file could not be read.
    public static let dnsConfiguration = Self(rawValue: "dns-configuration")
    /// RFC 3263 resolution found no target to try for the URI.
    public static let noTargets = Self(rawValue: "no-targets")
}
