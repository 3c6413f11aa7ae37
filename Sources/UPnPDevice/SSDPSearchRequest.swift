/// An M-SEARCH request as UPnP Device Architecture 1.1 §1.3.2 defines it.
///
/// ```
/// M-SEARCH * HTTP/1.1
/// HOST: 239.255.255.250:1900        (multicast) or hostname:portNumber (unicast)
/// MAN: "ssdp:discover"
/// MX: seconds to delay response     (required for multicast, 1 to 5)
/// ST: search target
/// ```
public struct SSDPSearchRequest: Sendable, Hashable {
    /// The search target (`ssdp:all`, `upnp:rootdevice`, `uuid:…`, a device or service type).
    public var searchTarget: String
    /// The response delay bound in seconds (1 to 5); nil on a unicast search, which is answered at
    /// once (UDA 1.1 §1.3.2).
    public var maxWait: Int?
    /// True when HOST names the SSDP multicast address: responses are then spread over MX.
    public var isMulticast: Bool

    /// The multicast address and port of SSDP over IPv4 (UDA 1.1 §1.1.2).
    public static let multicastHost = "239.255.255.250:1900"

    /// Reads an M-SEARCH; nil when the message is no valid search (another method, MAN not
    /// `"ssdp:discover"`, no ST, a multicast search without an MX of at least 1).
    public init?(_ message: SSDPMessage) {
        let parts = message.startLine.split(separator: " ")
        guard parts.count == 3, parts[0] == "M-SEARCH", parts[1] == "*", parts[2].uppercased() == "HTTP/1.1"
        else { return nil }
        // UDA 1.1 §1.3.2: MAN is quoted; some control points leave the quotes out.
        guard let man = message["MAN"], man == "\"ssdp:discover\"" || man == "ssdp:discover" else { return nil }
        guard let target = message["ST"], !target.isEmpty else { return nil }
        let multicast = message["HOST"]?.lowercased() == Self.multicastHost
        var wait: Int?
        if multicast {
            // UDA 1.1 §1.3.2: MX is required on a multicast search and at least 1; a device reads
            // a value above 5 as 5. A unicast search is answered at once, whatever its MX.
            guard let mx = message["MX"], let seconds = Int(mx), seconds >= 1 else { return nil }
            wait = min(seconds, 5)
        }
        searchTarget = target
        maxWait = wait
        isMulticast = multicast
    }
}
