public import SIPMessages
public import SIPTransport

/// Where a server sends a response (RFC 3261 §18.2.2 with RFC 3581 §4), as a pure function of
/// the request's top Via (after the receiving transport's §18.2.1 processing) and how the request
/// arrived.
public enum SIPResponseRouting {
    /// Where and how to send one response.
    public struct Destination: Sendable, Hashable {
        public var target: SIPTarget
        /// The connection to reuse (reliable transports); the transport opens a new one to
        /// `target` when it has closed.
        public var connection: SIPConnectionID?

        public init(target: SIPTarget, connection: SIPConnectionID?) {
            self.target = target
            self.connection = connection
        }
    }

    /// The destination of a response to `request`, which arrived as `received`.
    ///
    /// RFC 3261 §18.2.2: "If the "sent-protocol" is a reliable transport protocol such as TCP or
    /// SCTP, or TLS over those, the response MUST be sent using the existing connection to the
    /// source of the original request ... If the connection is no longer open, the server SHOULD
    /// open a connection to the IP address in the "received" parameter, if present, using the
    /// port in the "sent-by" value, or the default port for that transport, if no port is
    /// specified." "Otherwise, if the Via header field value contains a "maddr" parameter, the
    /// response MUST be forwarded to the address listed there, using the port indicated in
    /// "sent-by", or port 5060 if none is present." "Otherwise (for unreliable unicast
    /// transports), if the top Via has a "received" parameter, the response MUST be sent to the
    /// address in the "received" parameter, using the port indicated in the "sent-by" value, or
    /// using port 5060 if none is specified explicitly." "Otherwise, if it is not receiver-tagged,
    /// the response MUST be sent to the address indicated by the "sent-by" value, using the
    /// procedures in Section 5 of [4]" (RFC 3263: the host may be a name the transport cannot use
    /// until it is resolved).
    ///
    /// RFC 3581 §4: with `rport=N`, "the server MUST send [the response] to the IP address
    /// indicated in the "received" parameter" and "the port indicated in the rport parameter".
    ///
    /// Nil when the message has no parseable top Via or names a transport this stack lacks.
    public static func destination(for request: SIPRequest, receivedOver received: SIPReceivedMessage) -> Destination? {
        guard let top = try? request.headers.via.first,
              let kind = SIPTransportKind(viaToken: top.transport) else { return nil }
        let sentByHost = top.host.hasPrefix("[") ? String(top.host.dropFirst().dropLast()) : top.host
        let sentByPort = top.port ?? kind.defaultPort
        if kind.isReliable {
            // The connection first; `target` is where the transport connects if it has closed.
            return Destination(target: SIPTarget(kind, host: top.received ?? sentByHost, port: sentByPort),
                               connection: received.connection)
        }
        if let maddr = top.maddr {
            return Destination(target: SIPTarget(kind, host: maddr, port: top.port ?? 5060), connection: nil)
        }
        if case .port(let p) = top.rport {
            return Destination(target: SIPTarget(kind, host: top.received ?? received.source.host, port: p), connection: nil)
        }
        if let receivedHost = top.received {
            return Destination(target: SIPTarget(kind, host: receivedHost, port: top.port ?? 5060), connection: nil)
        }
        return Destination(target: SIPTarget(kind, host: sentByHost, port: sentByPort), connection: nil)
    }
}
