/// Where and how the device runs. Ports 0 take free ports (tests); the defaults are UDA 1.1's.
public struct PresenceDeviceConfiguration: Sendable {
    public var identity: DeviceIdentity
    /// The address the HTTP server (descriptions, control, eventing) listens on.
    public var httpHost: String
    public var httpPort: Int
    /// The host written into LOCATION; by default `httpHost`, or 127.0.0.1 when that is a
    /// wildcard (set it to the LAN address when listening on 0.0.0.0).
    public var advertisedHost: String?
    /// The SSDP socket: 0.0.0.0:1900 to hear multicast searches (UDA 1.1 §1.1.2); a loopback
    /// address and a free port for tests, which then search unicast.
    public var ssdpHost: String
    public var ssdpPort: Int
    /// Join 239.255.255.250 on the SSDP socket (UDA 1.1 §1.1.2). A failure to join (no
    /// multicast on the interface) is no error: unicast searches are still answered.
    public var joinMulticastGroup: Bool
    /// The IPv4 address of the interface to join the group on and to announce from; nil leaves
    /// both to the kernel (the interface of the default route).
    public var multicastInterface: String?
    /// Where alive and byebye go: host and port (the SSDP multicast group by default); nil sends none.
    public var announceHost: String?
    public var announcePort: Int
    /// CACHE-CONTROL max-age of announcements and search responses (UDA 1.1 §1.2.2: ≥ 1800).
    public var maxAge: Int
    /// BOOTID.UPNP.ORG (UDA 1.1 §1.2.2); by default the start time in seconds.
    public var bootID: UInt32?
    public var eventing: GENAConfiguration
    /// The largest request body (control envelopes), in bytes; larger gets 413.
    public var maxBodyBytes: Int
    /// SERVER and USER-AGENT (UDA 1.1 §1.2.2: `OS/version UPnP/1.1 product/version`).
    public var server: String
    /// How long one NOTIFY may take (UDA 1.1 §4.3.2 leaves it to the publisher).
    public var notifyTimeoutSeconds: Int64
    /// How long an HTTP connection may send nothing before it is closed.
    public var idleTimeoutSeconds: Int64

    public init(
        identity: DeviceIdentity, httpHost: String = "0.0.0.0", httpPort: Int = 0, advertisedHost: String? = nil,
        ssdpHost: String = "0.0.0.0", ssdpPort: Int = 1900, joinMulticastGroup: Bool = true,
        multicastInterface: String? = nil,
        announceHost: String? = "239.255.255.250", announcePort: Int = 1900, maxAge: Int = 1800, bootID: UInt32? = nil,
        eventing: GENAConfiguration = GENAConfiguration(), maxBodyBytes: Int = 64 << 10,
        server: String = "Linux/6 UPnP/1.1 PresenceGateway/1.0", notifyTimeoutSeconds: Int64 = 5,
        idleTimeoutSeconds: Int64 = 30
    ) {
        self.identity = identity
        self.httpHost = httpHost
        self.httpPort = httpPort
        self.advertisedHost = advertisedHost
        self.ssdpHost = ssdpHost
        self.ssdpPort = ssdpPort
        self.joinMulticastGroup = joinMulticastGroup
        self.multicastInterface = multicastInterface
        self.announceHost = announceHost
        self.announcePort = announcePort
        self.maxAge = maxAge
        self.bootID = bootID
        self.eventing = eventing
        self.maxBodyBytes = maxBodyBytes
        self.server = server
        self.notifyTimeoutSeconds = notifyTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
    }
}
