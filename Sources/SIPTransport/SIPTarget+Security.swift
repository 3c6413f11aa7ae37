extension SIPTarget {
    /// The target for a request inside a dialog that was made over `dialogTransport`, derived
    /// from the peer's Contact (the remote target) without leaving TLS (RFC 5630 §3.1.1): a
    /// Contact with `transport=tcp` or `transport=udp` must not move a dialog made over TLS onto
    /// an unprotected transport, whether a careless peer or an attacker wrote it.
    ///
    /// - Over a dialog not made over TLS, or a target that is TLS already: `self`.
    /// - A TCP or UDP target whose Contact gave no port: TLS on the TLS default port 5061 (RFC
    ///   3261 §19.1.2; RFC 3263 §4.2 takes a missing port as the transport's default), with the
    ///   same host and ``serverName``.
    /// - A TCP or UDP target whose Contact gave a port: that port is the peer's TCP or UDP
    ///   listener, and no TLS port can be derived: throws ``SIPTransportError/Code/downgradeRefused``.
    ///   The caller sends on the dialog's own TLS connection while it is open (RFC 3261
    ///   §18.1.1), or fails the request.
    ///
    /// `portWasGiven`: whether the Contact URI carried a port (`uri.port != nil`); a target does
    /// not remember it.
    public func keepingSecurity(of dialogTransport: SIPTransportKind, portWasGiven: Bool) throws(SIPTransportError) -> SIPTarget {
        guard dialogTransport == .tls, kind != .tls else { return self }
        guard !portWasGiven else {
            throw SIPTransportError(
                .downgradeRefused,
                "the dialog was made over TLS, the remote target is \(self) and names no TLS port (RFC 5630 §3.1.1)")
        }
        return SIPTarget(.tls, host: host, port: SIPTransportKind.tls.defaultPort, serverName: serverName)
    }
}
