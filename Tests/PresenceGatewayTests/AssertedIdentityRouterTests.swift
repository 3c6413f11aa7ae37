import NIOCore
import PresenceGateway
import SIPMessages
import SIPTransport
import Testing

/// RFC 3325 §9.1 at the router: a trusted peer's `P-Asserted-Identity` is the identity the
/// request is decided on; an untrusted peer's is removed and never used.
@Suite struct AssertedIdentityRouterTests {
    static let yaml = """
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1, port: 5060 }
          - { side: enterprise, transport: udp, address: 127.0.0.1, port: 5061 }
        enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:5062" }
        oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:5070" }
        peers:
          - { name: ps, address: 127.0.0.1, port: 5070, side: oma, trusted: true }
          - { name: proxy, address: 127.0.0.3, side: oma }
        """
    static let trusted = FederationRouter.Arrival(side: .oma, source: SIPTarget(.udp, host: "127.0.0.1", port: 5070))
    static let untrusted = FederationRouter.Arrival(side: .oma, source: SIPTarget(.udp, host: "127.0.0.3", port: 5060))
    static let stranger = FederationRouter.Arrival(side: .oma, source: SIPTarget(.udp, host: "127.0.0.9", port: 5060))
    let t0 = NIODeadline.uptimeNanoseconds(5_000_000_000)

    func route(_ asserted: String?, from arrival: FederationRouter.Arrival) throws -> FederationRouter.Decision {
        var router = FederationRouter(
            configuration: try GatewayConfiguration(yaml: Self.yaml), localAddresses: ["127.0.0.1:5060", "127.0.0.1:5061"])
        let request = try FederationRouterTests.subscribe(
            from: "sip:anonymous@oma.example", to: "sip:bob@contoso.com",
            extra: asserted.map { ["P-Asserted-Identity: \($0)"] } ?? [])
        return router.route(request, arrival: arrival, now: t0)
    }

    func watcher(_ decision: FederationRouter.Decision) -> (String, SIPRequest)? {
        if case .forward(_, let watcher, let request, _) = decision { (watcher.uri, request) } else { nil }
    }

    @Test func aTrustedPeersAssertedIdentityIsTheWatcher() throws {
        let forwarded = try #require(watcher(try route("\"Dave\" <sip:dave@oma.example>", from: Self.trusted)))
        #expect(forwarded.0 == "sip:dave@oma.example")
        // RFC 3325 §9.1: a tel URI beside it is not the identity decided on.
        let both = try #require(watcher(try route("<tel:+15551234>, <sip:dave@oma.example>", from: Self.trusted)))
        #expect(both.0 == "sip:dave@oma.example")
        // Without the header, From.
        #expect(try watcher(try route(nil, from: Self.trusted))?.0 == "sip:anonymous@oma.example")
    }

    /// The identity decided on is the asserted one everywhere: one that claims the enterprise's
    /// own domain is a spoofed origin, as such a From is.
    @Test func anAssertedEnterpriseIdentityFromTheOMASideIsRefused() throws {
        guard case .reject(let status, let reason, _) = try route("<sip:ceo@contoso.com>", from: Self.trusted) else {
            Issue.record("not refused")
            return
        }
        #expect(status == 403 && reason == "Spoofed Origin")
    }

    @Test(arguments: [untrusted, stranger])
    func anUntrustedPeersAssertedIdentityIsRemovedAndNeverUsed(arrival: FederationRouter.Arrival) throws {
        let forwarded = try #require(watcher(try route("<sip:dave@oma.example>", from: arrival)))
        #expect(forwarded.0 == "sip:anonymous@oma.example")
        #expect(forwarded.1.headers["P-Asserted-Identity"] == nil)
        // Nor does a claimed enterprise identity matter: From decides.
        #expect(watcher(try route("<sip:ceo@contoso.com>", from: arrival)) != nil)
    }

    /// A header that does not parse, or more values than RFC 3325 allows, counts as absent.
    @Test(arguments: ["not a uri <<", "<sip:a@oma.example>, <sip:b@oma.example>, <sip:c@oma.example>"])
    func anUnreadableAssertedIdentityCountsAsAbsent(value: String) throws {
        #expect(try watcher(try route(value, from: Self.trusted))?.0 == "sip:anonymous@oma.example")
    }
}
