/// A validated action invocation: the action of the service and its IN arguments in order
/// (UPnP Device Architecture 1.1 §3.2.1).
///
/// ```
/// POST path of control URL HTTP/1.1
/// CONTENT-TYPE: text/xml; charset="utf-8"
/// SOAPACTION: "urn:schemas-upnp-org:service:serviceType:v#actionName"
///
/// <s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"
///     s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">
///   <s:Body>
///     <u:actionName xmlns:u="urn:schemas-upnp-org:service:serviceType:v">
///       <argumentName>in arg value</argumentName>
///     </u:actionName>
///   </s:Body>
/// </s:Envelope>
/// ```
public struct SOAPActionRequest: Sendable, Hashable {
    public var action: UPnPActionName
    /// The IN arguments by name, exactly those of the action.
    public var arguments: [String: String]

    public init(action: UPnPActionName, arguments: [String: String]) {
        self.action = action
        self.arguments = arguments
    }
}
