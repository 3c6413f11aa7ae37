/// WatcherList: the input of AuthorizePresenceProactive and the value of the evented `Watcher`
/// state variable (provisional format, ``UPnPPresencePayload``).
///
/// ```
/// <watchers xmlns="urn:presencegateway:params:xml:ns:upnp-presence" version="0.1">
///   <watcher uri="sip:dave@oma.example" status="pending" decision="allow"/>
/// </watchers>
///
/// <xs:element name="watchers"> <xs:complexType>
///   <xs:choice minOccurs="0" maxOccurs="unbounded">
///     <xs:element name="watcher" type="tns:Watcher"/>
///     <xs:any namespace="##other" processContents="lax"/> </xs:choice>
///   <xs:attribute name="version" type="tns:Version" use="required"/>
///   <xs:anyAttribute namespace="##other" processContents="lax"/> </xs:complexType> </xs:element>
/// ```
public struct UPnPWatcherList: Hashable, Sendable {
    public var watchers: [UPnPWatcher]

    public init(watchers: [UPnPWatcher]) {
        self.watchers = watchers
    }
}
