/// PresenceOfContactsList: the presence of the contacts a control point registered for
/// (provisional format, ``UPnPPresencePayload``).
///
/// ```
/// <contacts xmlns="urn:presencegateway:params:xml:ns:upnp-presence" version="0.1">
///   <contact uri="sip:alice@oma.example" state="active" band="busy">
///     <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="sip:alice@oma.example">…</presence>
///   </contact>
///   <contact uri="sip:bob@contoso.com" state="pending"/>
/// </contacts>
///
/// <xs:element name="contacts"> <xs:complexType>
///   <xs:choice minOccurs="0" maxOccurs="unbounded">
///     <xs:element name="contact" type="tns:ContactPresence"/>
///     <xs:any namespace="##other" processContents="lax"/> </xs:choice>
///   <xs:attribute name="version" type="tns:Version" use="required"/>
///   <xs:anyAttribute namespace="##other" processContents="lax"/> </xs:complexType> </xs:element>
/// ```
public struct UPnPContactPresenceList: Hashable, Sendable {
    public var contacts: [UPnPContactPresence]

    public init(contacts: [UPnPContactPresence]) {
        self.contacts = contacts
    }
}
