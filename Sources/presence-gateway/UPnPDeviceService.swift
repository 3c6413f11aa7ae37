import Logging
import ServiceLifecycle
import UPnPDevice

/// The UPnP Presence:1 device of `upnp:` as a service of the gateway's group: bound at start,
/// run until the group's graceful shutdown, which cancels it and so sends ssdp:byebye. It serves
/// the gateway's backend (flow 5, docs/flows.md).
struct UPnPDeviceService: Service {
    let device: PresenceDevice

    func run() async throws {
        try await cancelWhenGracefulShutdown { try await device.run() }
    }

    /// Binds the device of `configuration`, logging where it is.
    static func bind(
        _ configuration: PresenceDeviceConfiguration, backend: any PresenceServiceBackend, logger: Logger
    ) async throws -> UPnPDeviceService {
        let device = try await PresenceDevice.bind(configuration: configuration, backend: backend, logger: logger)
        logger.info(
            "UPnP Presence:1 device",
            metadata: [
                "location": "\(device.descriptionURL)", "ssdp": "\(device.ssdpAddress)",
                "multicast": "\(device.joinedMulticastGroup)",
            ])
        return UPnPDeviceService(device: device)
    }
}
