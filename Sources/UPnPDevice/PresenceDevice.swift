import AsyncHTTPClient
public import Logging
public import NIOCore
import NIOHTTP1
public import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// The UPnP device `urn:schemas-upnp-org:device:TelephonyServer:2` with the Presence:1 service
/// (ISO/IEC 29341-26-16) over a ``PresenceServiceBackend``.
///
/// ``bind(configuration:backend:group:)`` opens the sockets (so the ports are known), ``run()``
/// serves until its task is cancelled, then says ssdp:byebye and closes them. `run` owns every
/// task it starts (one task group): the HTTP server and its connections, the SSDP announcements,
/// the backend's changes, the moderation tick and the NOTIFY delivery.
public final class PresenceDevice: Sendable {
    typealias HTTPConnection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    public let configuration: PresenceDeviceConfiguration
    public let backend: any PresenceServiceBackend
    public let publisher: EventPublisher
    public let router: PresenceHTTPRouter
    public let advertiser: SSDPAdvertiser
    /// The HTTP and SSDP addresses actually bound.
    public let httpAddress: SocketAddress
    public let ssdpAddress: SocketAddress
    /// Whether the SSDP socket joined 239.255.255.250 (false where the interface has no multicast).
    public let joinedMulticastGroup: Bool
    let group: any EventLoopGroup
    let logger: Logger
    let httpServer: NIOAsyncChannel<HTTPConnection, Never>
    let ssdpChannel: any Channel

    /// The URL of the device description (LOCATION).
    public var descriptionURL: String { advertiser.location }

    private init(
        configuration: PresenceDeviceConfiguration, backend: any PresenceServiceBackend, group: any EventLoopGroup,
        logger: Logger, httpServer: NIOAsyncChannel<HTTPConnection, Never>, ssdp: (any Channel, joined: Bool),
        advertiser: SSDPAdvertiser
    ) throws {
        self.configuration = configuration
        self.backend = backend
        self.group = group
        self.logger = logger
        self.httpServer = httpServer
        self.ssdpChannel = ssdp.0
        self.joinedMulticastGroup = ssdp.joined
        self.advertiser = advertiser
        guard let http = httpServer.channel.localAddress, let udp = ssdp.0.localAddress else {
            throw UPnPDeviceError(.bindFailed, "a socket has no local address")
        }
        httpAddress = http
        ssdpAddress = udp
        publisher = EventPublisher(configuration: configuration.eventing)
        router = PresenceHTTPRouter(
            identity: configuration.identity, dispatcher: PresenceActionDispatcher(backend: backend),
            publisher: publisher, server: configuration.server)
    }

    /// Opens the HTTP server and the SSDP socket; nothing is served before ``run()``. `logger`
    /// tells of event messages that could not be delivered.
    public static func bind(
        configuration: PresenceDeviceConfiguration, backend: any PresenceServiceBackend,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "upnp.device")
    ) async throws -> PresenceDevice {
        let server = try await bindHTTP(configuration, group: group)
        guard let port = server.channel.localAddress?.port else {
            throw UPnPDeviceError(.bindFailed, "the HTTP server has no port")
        }
        var host = configuration.advertisedHost ?? configuration.httpHost
        if host == "0.0.0.0" || host == "::" { host = "127.0.0.1" }
        if host.contains(":") { host = "[\(host)]" }
        let advertiser = SSDPAdvertiser(
            deviceUUID: configuration.identity.uuid,
            location: "http://\(host):\(port)\(PresenceDevicePaths.description)",
            maxAge: configuration.maxAge, server: configuration.server,
            bootID: configuration.bootID ?? UInt32(truncatingIfNeeded: time(nil)),
            configID: configuration.identity.configID)
        do {
            let ssdp = try await bindSSDP(configuration, advertiser: advertiser, group: group)
            return try PresenceDevice(
                configuration: configuration, backend: backend, group: group, logger: logger, httpServer: server,
                ssdp: ssdp, advertiser: advertiser)
        } catch {
            try? await server.channel.close()
            throw error
        }
    }

    static func bindHTTP(_ configuration: PresenceDeviceConfiguration, group: any EventLoopGroup) async throws
        -> NIOAsyncChannel<HTTPConnection, Never>
    {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: configuration.httpHost, port: configuration.httpPort) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    // A connection that sends nothing for this long is closed (a control point that
                    // opens connections and leaves them would otherwise hold them for ever).
                    let idle = TimeAmount.seconds(configuration.idleTimeoutSeconds)
                    try channel.pipeline.syncOperations.addHandlers([
                        IdleStateHandler(readTimeout: idle), IdleConnectionCloser(),
                    ])
                    return try HTTPConnection(wrappingChannelSynchronously: channel)
                }
            }
    }

    static func bindSSDP(
        _ configuration: PresenceDeviceConfiguration, advertiser: SSDPAdvertiser, group: any EventLoopGroup
    ) async throws -> (any Channel, joined: Bool) {
        let channel = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SSDPHandler(advertiser: advertiser))
                }
            }
            .bind(host: configuration.ssdpHost, port: configuration.ssdpPort).get()
        return (channel, await joinGroup(channel, configuration))
    }

    /// Joins 239.255.255.250 on the configured interface (or the kernel's choice); false where
    /// that fails. NIO refuses to join on an interface without the MULTICAST flag (lo here:
    /// `NIOMulticastNotSupportedError`); the announcements still leave by a configured interface
    /// (IP_MULTICAST_IF), which the kernel allows on lo.
    static func joinGroup(_ channel: any Channel, _ configuration: PresenceDeviceConfiguration) async -> Bool {
        guard configuration.joinMulticastGroup, let multicast = channel as? any MulticastChannel,
            let groupAddress = try? SocketAddress(ipAddress: "239.255.255.250", port: configuration.ssdpPort)
        else { return false }
        guard let interface = configuration.multicastInterface else {
            return (try? await multicast.joinGroup(groupAddress).get()) != nil
        }
        var address = in_addr()
        if inet_pton(AF_INET, interface, &address) == 1, let options = channel as? any SocketOptionProvider {
            _ = try? await options.setIPMulticastIF(address).get()
        }
        guard let devices = try? System.enumerateDevices(),
            let device = devices.first(where: { $0.address?.ipAddress == interface })
        else { return false }
        return (try? await multicast.joinGroup(groupAddress, device: device).get()) != nil
    }

    /// Serves until the calling task is cancelled; then sends ssdp:byebye, closes the sockets and
    /// returns.
    public func run() async throws {
        await publisher.seed(await backend.eventedValues())
        let client = HTTPClient(eventLoopGroup: group)
        await withDiscardingTaskGroup { tasks in
            tasks.addTask { await self.serveHTTP() }
            tasks.addTask { await self.announce() }
            tasks.addTask { await self.forwardChanges() }
            tasks.addTask { await self.tick() }
            tasks.addTask { await self.deliver(with: client) }
        }
        await send(advertiser.byebyeMessages())
        try? await ssdpChannel.close()
        try? await httpServer.channel.close()
        try? await client.shutdown()
    }
}
