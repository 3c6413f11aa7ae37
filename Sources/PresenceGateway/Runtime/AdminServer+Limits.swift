public import NIOCore

extension AdminServer {
    /// What one admin connection may hold, with documented defaults (YAML `connections.admin`).
    ///
    /// The endpoint answers small GETs at once, so a connection that sends nothing, or drips a
    /// request byte by byte, only holds a socket: both are closed, and connections are limited
    /// in all and per remote address so that one address cannot take them all.
    public struct Limits: Sendable, Hashable {
        /// Most connections open at once; further ones are closed at once. Default: 64.
        public var maxConnections: Int
        /// Most connections open at once from one IP address. Default: 16.
        public var maxConnectionsPerAddress: Int
        /// A connection with no traffic either way for this long is closed. Default: 60 seconds.
        public var idleTimeout: TimeAmount
        /// A request (head and body) must arrive whole within this long of its first byte, else
        /// the connection is closed. Default: 10 seconds.
        public var headerTimeout: TimeAmount

        public init(
            maxConnections: Int = 64, maxConnectionsPerAddress: Int = 16, idleTimeout: TimeAmount = .seconds(60),
            headerTimeout: TimeAmount = .seconds(10)
        ) {
            self.maxConnections = maxConnections
            self.maxConnectionsPerAddress = maxConnectionsPerAddress
            self.idleTimeout = idleTimeout
            self.headerTimeout = headerTimeout
        }
    }
}
