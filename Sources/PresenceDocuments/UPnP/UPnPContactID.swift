public import XMLBridge

/// ContactId: one contact's address, the argument that names whose presence an action is about
/// (provisional format, ``UPnPPresencePayload``).
///
/// ```
/// <contact xmlns="urn:presencegateway:params:xml:ns:upnp-presence" uri="sip:alice@oma.example"/>
///
/// <xs:element name="contact"> <xs:complexType> <xs:group ref="tns:Extensions"/>
///   <xs:attribute name="uri" type="tns:AddressURI" use="required"/>
///   <xs:anyAttribute namespace="##other" processContents="lax"/> </xs:complexType> </xs:element>
/// ```
public struct UPnPContactID: Hashable, Sendable {
    /// A `sip:`, `sips:` or `pres:` URI of the form `scheme:user@host`.
    public var uri: String

    /// The ID of `uri`; throws when it is not a `sip:`, `sips:` or `pres:` URI of the form
    /// `scheme:user@host` with no white space, `<`, `>` or `"` (the error has no position).
    public init(uri: String) throws(XMLError) {
        if let problem = UPnPPresencePayload.uriProblem(uri) {
            throw XMLError(.unexpectedContent, "contact uri: \(problem)")
        }
        self.uri = uri
    }
}
