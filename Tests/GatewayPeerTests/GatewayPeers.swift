import Foundation
import Multipart
import NIOCore
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import Prometheus
import SIPMessages
import Testing

/// The gateway between real peers, all on 127.0.0.1: the gateway in process (``GatewayServer``
/// on system-chosen ports, UDP on both sides, with a configuration written for the test), Kamailio
/// as the OMA domain (presence server of oma.example, relaying contoso.com to the gateway), and
/// optionally a sipp UAS as the enterprise side behind its edge. Everything is stopped by
/// ``shutdown()``, which ``with(edge:configuration:_:)`` calls on success and on failure.
final class GatewayPeers: @unchecked Sendable {
    let server: GatewayServer
    let kamailio: OMADomainKamailio
    let edge: Sipp.Running?
    let edgePort: UInt16
    let enterprisePort: UInt16
    let omaPort: UInt16

    /// What the test configuration may vary.
    struct Options {
        /// `subscriptions.default-expires`: what the gateway asks of the other side.
        var defaultExpires = 600
        /// Extra YAML lines for the `presentities:` section (indented by 2).
        var presentities = ""
        /// `linked-identities:` entries (YAML list items, indented by 2).
        var linkedIdentities = ""
        /// The enterprise side's transport, listener and next hop: UDP, or TCP where requests
        /// exceed 1300 bytes (RFC 3261 §18.1.1 moves those off UDP; SERVICE publishes do).
        var enterpriseTCP = false
        /// `oma.rpid-extensions`: PIDF with the RPID signals beyond the [MS-PRES] §3.7.5.4 row.
        var rpidExtensions = false
        /// A TCP listener on the OMA side too, which Kamailio relays to: for requests over the 1300
        /// bytes RFC 3261 §18.1.1 allows over UDP.
        var omaTCP = false
        /// Top-level YAML sections added at the end (e.g. `resource-lists:`).
        var extra = ""
    }

    private init(server: GatewayServer, kamailio: OMADomainKamailio, edge: Sipp.Running?, edgePort: UInt16) throws {
        self.server = server
        self.kamailio = kamailio
        self.edge = edge
        self.edgePort = edgePort
        guard let oma = server.bound[.oma]?.first?.port, let enterprise = server.bound[.enterprise]?.first?.port else {
            throw PeerError("the gateway bound no listeners")
        }
        omaPort = UInt16(oma)
        enterprisePort = UInt16(enterprise)
    }

    static func yaml(kamailio: UInt16, edge: UInt16, options: Options) -> String {
        """
        state: { store: memory }
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }\(options.omaTCP ? "\n  - { side: oma, transport: tcp, address: 127.0.0.1, port: 0 }" : "")
          - { side: enterprise, transport: \(options.enterpriseTCP ? "tcp" : "udp"), address: 127.0.0.1, port: 0 }
        enterprise:
          domains: [contoso.com]
          next-hop: "sip:127.0.0.1:\(edge);transport=\(options.enterpriseTCP ? "tcp" : "udp")"
        oma:
          domains: [oma.example]
          next-hop: "sip:127.0.0.1:\(kamailio);transport=udp"
          rpid-extensions: \(options.rpidExtensions)
        peers:
          - { name: enterprise-edge, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }
          - { name: kamailio, address: 127.0.0.1, port: \(kamailio), side: oma, network: federated }
        presentities:
          default:
            defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
            containers: { 100: [federated], 200: [sameEnterprise] }
        \(options.presentities)
        \(options.linkedIdentities.isEmpty ? "" : "linked-identities:\n" + options.linkedIdentities)
        subscriptions:
          piggyback-wait-ms: 500
          default-expires: \(options.defaultExpires)
          minimum-expires: 1
        \(options.extra)
        """
    }

    /// Starts the peers: the enterprise-side sipp UAS first (when `edge` names a scenario, with
    /// its keys and -d), then the gateway, then Kamailio on a port chosen free (the whole start is
    /// tried again, at most 3 times, when Kamailio cannot bind it). Without `edge`, the enterprise
    /// side is `edgePort` (a socket of the test), or a free port where nothing answers.
    static func start(edge: (scenario: String, keys: [String: String], calls: Int, pause: Int)? = nil,
                      edgePort: UInt16? = nil, options: Options = Options()) async throws -> GatewayPeers {
        var running: Sipp.Running?
        if let edge {
            running = try await Sipp.start(scenario: PeerAssets.scenario(edge.scenario), remote: nil, tcp: options.enterpriseTCP, keys: edge.keys,
                                           calls: edge.calls, timeLimit: 120, extra: ["-d", String(edge.pause)])
        }
        let edgePort = try running?.port ?? edgePort ?? LoopbackPorts.free()
        var failure: Error = PeerError("not started")
        for _ in 0..<3 {
            let kamailioPort = try LoopbackPorts.free()
            let configuration = try GatewayConfiguration(yaml: yaml(kamailio: kamailioPort, edge: edgePort, options: options))
            let server = try GatewayServer(configuration: configuration, registry: PrometheusCollectorRegistry())
            do {
                try await server.start()
            } catch {
                await server.stop(grace: .zero)
                _ = running?.stop()
                throw error
            }
            let omaPort = server.bound[.oma]?.first?.port ?? 0
            let gateway =
                server.bound[.oma]?.first { $0.kind == .tcp }.map { "sip:127.0.0.1:\($0.port);transport=tcp" }
                ?? "sip:127.0.0.1:\(omaPort)"
            do {
                let kamailio = try await OMADomainKamailio(port: kamailioPort, gateway: gateway)
                return try GatewayPeers(server: server, kamailio: kamailio, edge: running, edgePort: edgePort)
            } catch {
                failure = error
                await server.stop(grace: .zero)
            }
        }
        _ = running?.stop()
        throw failure
    }

    /// Runs `body` between the peers, and stops everything afterwards, also when it throws.
    static func with(edge: (scenario: String, keys: [String: String], calls: Int, pause: Int)? = nil,
                     edgePort: UInt16? = nil, options: Options = Options(),
                     _ body: (GatewayPeers) async throws -> Void) async throws {
        let peers = try await start(edge: edge, edgePort: edgePort, options: options)
        try await withCleanup { try await body(peers) } cleanup: { await peers.shutdown() }
    }

    private let stopped = NIOLockedFlag()

    /// Stops the gateway, Kamailio and the edge (idempotent).
    func shutdown() async {
        guard stopped.set() else { return }
        await server.stop(grace: .milliseconds(500))
        await kamailio.stop()
        kamailio.remove()
        if let edge, edge.isRunning { _ = edge.stop() }
    }

    var enterpriseSide: String { "127.0.0.1:\(enterprisePort)" }
    var omaSide: String { "127.0.0.1:\(kamailio.port)" }

    /// The gateway's subscription counts, polled (every 100 ms, at most `seconds`) until `done`
    /// holds; returns the last status.
    func status(within seconds: Double = 20, until done: (GatewayRuntime.Status) -> Bool) async throws -> GatewayRuntime.Status {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let status = server.status, done(status) { return status }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        return try #require(server.status)
    }

    /// Kamailio's log lines for SUBSCRIBEs it received for `resource` (WITH_BODYLOG).
    func kamailioSubscribes(for resource: String) -> [Substring] {
        kamailio.subscribeLines.filter { $0.contains("to=\(resource) ") }
    }
}

extension GatewayRuntime.Status {
    var isIdle: Bool { enterpriseWatches == 0 && omaLegs == 0 && omaWatches == 0 && enterpriseLegs == 0 }
}

/// A flag set once, from any thread.
final class NIOLockedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    /// Sets the flag; true when it was not set before.
    func set() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if value { return false }
        value = true
        return true
    }
}
