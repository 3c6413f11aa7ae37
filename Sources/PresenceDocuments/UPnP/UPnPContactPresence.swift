/// The state of a contact's registration (the gateway's subscription to the contact's presence):
/// the Subscription-State values of RFC 6665 §4.1.3 (§8.2.3).
public enum UPnPRegistrationState: String, Sendable, Hashable, CaseIterable {
    /// Sent, or accepted but not yet authorized by the presentity.
    case pending
    /// Accepted and authorized: presence flows.
    case active
    /// Ended (refused, expired or given up), with no presence to come.
    case terminated
}

/// One contact of a PresenceOfContactsList: its address, its registration's state, its
/// availability band and its presence as last notified.
///
/// ```
/// <contact uri="sip:alice@oma.example" state="active" band="busy">
///   <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="sip:alice@oma.example">…</presence>
/// </contact>
///
/// <xs:complexType name="ContactPresence"> <xs:group ref="tns:Extensions"/>
///   <xs:attribute name="uri" type="tns:AddressURI" use="required"/>
///   <xs:attribute name="state" type="tns:RegistrationState" use="required"/>
///   <xs:attribute name="band" type="tns:Band"/>
///   <xs:anyAttribute namespace="##other" processContents="lax"/> </xs:complexType>
/// ```
public struct UPnPContactPresence: Hashable, Sendable {
    /// A `sip:`, `sips:` or `pres:` URI of the form `scheme:user@host` (``UPnPContactID``'s check).
    public var uri: String
    public var state: UPnPRegistrationState
    /// The availability band, a token of Mappings/upnp-bands.tsv ([MS-PRES] §2.2.2.7.1 classes);
    /// nil when nothing is known. Written as given: a token of lower-case words joined by `-`.
    public var band: String?
    /// The contact's presence (RFC 3863); nil when nothing is known (never published, or not
    /// yet notified).
    public var presence: PIDFDocument?

    public init(uri: String, state: UPnPRegistrationState, band: String? = nil, presence: PIDFDocument? = nil) {
        self.uri = uri
        self.state = state
        self.band = band
        self.presence = presence
    }
}
