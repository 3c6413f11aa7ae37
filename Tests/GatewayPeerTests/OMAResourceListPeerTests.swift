import Foundation
import PeerTestSupport
import PresenceGateway
import Prometheus
import Testing

/// Flow 1 through a real OMA resource list server (RFC 4662; docs/flows.md, "Lists toward the
/// OMA side"): Kamailio's `rls` with its XCAP server and presence server in one instance
/// (``RLSKamailio``), the gateway in process with `oma: rls` naming that XCAP server, and an
/// enterprise watcher on a UDP socket of the test. The OMA presentities publish with sipp.
@Suite(.serialized) struct OMAResourceListPeerTests {
    static let carol = "sip:carol@contoso.com"
    static let john = "sip:john@oma.example"
    static let mary = "sip:mary@oma.example"

    /// The gateway with the OMA next hop `sip` and `rls` for oma.example at `root`.
    static func gateway(sip: UInt16, root: String) async throws -> GatewayServer {
        let yaml = """
            state: { store: memory }
            listen:
              - { side: oma, transport: udp, address: 127.0.0.1, port: 0 }
              - { side: enterprise, transport: udp, address: 127.0.0.1, port: 0 }
            enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:\(try LoopbackPorts.free());transport=udp" }
            oma:
              domains: [oma.example]
              next-hop: "sip:127.0.0.1:\(sip);transport=udp"
              rls: { oma.example: "\(root)" }
            peers:
              - { name: edge, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }
              - { name: kamailio, address: 127.0.0.1, port: \(sip), side: oma }
            presentities:
              default:
                defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
            subscriptions: { piggyback-wait-ms: 2000 }
            """
        let server = try GatewayServer(configuration: try GatewayConfiguration(yaml: yaml), registry: PrometheusCollectorRegistry())
        do { try await server.start() } catch {
            await server.stop(grace: .zero)
            throw error
        }
        return server
    }

    /// Runs `body` with Kamailio's RLS and the gateway whose lists go to the XCAP server at
    /// `root` (nil: Kamailio's own), and stops both afterwards, also when it throws.
    static func with(root: String? = nil, _ body: (RLSKamailio, GatewayServer) async throws -> Void) async throws {
        let kamailio = try await RLSKamailio.start()
        try await withCleanup {
            let server = try await Self.gateway(sip: kamailio.sipPort, root: root ?? kamailio.root)
            try await withCleanup { try await body(kamailio, server) } cleanup: { await server.stop(grace: .zero) }
        } cleanup: {
            kamailio.stop()
        }
    }

    /// Publishes `activity` for `user`@oma.example to Kamailio on `port` (RFC 3903).
    static func publish(_ user: String, _ activity: String, port: UInt16) async throws {
        let run = try await Sipp.run(scenario: PeerAssets.scenario("oma-publish.xml"), remote: "127.0.0.1:\(port)",
                                     keys: ["user": user, "activity": activity, "note": "from the list"], timeLimit: 20)
        #expect(run.succeeded, "PUBLISH to Kamailio: \(run)")
    }

    /// Carol watches John and Mary: the gateway writes one `service` into her rls-services
    /// document at Kamailio's XCAP server and subscribes to it once; Kamailio's RLS subscribes to
    /// each member and sends their state in RLMI notifications, which reach Carol as batch
    /// notifications: John busy (6500), Mary away (15500), then John's change. The gateway sent
    /// Kamailio no SUBSCRIBE of its own for either member. When the gateway stops, the list is
    /// unsubscribed and the document deleted.
    @Test func anEnterpriseBatchIsOneListAtKamailiosRLS() async throws {
        try await Self.with { kamailio, server in
            let gatewayOMA = try #require(server.bound[.oma]?.first?.port)
            let enterprise = try #require(server.bound[.enterprise]?.first?.port)
            try await Self.publish("john", "busy", port: kamailio.sipPort)
            try await Self.publish("mary", "away", port: kamailio.sipPort)

            let watcher = try await EnterpriseWatcher(watcher: Self.carol, resources: [Self.john, Self.mary],
                                                      gatewayPort: UInt16(enterprise))
            #expect(watcher.subscribeStatus == 200)
            #expect(await watcher.sees(6500, for: Self.john, within: 10), "\(watcher.transcript.joined(separator: "\n---\n"))")
            #expect(await watcher.sees(15500, for: Self.mary, within: 10), "\(watcher.transcript.joined(separator: "\n---\n"))")

            let document = try await kamailio.rlsServices(of: Self.carol)
            #expect(document.status == 200)
            #expect(document.body.contains(Self.john) && document.body.contains(Self.mary), "\(document.body)")
            let fromGateway = kamailio.subscribes.filter { $0.contains("src=127.0.0.1:\(gatewayOMA) ") }
            #expect(!fromGateway.isEmpty && fromGateway.allSatisfy { $0.contains("ruri=sip:gw-list-") },
                    "the gateway's SUBSCRIBEs:\n\(fromGateway.joined(separator: "\n"))")
            #expect(fromGateway.first?.contains("eventlist") == true)

            // A change of John's state reaches Carol through the list.
            try await Self.publish("john", "on-the-phone", port: kamailio.sipPort)
            let onThePhone = await watcher.waits(within: 10) { $0.received[Self.john]?.last?.token == "on-the-phone" }
            #expect(onThePhone, "john: \(String(describing: watcher.received[Self.john]))")

            // Stopped, the gateway unsubscribes the list and deletes the document.
            await server.stop(grace: .milliseconds(800))
            let unsubscribes = kamailio.subscribes.filter {
                $0.contains("src=127.0.0.1:\(gatewayOMA) ") && $0.contains("expires=[0]")
            }
            #expect(unsubscribes.count == 1, "\(kamailio.subscribes.joined(separator: "\n"))")
            #expect(try await kamailio.rlsServices(of: Self.carol).status == 404)
        }
    }

    /// The document goes to an XCAP server the RLS does not read (another Kamailio): the RLS
    /// does not know the list, and the presence server answers its SUBSCRIBE with a 200 without
    /// `Require: eventlist` (RFC 4662 §4.1). The gateway gives the list up, and John and Mary
    /// get subscriptions of their own: Carol sees both as without `rls`.
    @Test func aListTheRLSDoesNotKnowFallsBackToSubscriptionsOfTheirOwn() async throws {
        let elsewhere = try await XCAPKamailio.start()
        try await withCleanup {
            try await Self.with(root: elsewhere.root) { kamailio, server in
                let gatewayOMA = try #require(server.bound[.oma]?.first?.port)
                let enterprise = try #require(server.bound[.enterprise]?.first?.port)
                try await Self.publish("john", "busy", port: kamailio.sipPort)
                try await Self.publish("mary", "away", port: kamailio.sipPort)

                let watcher = try await EnterpriseWatcher(watcher: Self.carol, resources: [Self.john, Self.mary],
                                                          gatewayPort: UInt16(enterprise))
                #expect(await watcher.sees(6500, for: Self.john, within: 10), "\(watcher.transcript.joined(separator: "\n---\n"))")
                #expect(await watcher.sees(15500, for: Self.mary, within: 10), "\(watcher.transcript.joined(separator: "\n---\n"))")
                let fromGateway = kamailio.subscribes.filter { $0.contains("src=127.0.0.1:\(gatewayOMA) ") }
                #expect(fromGateway.first?.contains("ruri=sip:gw-list-") == true, "\(fromGateway.joined(separator: "\n"))")
                for member in [Self.john, Self.mary] {
                    #expect(fromGateway.contains { $0.contains("ruri=\(member) ") }, "\(fromGateway.joined(separator: "\n"))")
                }
            }
        } cleanup: {
            elsewhere.stop()
        }
    }
}
