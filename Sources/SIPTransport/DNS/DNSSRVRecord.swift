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
