/// One place to send a request, found by ``SIPResolver``, with the name to verify it by.
public struct SIPResolvedTarget: Sendable, Hashable, CustomStringConvertible {
    /// Transport, IP literal and port.
    public var target: SIPTarget
    /// The name a TLS connection sends as SNI and matches the server certificate against.
    ///
    /// RFC 5922 §4: the domain of the URI being resolved (after `maddr`), not the SRV or NAPTR
    /// target, since DNS is not trusted to say who the peer is. Exceptions: a numeric IP target
    /// gives the IP literal, and Microsoft federation (``SIPResolver/Mode/microsoftFederation``)
    /// gives the host named by the `_sipfederationtls._tcp` SRV record, since Lync and Skype for
    /// Business Access Edge certificates carry the edge's FQDN rather than the SIP domain.
    public var serverName: String

    public init(target: SIPTarget, serverName: String) {
        self.target = target
        self.serverName = serverName
    }

    public var description: String { "\(target) (\(serverName))" }
}
