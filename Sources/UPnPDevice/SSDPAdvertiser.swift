/// What the device says over SSDP, as a pure value: the answers to a search and the alive and
/// byebye announcements (UPnP Device Architecture 1.1 §1.2 and §1.3). The NIO handler only sends
/// what this returns.
public struct SSDPAdvertiser: Sendable {
    /// The device's UUID, without the `uuid:` prefix (UDA 1.1 §1.1.4).
    public var deviceUUID: String
    /// The URL of the device description (LOCATION).
    public var location: String
    /// CACHE-CONTROL max-age in seconds (UDA 1.1 §1.2.2: at least 1800).
    public var maxAge: Int
    /// SERVER: `OS/version UPnP/1.1 product/version` (UDA 1.1 §1.2.2).
    public var server: String
    /// BOOTID.UPNP.ORG: changes whenever the device reboots or leaves and rejoins (UDA 1.1 §1.2.2).
    public var bootID: UInt32
    /// CONFIGID.UPNP.ORG: changes with the description documents (UDA 1.1 §1.2.2).
    public var configID: UInt32

    public init(
        deviceUUID: String, location: String, maxAge: Int = 1800, server: String, bootID: UInt32, configID: UInt32
    ) {
        self.deviceUUID = deviceUUID
        self.location = location
        self.maxAge = maxAge
        self.server = server
        self.bootID = bootID
        self.configID = configID
    }

    /// A notification type with its unique service name (UDA 1.1 §1.1.2, NT and USN).
    public struct Target: Sendable, Hashable {
        public var type: String
        public var usn: String
    }

    /// What a root device with one embedded service announces: three entries for the root device
    /// and one for the service (UDA 1.1 §1.2.2).
    public var targets: [Target] {
        let udn = "uuid:" + deviceUUID
        return [
            Target(type: "upnp:rootdevice", usn: udn + "::upnp:rootdevice"),
            Target(type: udn, usn: udn),
            Target(type: PresenceService.deviceType, usn: udn + "::" + PresenceService.deviceType),
            Target(type: PresenceService.serviceType, usn: udn + "::" + PresenceService.serviceType),
        ]
    }

    /// The responses to a search (UDA 1.1 §1.3.3): one per matching target, ST as searched.
    /// `date` is the DATE field (RFC 1123), recommended in responses.
    public func responses(to search: SSDPSearchRequest, date: String?) -> [SSDPMessage] {
        matchingTargets(search.searchTarget).map { target, searched in
            var headers: [(name: String, value: String)] = [
                ("CACHE-CONTROL", "max-age=\(maxAge)")
            ]
            if let date { headers.append(("DATE", date)) }
            headers += [
                ("EXT", ""), ("LOCATION", location), ("SERVER", server), ("ST", searched), ("USN", target.usn),
                ("BOOTID.UPNP.ORG", String(bootID)), ("CONFIGID.UPNP.ORG", String(configID)),
            ]
            return SSDPMessage(startLine: "HTTP/1.1 200 OK", headers: headers)
        }
    }

    /// The targets a search target selects, each with the ST to answer with.
    ///
    /// UDA 1.1 §1.3.2: `ssdp:all` selects everything; a device or service type selects the entry of
    /// that type when the searched version is not above the one supported, and the answer repeats
    /// the searched version.
    func matchingTargets(_ searchTarget: String) -> [(Target, String)] {
        if searchTarget == "ssdp:all" { return targets.map { ($0, $0.type) } }
        return targets.compactMap { target in
            if target.type == searchTarget { return (target, searchTarget) }
            guard let searched = Self.typeAndVersion(searchTarget), let ours = Self.typeAndVersion(target.type),
                searched.type == ours.type, searched.version <= ours.version
            else { return nil }
            return (target, searchTarget)
        }
    }

    /// `urn:domain:device:Name:2` as (`urn:domain:device:Name`, 2); nil for other strings.
    static func typeAndVersion(_ value: String) -> (type: String, version: Int)? {
        guard value.hasPrefix("urn:"), let colon = value.lastIndex(of: ":"),
            let version = Int(value[value.index(after: colon)...]), version >= 1
        else { return nil }
        return (String(value[..<colon]), version)
    }

    /// The ssdp:alive announcements, one per target (UDA 1.1 §1.2.2).
    public func aliveMessages() -> [SSDPMessage] {
        targets.map { target in
            SSDPMessage(
                startLine: "NOTIFY * HTTP/1.1",
                headers: [
                    ("HOST", SSDPSearchRequest.multicastHost), ("CACHE-CONTROL", "max-age=\(maxAge)"),
                    ("LOCATION", location), ("NT", target.type), ("NTS", "ssdp:alive"), ("SERVER", server),
                    ("USN", target.usn), ("BOOTID.UPNP.ORG", String(bootID)),
                    ("CONFIGID.UPNP.ORG", String(configID)),
                ])
        }
    }

    /// The ssdp:byebye announcements, one per target (UDA 1.1 §1.2.3).
    public func byebyeMessages() -> [SSDPMessage] {
        targets.map { target in
            SSDPMessage(
                startLine: "NOTIFY * HTTP/1.1",
                headers: [
                    ("HOST", SSDPSearchRequest.multicastHost), ("NT", target.type), ("NTS", "ssdp:byebye"),
                    ("USN", target.usn), ("BOOTID.UPNP.ORG", String(bootID)),
                    ("CONFIGID.UPNP.ORG", String(configID)),
                ])
        }
    }

    /// How often to repeat the alive announcements: well within max-age (UDA 1.1 §1.2.2 asks
    /// for re-advertising before half of it has passed), here a third of it.
    public var reannounceInterval: Int { max(1, maxAge / 3) }
}
