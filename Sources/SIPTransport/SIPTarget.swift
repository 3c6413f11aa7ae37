/// Where a message goes or came from: a transport and an IP address with a port.
///
/// `host` is an IP literal (IPv6 without brackets) once resolved; names are resolved by
/// ``SIPResolver`` (RFC 3263) before a transport sees them.
public struct SIPTarget: Sendable, Hashable, CustomStringConvertible {
    public var kind: SIPTransportKind
    public var host: String
    public var port: UInt16

    public init(_ kind: SIPTransportKind, host: String, port: UInt16) {
        self.kind = kind
        self.host = host
        self.port = port
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
    public var description: String { "conn#\(rawValue)" }
}
