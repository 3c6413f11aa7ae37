public import NIOCore
public import SIPTransport

extension GatewayConfiguration {
    /// Connection limits and timeouts for the SIP listeners (each side's transport) and the admin
    /// endpoint: YAML `connections:`, every key optional.
    ///
    /// ```yaml
    /// connections:
    ///   max-inbound: 4096              # inbound TCP/TLS connections per side
    ///   max-inbound-per-address: 64    # ... from one IP address
    ///   max-outbound: 1024             # connections the gateway opens, per side (counted apart)
    ///   idle-timeout: 300              # seconds without traffic
    ///   tls-handshake-timeout: 10      # seconds for a TLS handshake
    ///   header-timeout: 10             # seconds for a message to arrive whole from its first byte
    ///   connect-timeout: 10            # seconds for a TCP/TLS connect
    ///   admin:
    ///     max-connections: 64
    ///     max-connections-per-address: 16
    ///     idle-timeout: 60
    ///     header-timeout: 10
    /// ```
    ///
    /// Timeouts are seconds, fractions allowed (0.05 to 86,400).
    public struct Connections: Sendable, Hashable {
        public var maxInbound = 4096
        public var maxInboundPerAddress = 64
        public var maxOutbound = 1024
        public var idleTimeout: TimeAmount = .seconds(300)
        public var tlsHandshakeTimeout: TimeAmount = .seconds(10)
        public var headerTimeout: TimeAmount = .seconds(10)
        public var connectTimeout: TimeAmount = .seconds(10)
        public var admin = AdminServer.Limits()

        public init() {}

        /// Applies the SIP limits and timeouts to one side's transport configuration.
        public func apply(to transport: inout SIPNetworkTransport.Configuration) {
            transport.maxInboundConnections = maxInbound
            transport.maxInboundConnectionsPerAddress = maxInboundPerAddress
            transport.maxOutboundConnections = maxOutbound
            transport.idleTimeout = idleTimeout
            transport.tlsHandshakeTimeout = tlsHandshakeTimeout
            transport.headerTimeout = headerTimeout
            transport.connectTimeout = connectTimeout
        }
    }

    /// Reads `connections:`; its absence gives the defaults.
    static func connections(_ node: ConfigurationNode?) throws(ConfigurationError) -> Connections {
        var c = Connections()
        guard let node else { return c }
        let m = try node.mapping(known: [
            "max-inbound", "max-inbound-per-address", "max-outbound", "idle-timeout", "tls-handshake-timeout",
            "header-timeout", "connect-timeout", "admin",
        ])
        if let v = m["max-inbound"] { c.maxInbound = try v.integer(in: 1...1_000_000) }
        if let v = m["max-inbound-per-address"] { c.maxInboundPerAddress = try v.integer(in: 1...1_000_000) }
        if let v = m["max-outbound"] { c.maxOutbound = try v.integer(in: 1...1_000_000) }
        if let v = m["idle-timeout"] { c.idleTimeout = try seconds(v) }
        if let v = m["tls-handshake-timeout"] { c.tlsHandshakeTimeout = try seconds(v) }
        if let v = m["header-timeout"] { c.headerTimeout = try seconds(v) }
        if let v = m["connect-timeout"] { c.connectTimeout = try seconds(v) }
        if let admin = m["admin"] {
            let a = try admin.mapping(known: [
                "max-connections", "max-connections-per-address", "idle-timeout", "header-timeout",
            ])
            if let v = a["max-connections"] { c.admin.maxConnections = try v.integer(in: 1...1_000_000) }
            if let v = a["max-connections-per-address"] {
                c.admin.maxConnectionsPerAddress = try v.integer(in: 1...1_000_000)
            }
            if let v = a["idle-timeout"] { c.admin.idleTimeout = try seconds(v) }
            if let v = a["header-timeout"] { c.admin.headerTimeout = try seconds(v) }
        }
        return c
    }

    /// A duration in seconds (fractions allowed).
    private static func seconds(_ node: ConfigurationNode) throws(ConfigurationError) -> TimeAmount {
        let value = try node.number(in: 0.05...86_400)
        return .nanoseconds(Int64((value * 1_000_000_000).rounded()))
    }
}
