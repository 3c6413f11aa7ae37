/// Microsoft's `ms-edge-proxy-message-trust` header ([MS-SIPRE]): parameters the edge server adds
/// to messages that crossed it.
///
/// ```
/// ms-edge-proxy-message-trust = "ms-edge-proxy-message-trust" HCOLON trust-param *(SEMI trust-param)
/// trust-param                 = generic-param
/// ```
///
/// Example (MS-PRES examples): `ms-source-type=AutoFederation;ms-ep-fqdn=lcsproxy-internal.fabrikam.com;
/// ms-source-verified-user=verified;ms-source-network=federation`.
public struct SIPEdgeProxyMessageTrust: Sendable, Hashable {
    public var parameters: SIPParameters

    public init(parameters: SIPParameters) { self.parameters = parameters }

    /// e.g. `AutoFederation`, `DirectPartner`, `InternetDomain`.
    public var sourceType: String? { parameters.value("ms-source-type") }
    /// FQDN of the edge proxy.
    public var edgeProxyFQDN: String? { parameters.value("ms-ep-fqdn") }
    /// e.g. `verified`.
    public var sourceVerifiedUser: String? { parameters.value("ms-source-verified-user") }
    /// e.g. `federation`, `publiccloud`.
    public var sourceNetwork: String? { parameters.value("ms-source-network") }
    /// FQDN of the remote network (MS-PRES: used to look up the public provider name/icon).
    public var remoteFQDN: String? { parameters.value("ms-remote-fqdn") }

    static func parse(_ bytes: ArraySlice<UInt8>, header: String?) throws(SIPParseError) -> SIPEdgeProxyMessageTrust {
        var s = SIPScanner(bytes, header: header, code: .invalidHeaderValue)
        var params = SIPParameters()
        s.skipLWS()
        try s.parameter(into: &params)
        try s.parameters(into: &params)
        try s.expectEnd("';' parameter or end of ms-edge-proxy-message-trust")
        return SIPEdgeProxyMessageTrust(parameters: params)
    }
}
