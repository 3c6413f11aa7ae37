/// Where a message goes or came from: a transport and an IP address with a port.
///
/// `host` is an IP literal (IPv6 without brackets) once resolved; names are resolved by
/// ``SIPResolver`` (RFC 3263) before a transport sees them.
///
/// Equality and hashing use `kind`, `host` and `port` only: ``serverName`` rides along for TLS
/// and never takes part in connection lookup.
public struct SIPTarget: Sendable, Hashable, CustomStringConvertible {
    public var kind: SIPTransportKind
    public var host: String
    public var port: UInt16
    /// For TLS: the name the server's certificate must carry, sent as SNI and verified against
    /// its subjectAltName DNS entries (RFC 5922 §4.1; RFC 3263 §4 resolves a domain to IP
    /// literals, so the domain travels here). nil: no SNI, and the certificate is verified
    /// against the IP address. Ignored by UDP and TCP, and by ``==`` and hashing, so an open
    /// connection to the same address is reused whatever name was given.
    public var serverName: String?

    public init(_ kind: SIPTransportKind, host: String, port: UInt16, serverName: String? = nil) {
        self.kind = kind
        self.host = host
        self.port = port
        self.serverName = serverName
    }

    public static func == (a: SIPTarget, b: SIPTarget) -> Bool {
        a.kind == b.kind && a.host == b.host && a.port == b.port
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(host)
        hasher.combine(port)
    }

    /// Whether `host` is an IPv6 literal (contains a colon).
    public var isIPv6: Bool { host.contains(":") }

    /// `host:port`, with brackets around an IPv6 literal (RFC 3261 §25.1 hostport).
    public var hostPort: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public var description: String { "\(kind.rawValue.lowercased()):\(hostPort)" }
}

/// Identifies one stream connection (TCP or TLS) for the life of a transport, so that responses
/// and in-dialog requests reuse it (RFC 3261 §18.2.2, §18.1.1; RFC 5923 is not implemented).
public struct SIPConnectionID: Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    /// The shard whose transport holds the connection (``SIPShardedTransport``): the top 16 bits.
    public var shard: Int { Int(rawValue >> Self.shardShift) }
    static let shardShift: UInt64 = 48
    public var description: String { "conn#\(rawValue)" }
}
