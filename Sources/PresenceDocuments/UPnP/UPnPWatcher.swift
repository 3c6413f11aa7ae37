/// One watcher of a WatcherList: who subscribed to the user's presence, how far the
/// subscription got, and the user's decision on it.
///
/// ```
/// <watcher uri="sip:dave@oma.example" status="pending" decision="allow"/>
///
/// <xs:complexType name="Watcher"> <xs:group ref="tns:Extensions"/>
///   <xs:attribute name="uri" type="tns:AddressURI" use="required"/>
///   <xs:attribute name="status" type="tns:WatcherStatus"/>
///   <xs:attribute name="decision" type="tns:WatcherDecision"/>
///   <xs:anyAttribute namespace="##other" processContents="lax"/> </xs:complexType>
/// ```
public struct UPnPWatcher: Hashable, Sendable {
    /// The subscription's state, as a watcher information document gives it (RFC 3858 §5.4,
    /// RFC 3857 §3.7).
    public enum Status: String, Sendable, Hashable, CaseIterable {
        case pending
        case active
        case waiting
        case terminated
    }

    /// The user's decision: the sub-handling values of RFC 5025 §3.2.1 (`confirm`, which asks
    /// the user, is no decision and is not one of them).
    public enum Decision: String, Sendable, Hashable, CaseIterable {
        case allow
        case block
        case politeBlock = "polite-block"
    }

    /// A `sip:`, `sips:` or `pres:` URI of the form `scheme:user@host` (``UPnPContactID``'s check).
    public var uri: String
    public var status: Status?
    public var decision: Decision?

    public init(uri: String, status: Status? = nil, decision: Decision? = nil) {
        self.uri = uri
        self.status = status
        self.decision = decision
    }
}
