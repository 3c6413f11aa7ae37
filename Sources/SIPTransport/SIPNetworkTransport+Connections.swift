public import NIOCore

extension SIPNetworkTransport {
    /// One open TCP or TLS connection, as the admin API lists it (README, "Runtime control":
    /// `GET /connections`).
    public struct OpenConnection: Sendable, Hashable, Codable {
        public var id: UInt64
        public var transport: String
        /// Accepted from the peer (`inbound`) or opened by the transport (`outbound`).
        public var direction: String
        public var remote: String
        public var local: String
        /// Seconds since it was opened (accepted, or its connect began).
        public var ageSeconds: Int
        /// Messages received on it and written to it.
        public var received: Int
        public var sent: Int
        /// The names of the peer's TLS certificate (empty before the handshake, and over TCP).
        public var peerCertificateNames: [String]
    }

    /// A page of the open stream connections, oldest first (by id), and how many are open; read
    /// on the transport's loop, costing it one sort of the connection ids (the connection limits
    /// bound how many there are) and the page.
    public func openConnections(offset: Int, limit: Int) -> EventLoopFuture<(total: Int, page: [OpenConnection])> {
        eventLoop.submit {
            let now = NIODeadline.now()
            let ids = self.connections.keys.map(\.rawValue).sorted()
            let start = min(max(offset, 0), ids.count)
            let page = ids[start..<min(start + max(limit, 0), ids.count)].compactMap { raw -> OpenConnection? in
                guard let connection = self.connections[SIPConnectionID(raw)] else { return nil }
                return OpenConnection(
                    id: raw, transport: connection.kind.rawValue.lowercased(),
                    direction: connection.inbound ? "inbound" : "outbound",
                    remote: connection.remote.hostPort, local: connection.local.hostPort,
                    ageSeconds: Int((now - connection.opened).nanoseconds / 1_000_000_000),
                    received: connection.received, sent: connection.sent,
                    peerCertificateNames: connection.peerCertificateNames)
            }
            return (ids.count, page)
        }
    }
}
