/// Looks up records of one type for a name, following CNAMEs (RFC 1034 §3.6.2).
///
/// ``DNSClient`` is the implementation over UDP; the resolver takes any, so a test or an
/// embedding application can supply its own.
public protocol DNSLookup: Sendable {
    /// The records of `type` that answer `name` after following CNAMEs; empty when the name or
    /// the type does not exist (NXDOMAIN, NODATA). Fails with a ``SIPTransportError``
    /// (`dns-timeout`, `dns-server-failure`, `dns-cname-chain`, parse codes) when no usable answer came.
    func lookup(_ name: DNSName, _ type: DNSRecordType) async throws(SIPTransportError) -> [DNSResourceRecord]
}
