/// RegistrationResult: what a control point's registration request for one contact came to
/// (provisional format, ``UPnPPresencePayload``).
///
/// ```
/// <registration xmlns="urn:presencegateway:params:xml:ns:upnp-presence" uri="sip:dave@oma.example"
///     result="refused" status="403"/>
///
/// <xs:element name="registration"> <xs:complexType> <xs:group ref="tns:Extensions"/>
///   <xs:attribute name="uri" type="tns:AddressURI" use="required"/>
///   <xs:attribute name="result" type="tns:RegistrationOutcome" use="required"/>
///   <xs:attribute name="status" type="tns:StatusCode"/>   <!-- 100 to 699 -->
///   <xs:attribute name="expires" type="xs:unsignedInt"/>
///   <xs:anyAttribute namespace="##other" processContents="lax"/> </xs:complexType> </xs:element>
/// ```
public struct UPnPRegistrationResult: Hashable, Sendable {
    /// What the request came to.
    public enum Result: String, Sendable, Hashable, CaseIterable {
        /// The subscription went out or is active (RFC 6665 §4.1.2).
        case subscribed
        /// A request with Expire 0 ended it (RFC 6665 §4.1.2.3).
        case ended
        /// The request was refused: `status` says how, when known.
        case refused
    }

    /// A `sip:`, `sips:` or `pres:` URI of the form `scheme:user@host` (``UPnPContactID``'s check).
    public var uri: String
    public var result: Result
    /// The SIP status code (RFC 3261 §7.2, 100 to 699), e.g. 403, 404 or 489 Bad Event (RFC 6665 §4.2.1.1)
    /// for `refused`.
    public var status: Int?
    /// Seconds granted, or asked for (0 to 4294967295, RFC 3261 §20.19 delta-seconds).
    public var expires: Int?

    public init(uri: String, result: Result, status: Int? = nil, expires: Int? = nil) {
        self.uri = uri
        self.result = result
        self.status = status
        self.expires = expires
    }
}
