import Dispatch
import UPnPDevice

#if canImport(Glibc)
    import Glibc
#endif

/// `upnp-presence-device [http-port] [ssdp-port] [host] [multicast-interface]`: the Presence:1
/// device over the in-memory backend until SIGINT or SIGTERM, then ssdp:byebye. With no arguments
/// it listens on 0.0.0.0 (HTTP on a free port, SSDP on 1900) and joins the SSDP group on the
/// kernel's interface; `multicast-interface` is the IPv4 address of another one (127.0.0.1: lo).
let arguments = CommandLine.arguments.dropFirst().map { $0 }
let httpPort = arguments.count > 0 ? Int(arguments[0]) ?? 0 : 0
let ssdpPort = arguments.count > 1 ? Int(arguments[1]) ?? 1900 : 1900
let host = arguments.count > 2 ? arguments[2] : "0.0.0.0"
let configuration = PresenceDeviceConfiguration(
    identity: DeviceIdentity(uuid: makeUUID()), httpHost: host, httpPort: httpPort, ssdpHost: host, ssdpPort: ssdpPort,
    multicastInterface: arguments.count > 3 ? arguments[3] : nil)
let device = try await PresenceDevice.bind(configuration: configuration, backend: InMemoryPresenceBackend())
print(
    "description \(device.descriptionURL), SSDP \(device.ssdpAddress), multicast joined: \(device.joinedMulticastGroup)"
)

/// The first SIGINT or SIGTERM.
func terminationSignal() async {
    let (signals, continuation) = AsyncStream.makeStream(of: Int32.self)
    let sources = [SIGINT, SIGTERM].map { number in
        signal(number, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: number)
        source.setEventHandler { continuation.yield(number) }
        source.resume()
        return source
    }
    for await _ in signals { break }
    for source in sources { source.cancel() }
}

try await withThrowingDiscardingTaskGroup { group in
    group.addTask { try await device.run() }
    await terminationSignal()
    group.cancelAll()
}
print("stopped")
