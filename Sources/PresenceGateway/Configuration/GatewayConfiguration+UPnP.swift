import PresenceDocuments
public import UPnPDevice

extension GatewayConfiguration {
    /// The UPnP device TelephonyServer:2 with the Presence:1 service (YAML `upnp:`;
    /// ISO/IEC 29341-26-16, docs/flows.md "UPnP Telephony Presence:1: the device layer"). Off
    /// unless configured. Until the bridge to SIP exists, the device serves the in-memory backend:
    /// control points see the presence they set themselves, not the gateway's.
    ///
    /// ```yaml
    /// upnp:
    ///   user: "sip:carol@oma.example"   # whose presence the service is (of an OMA or enterprise domain)
    ///   max-registrations: 100   # contacts registered for at once (RegisterForContactPresence)
    ///   max-registrations-per-control-point: 20   # of those, by one control point (address)
    ///   address: 192.0.2.10      # the HTTP listen address and LOCATION's host (an IP address)
    ///   port: 0                  # HTTP port (default 0: a free port; LOCATION says which)
    ///   ssdp-port: 1900          # default 1900 (UPnP Device Architecture 1.1 §1.1.2)
    ///   uuid: "2fac1234-31f8-11b4-a222-08002b34c003"   # the UDN (default: a new one each start)
    ///   friendly-name: PresenceGateway
    ///   callback-networks: ["192.0.2.0/24"]   # GENA CALLBACK hosts allowed besides loopback
    ///   multicast-interface: 192.0.2.10   # IPv4 address of the SSDP interface (default: the kernel's)
    /// ```
    public struct UPnP: Sendable, Hashable {
        /// The user the service speaks for (flow 5): their presence is published as theirs where
        /// they live (the OMA presence server, or the enterprise), and the contacts are watched
        /// with them as watcher.
        public var user: String
        public var maxRegistrations = 100
        /// Below ``maxRegistrations``: one control point cannot take every registration.
        public var maxRegistrationsPerControlPoint = 20
        public var address: String
        public var port = 0
        public var ssdpPort = 1900
        public var uuid: String?
        public var friendlyName = "PresenceGateway"
        public var callbackNetworks: [IPNetwork] = []
        public var multicastInterface: String?

        /// What the device description says of the payloads: provisional, and in which namespace.
        public static let payloadLabel =
            "Presence:1 payloads provisional: \(NS.upnpPresence) \(UPnPPresencePayload.version)"

        public init(user: String, address: String) {
            self.user = user
            self.address = address
        }

        /// The device's configuration: HTTP on `address`, SSDP on all addresses (so that
        /// multicast searches arrive), joining 239.255.255.250. Its description says the payloads
        /// are the project's provisional ones (docs/upnp-payloads.md): the service description
        /// (UDA 1.1 §2.5) has no place for prose, the device's `modelDescription` has.
        public var deviceConfiguration: PresenceDeviceConfiguration {
            PresenceDeviceConfiguration(
                identity: DeviceIdentity(
                    uuid: uuid ?? makeUUID(), friendlyName: friendlyName, modelDescription: Self.payloadLabel),
                httpHost: address,
                httpPort: port, ssdpHost: "0.0.0.0", ssdpPort: ssdpPort, multicastInterface: multicastInterface,
                eventing: GENAConfiguration(callbackPolicy: CallbackPolicy(allowedNetworks: callbackNetworks)))
        }
    }

    /// Reads `upnp:`; absent: nil.
    static func upnp(_ node: ConfigurationNode?) throws(ConfigurationError) -> UPnP? {
        guard let node else { return nil }
        let m = try node.mapping(known: [
            "user", "max-registrations", "max-registrations-per-control-point", "address", "port", "ssdp-port", "uuid",
            "friendly-name", "callback-networks",
            "multicast-interface",
        ])
        guard let userNode = m["user"] else { throw node.error("upnp needs user, the identity it speaks for") }
        let user = try userNode.string()
        guard let aor = WatcherIdentity.addressOfRecord(user) else {
            throw userNode.error("upnp user must be a sip: address of record")
        }
        guard let addressNode = m["address"] else { throw node.error("upnp needs address, an IP address to listen on") }
        let address = try addressNode.string()
        guard IPNetwork(address) != nil, !address.contains("/") else {
            throw addressNode.error("upnp address must be an IP address (it is LOCATION's host)")
        }
        var upnp = UPnP(user: aor, address: address)
        if let v = m["max-registrations"] { upnp.maxRegistrations = try v.integer(in: 1...10_000) }
        upnp.maxRegistrationsPerControlPoint = min(upnp.maxRegistrationsPerControlPoint, upnp.maxRegistrations)
        if let v = m["max-registrations-per-control-point"] {
            upnp.maxRegistrationsPerControlPoint = try v.integer(in: 1...upnp.maxRegistrations)
        }
        if let v = m["port"] { upnp.port = try v.integer(in: 0...65_535) }
        if let v = m["ssdp-port"] { upnp.ssdpPort = try v.integer(in: 1...65_535) }
        if let v = m["uuid"] { upnp.uuid = try v.string() }
        if let v = m["friendly-name"] { upnp.friendlyName = try v.string() }
        if let v = m["multicast-interface"] {
            let interface = try v.string()
            guard let network = IPNetwork(interface), network.address.count == 4, !interface.contains("/") else {
                throw v.error("upnp multicast-interface must be an IPv4 address")
            }
            upnp.multicastInterface = interface
        }
        for text in try m["callback-networks"]?.strings() ?? [] {
            guard let network = IPNetwork(text) else {
                throw m["callback-networks"].map { $0.error("upnp callback-networks: '\(text)' is no network") }
                    ?? node.error("upnp callback-networks")
            }
            upnp.callbackNetworks.append(network)
        }
        return upnp
    }
}
