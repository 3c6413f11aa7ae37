public import ArgumentParser
import CProcCheck
import Foundation
public import Logging
import Metrics
import PresenceGateway
import Prometheus
import ServiceLifecycle
import UnixSignals

/// `presence-gateway`: the federation-edge gateway between Microsoft enhanced presence and
/// OMA/IMS SIMPLE presence.
@main
struct PresenceGatewayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "presence-gateway",
        abstract:
            "Bridge Microsoft enhanced presence ([MS-PRES]) and SIMPLE presence (PIDF/RPID) at the federation edge.",
        discussion: """
            Without --config the embedded demo configuration runs: everything on 127.0.0.1, OMA side on
            UDP/TCP 5060 toward a presence server on 127.0.0.1:5070, enterprise side on TCP 5061 toward an
            edge on 127.0.0.1:5062, metrics and health on http://127.0.0.1:9460. SIGTERM or SIGINT stops it
            gracefully: final NOTIFYs and unsubscribes are sent first.
            Exit codes: 0 stopped cleanly, 1 configuration or start-up error, 2 usage error.
            """,
        version: GatewayVersion.description)

    @Option(name: .long, help: "YAML configuration file (default: the embedded loopback demo).")
    var config: String?

    @Flag(
        name: .long,
        help:
            "Validate the configuration and the pres-rules and rls-services files it names, print it in short, and exit."
    )
    var check = false

    @Flag(name: .long, help: "Print the embedded demo configuration and exit.")
    var printDefaultConfig = false

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Log format on standard error: text, or json (one object per line).",
            discussion: "Default: the configuration's log-format, else text."))
    var logFormat: GatewayConfiguration.LogFormat?

    // Without /proc the process stops before main, with a clear error (CProcCheck).
    func run() async throws {
        if printDefaultConfig {
            print(GatewayConfiguration.defaultYAML)
            return
        }
        let name = config ?? "<embedded default>"
        let text: String
        if let config {
            do { text = try String(contentsOfFile: config, encoding: .utf8) } catch {
                Self.fail("\(config): cannot read: \(error.localizedDescription)")
            }
        } else {
            text = GatewayConfiguration.defaultYAML
        }
        let configuration: GatewayConfiguration
        do { configuration = try GatewayConfiguration(yaml: text) } catch {
            Self.fail("\(name):\(error.line):\(error.column): error: \(error.message)")
        }
        if check {
            let checked: GatewayConfiguration
            do { checked = try GatewayServer.readingDocuments(configuration) } catch {
                Self.fail("\(name): error: \(error)")
            }
            // Documents on an XCAP server are fetched by a start, not by the check.
            let xcap = checked.xcap.map {
                "; on XCAP, fetched at start: \(checked.xcapPresentities.count) pres-rules and "
                    + "\($0.rlsServices.count) rls-services documents"
            }
            print(
                "\(name): OK — \(checked.listeners.count) listeners, enterprise \(checked.enterprise.domains), "
                    + "OMA \(checked.oma.domains), \(checked.peers.count) peers, "
                    + "\(checked.presRulesFiles.count) pres-rules files, \(checked.resourceLists.count) resource lists"
                    + (xcap ?? ""))
            return
        }
        let levels = Self.bootstrapLogging(
            level: logLevel, format: .effective(flag: logFormat, configured: configuration.logFormat))
        let logger = Logger(label: "presence-gateway")
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(GatewayMetricsFactory(registry: registry))
        Self.recordBuildInfo()
        let server: GatewayServer
        do {
            server = try GatewayServer(
                configuration: configuration, configurationFile: config, registry: registry, logger: logger)
        } catch let error as ConfigurationError {
            Self.fail("\(name): error: \(error)")
        }
        server.logLevels = levels
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: await Self.services(server: server, upnp: configuration.upnp, name: name, logger: logger),
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch {
            Self.fail("presence-gateway: \(error)")
        }
    }

    /// The gateway and, with `upnp:`, the UPnP Presence:1 device bound already (a port in use
    /// ends the start here, as a listener's would).
    static func services(
        server: GatewayServer, upnp: GatewayConfiguration.UPnP?, name: String, logger: Logger
    ) async -> [ServiceGroupConfiguration.ServiceConfiguration] {
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [
            .init(service: GatewayService(server: server))
        ]
        if let upnp {
            do {
                services.append(
                    .init(
                        service: try await UPnPDeviceService.bind(
                            upnp.deviceConfiguration, backend: server.presenceService, logger: logger)))
            } catch {
                Self.fail("\(name): error: upnp: \(error)")
            }
        }
        return services
    }

    /// `gateway_build_info{version,swift} 1` and one `gateway_dependency_info{name,version} 1` per
    /// package built in (GatewayVersion).
    static func recordBuildInfo() {
        let build = [("version", GatewayVersion.version), ("swift", GatewayVersion.swift)]
        Gauge(label: "gateway_build_info", dimensions: build).record(1)
        for dependency in GatewayVersion.dependencies {
            let labels = [("name", dependency.name), ("version", dependency.version)]
            Gauge(label: "gateway_dependency_info", dimensions: labels).record(1)
        }
    }

    /// Every logger writes to standard error in `format`, from `level` up, or from the level the
    /// returned switch is given later (`PUT /log-level`). Configuration errors are printed before
    /// this, as plain `FILE:LINE:COLUMN: error: ...` lines.
    static func bootstrapLogging(level: Logger.Level, format: GatewayConfiguration.LogFormat) -> LogLevelSwitch {
        let levels = LogLevelSwitch(level)
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler
            switch format {
            case .text: handler = StreamLogHandler.standardError(label: label)
            case .json: handler = JSONLogHandler.standardError(label: label)
            }
            handler.logLevel = .trace
            return SwitchedLogHandler(handler, levels: levels)
        }
        return levels
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        Foundation.exit(1)
    }
}

// swift-log's level, read from the command line by swift-argument-parser: neither package can
// declare it, so the conformance is made here.
// swift-format-ignore: AvoidRetroactiveConformances
extension Logger.Level: @retroactive ExpressibleByArgument {}
extension GatewayConfiguration.LogFormat: ExpressibleByArgument {}

/// Runs the gateway (``GatewayServer/run(reloadingOn:reporting:)``) until the service group asks
/// for a graceful shutdown; SIGHUP reloads the configuration file (``GatewayServer/reload()``: an
/// invalid file is logged and the running configuration stays). Under systemd (`Type=notify`) it
/// says when it is ready (listeners bound, dialogs restored), reloading and stopping
/// (``SystemdNotify``).
struct GatewayService: Service {
    let server: GatewayServer

    func run() async throws {
        // Trapped before the listeners open: a SIGHUP from then on reloads, never ends the process.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        server.progress.observe { progress in
            guard progress.phase == .restoring, progress.of > 0 else { return }
            SystemdNotify.send([
                "STATUS=restoring: \(progress.done) of \(progress.of) records (\(progress.done * 100 / progress.of) %)"
            ])
        }
        try await server.run(reloadingOn: hangups) { [server] phase in
            switch phase {
            case .starting: SystemdNotify.send(["STATUS=starting: restoring dialogs, binding listeners"])
            case .ready: SystemdNotify.send(["READY=1", "STATUS=\(Self.status(server))"])
            case .reloading: SystemdNotify.send(["RELOADING=1", "STATUS=reloading the configuration"])
            case .stopping: SystemdNotify.send(["STOPPING=1", "STATUS=stopping: final NOTIFYs and unsubscribes"])
            }
        }
    }

    /// `systemctl status`'s line: what is held now.
    static func status(_ server: GatewayServer) -> String {
        guard let c = server.status else { return "starting" }
        return "serving: \(c.enterpriseWatches) enterprise watchers (\(c.omaLegs) OMA legs), "
            + "\(c.omaWatches) OMA watchers (\(c.enterpriseLegs) enterprise legs)"
    }
}
