public import SIPMessages

/// Where a response goes: RFC 3261 §18.2.2 with RFC 3581 §4. A pure function of the response's
/// top Via and the connection its request arrived on, for the transaction layer and the
/// transport alike.
public struct SIPResponseRoute: Sendable, Hashable, CustomStringConvertible {
    /// Reliable transports: the connection the request arrived on, to be used while it is open.
    public var connection: SIPConnectionID?
    /// The address to send to (over UDP), or to connect to when ``connection`` has closed.
    /// `host` may be a domain name when the Via named one and carried no `received`: resolve
    /// it per RFC 3263 §5 before sending.
    public var target: SIPTarget

    public init(connection: SIPConnectionID?, target: SIPTarget) {
        self.connection = connection
        self.target = target
    }

    public var description: String {
        connection.map { "\($0) else \(target)" } ?? target.description
    }

    /// Computes the route for a response whose top Via is `via` (already stamped with
    /// `received`/`rport` by the server transport on receipt, RFC 3261 §18.2.1).
    ///
    /// - Reliable (TCP, TLS), RFC 3261 §18.2.2: "If the "sent-protocol" is a reliable transport
    ///   protocol such as TCP or SCTP, or TLS over those, the response MUST be sent using the
    ///   existing connection to the source of the original request [...]. If that connection is
    ///   no longer open, the server SHOULD open a connection to the IP address in the "received"
    ///   parameter, if present, using the port in the "sent-by" value, or the default port for
    ///   that transport, if no port is specified." Without `received`, the sent-by host. The
    ///   `rport` value is not used here: it names the peer's ephemeral port of the closed
    ///   connection, where nothing listens.
    /// - Unreliable (UDP): "Otherwise, if the Via header field value contains a "maddr"
    ///   parameter, the response MUST be forwarded to the address listed there, using the port
    ///   indicated in "sent-by", or port 5060 if none is present. [...] Otherwise (for
    ///   unreliable unicast transports), if the top Via has a "received" parameter, the response
    ///   MUST be sent to the address in the "received" parameter, using the port indicated in
    ///   the "sent-by" value, or using port 5060 if none is specified explicitly." RFC 3581 §4:
    ///   with both `received` and `rport`, "the response MUST be sent to the IP address listed
    ///   in the "received" parameter, and the port in the "rport" parameter." Otherwise the
    ///   sent-by host and port (RFC 3263 §5 resolves a name).
    ///
    /// Throws ``SIPTransportError/Code/unsupportedTransport`` for a Via transport this stack
    /// does not speak (SCTP, WS, ...).
    public static func forResponse(topVia via: SIPVia, requestConnection: SIPConnectionID?) throws(SIPTransportError)
        -> SIPResponseRoute
    {
        guard let kind = SIPTransportKind(viaToken: via.transport) else {
            throw SIPTransportError(.unsupportedTransport, "Via transport \(via.transport) is not UDP, TCP or TLS")
        }
        let sentByHost = SIPHostAddress.unbracketed(via.host)
        let sentByPort = via.port ?? kind.defaultPort
        if kind.isReliable {
            let host = via.received.map(SIPHostAddress.unbracketed) ?? sentByHost
            return SIPResponseRoute(
                connection: requestConnection, target: SIPTarget(kind, host: host, port: sentByPort))
        }
        if let maddr = via.maddr {
            return SIPResponseRoute(
                connection: nil,
                target: SIPTarget(kind, host: SIPHostAddress.unbracketed(maddr), port: sentByPort))
        }
        var port = sentByPort
        if case .port(let rport) = via.rport { port = rport }
        let host = via.received.map(SIPHostAddress.unbracketed) ?? sentByHost
        return SIPResponseRoute(connection: nil, target: SIPTarget(kind, host: host, port: port))
    }
}
