import NIOCore
import PresenceGateway
import SIPMessages
import SIPTransport
import Testing

@Suite struct FederationRouterTests {
    static let yaml = """
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1, port: 5060 }
          - { side: enterprise, transport: tls, address: 127.0.0.1, port: 5061 }
        tls: { certificate-chain: gw.pem, private-key: gw.key, require-client-certificate: true }
        enterprise: { domains: [contoso.com], next-hop: dns-federation }
        oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:5070" }
        partners: { allowed: [fabrikam.com], blocked: [spam.example] }
        peers:
          - { name: edge, address: 127.0.0.2, side: enterprise, network: sameEnterprise, trusted: true, certificate-names: [edge.contoso.com] }
          - { name: kamailio, address: 127.0.0.1, port: 5070, side: oma, rate-limit: 2 }
        """

    let t0 = NIODeadline.uptimeNanoseconds(5_000_000_000)

    func router() throws -> FederationRouter {
        FederationRouter(configuration: try GatewayConfiguration(yaml: Self.yaml), localAddresses: ["127.0.0.1:5060", "127.0.0.1:5061"])
    }

    static func subscribe(from: String, to: String, extra: [String] = [], maxForwards: Int = 70) throws -> SIPRequest {
        let lines = [
            "SUBSCRIBE \(to) SIP/2.0",
            "Via: SIP/2.0/UDP 192.0.2.9:5060;branch=z9hG4bKr1",
            "Max-Forwards: \(maxForwards)",
            "From: <\(from)>;tag=a1",
            "To: <\(to)>",
            "Call-ID: r1@192.0.2.9",
            "CSeq: 1 SUBSCRIBE",
            "Contact: <sip:w@192.0.2.9>",
            "Event: presence",
        ] + extra + ["Content-Length: 0", "", ""]
        guard let r = try SIPMessage(parsing: Array(lines.joined(separator: "\r\n").utf8)).request else { throw Bad() }
        return r
    }

    struct Bad: Error {}

    static let edge = FederationRouter.Arrival(side: .enterprise, source: SIPTarget(.tls, host: "127.0.0.2", port: 40000),
                                               certificateNames: ["edge.contoso.com"])
    static let kamailio = FederationRouter.Arrival(side: .oma, source: SIPTarget(.udp, host: "127.0.0.1", port: 5070))
    static let stranger = FederationRouter.Arrival(side: .oma, source: SIPTarget(.udp, host: "127.0.0.9", port: 5060))

    func rejection(_ decision: FederationRouter.Decision) -> Int? {
        if case .reject(let status, _, _) = decision { status } else { nil }
    }

    /// [MS-PRES] §3.4.5.1.1 and the §4.5 example: a batched category SUBSCRIBE is addressed to
    /// the subscriber itself (Request-URI = To = From, `Require: adhoclist`), its resources in the
    /// body. From the enterprise it is taken for the OMA side, not refused as a relay; without
    /// `adhoclist`, or addressed to someone else in the enterprise, it stays refused.
    @Test func batchedCategorySubscribeToSelfFromTheEnterpriseIsTakenForTheOMASide() throws {
        var r = try router()
        let batch = try Self.subscribe(from: "sip:carol@contoso.com", to: "sip:carol@contoso.com", extra: ["Require: adhoclist, categoryList"])
        guard case .forward(let side, let watcher, _, _) = r.route(batch, arrival: Self.edge, now: t0) else {
            Issue.record("batched category SUBSCRIBE not taken"); return
        }
        #expect(side == .oma)
        #expect(watcher.uri == "sip:carol@contoso.com")
        let plain = try Self.subscribe(from: "sip:carol@contoso.com", to: "sip:carol@contoso.com")
        #expect(rejection(r.route(plain, arrival: Self.edge, now: t0)) == 403)
        let other = try Self.subscribe(from: "sip:carol@contoso.com", to: "sip:dan@contoso.com", extra: ["Require: adhoclist, categoryList"])
        #expect(rejection(r.route(other, arrival: Self.edge, now: t0)) == 403)
    }

    /// RFC 3857 §5.1.6: a presentity's watchers are shown to the presentity alone. A
    /// `presence.winfo` SUBSCRIBE from the OMA side is handled here when it names a presentity
    /// the gateway decides for, comes from it, and through a configured OMA peer (which
    /// authenticated its user); otherwise 403, or 404 for a presentity not served here.
    @Test func watcherInfoIsHandledHereForItsOwnerThroughAConfiguredPeerOnly() throws {
        let yaml = Self.yaml + """

            presentities:
              "sip:mary@oma.example": { defaults: { federated: confirm } }
            """
        var r = FederationRouter(configuration: try GatewayConfiguration(yaml: yaml), localAddresses: ["127.0.0.1:5060"])
        func winfo(from: String, to: String) throws -> SIPRequest {
            var request = try Self.subscribe(from: from, to: to)
            request.headers.set(.event, "presence.winfo")
            return request
        }
        let mary = "sip:mary@oma.example"
        guard case .local(let watcher, _) = r.route(try winfo(from: mary, to: mary), arrival: Self.kamailio, now: t0) else {
            Issue.record("the owner's winfo SUBSCRIBE is not handled here"); return
        }
        #expect(watcher.uri == mary)
        #expect(rejection(r.route(try winfo(from: "sip:eve@oma.example", to: mary), arrival: Self.kamailio, now: t0 + .seconds(1))) == 403)
        #expect(rejection(r.route(try winfo(from: mary, to: mary), arrival: Self.stranger, now: t0)) == 403)
        #expect(rejection(r.route(try winfo(from: "sip:john@oma.example", to: "sip:john@oma.example"), arrival: Self.kamailio, now: t0 + .seconds(2))) == 404)
    }

    @Test func omaWatcherOfAnEnterprisePresentityCrossesAsFederated() throws {
        var r = try router()
        let request = try Self.subscribe(from: "sip:alice@oma.example", to: "sip:bob@contoso.com")
        guard case .forward(let side, let watcher, let out, let hop) = r.route(request, arrival: Self.kamailio, now: t0) else {
            Issue.record("not forwarded"); return
        }
        #expect(side == .enterprise)
        #expect(watcher.uri == "sip:alice@oma.example")
        #expect(watcher.network == .federated)
        #expect(hop == .dns(federation: true))
        #expect(try out.headers.maxForwards == 69)
    }

    @Test func trustedEdgeMayStateTheSourceNetworkUntrustedPeersMayNot() throws {
        var r = try router()
        let trust = "ms-edge-proxy-message-trust: ms-source-type=AutoFederation;ms-ep-fqdn=edge.fabrikam.com;ms-source-network=federation"
        let fromEdge = try Self.subscribe(from: "sip:dan@fabrikam.com", to: "sip:alice@oma.example", extra: [trust])
        guard case .forward(_, let watcher, let kept, _) = r.route(fromEdge, arrival: Self.edge, now: t0) else {
            Issue.record("not forwarded"); return
        }
        #expect(watcher.network == .federated)
        #expect(kept.headers.contains(.msEdgeProxyMessageTrust))
        // The same claim from an unknown OMA-side peer is removed and not believed.
        let spoof = try Self.subscribe(from: "sip:alice@oma.example", to: "sip:bob@contoso.com",
                                       extra: ["ms-edge-proxy-message-trust: ms-source-network=internal", "ms-source-network: internal"])
        guard case .forward(_, let w2, let cleaned, _) = r.route(spoof, arrival: Self.stranger, now: t0) else {
            Issue.record("not forwarded"); return
        }
        #expect(w2.network == .federated)
        #expect(!cleaned.headers.contains(.msEdgeProxyMessageTrust))
        #expect(!cleaned.headers.contains(.msSourceNetwork))
        // Without the header, the trusted edge's own network applies.
        let colleague = try Self.subscribe(from: "sip:carol@contoso.com", to: "sip:alice@oma.example")
        guard case .forward(_, let w3, _, _) = r.route(colleague, arrival: Self.edge, now: t0) else {
            Issue.record("not forwarded"); return
        }
        #expect(w3.network == .sameEnterprise)
    }

    @Test func noOpenRelayAndPartnerLists() throws {
        var r = try router()
        // A domain served nowhere, or on the side the request came from.
        #expect(rejection(r.route(try Self.subscribe(from: "sip:a@oma.example", to: "sip:x@elsewhere.example"), arrival: Self.stranger, now: t0)) == 403)
        #expect(rejection(r.route(try Self.subscribe(from: "sip:a@oma.example", to: "sip:b@oma.example"), arrival: Self.stranger, now: t0)) == 403)
        // Blocked and not-allowed partner domains through the enterprise edge.
        #expect(rejection(r.route(try Self.subscribe(from: "sip:x@spam.example", to: "sip:a@oma.example"), arrival: Self.edge, now: t0)) == 403)
        #expect(rejection(r.route(try Self.subscribe(from: "sip:x@litware.com", to: "sip:a@oma.example"), arrival: Self.edge, now: t0)) == 403)
        // An OMA-side request that claims an OMA origin into the OMA side is spoofed.
        #expect(rejection(r.route(try Self.subscribe(from: "sip:a@contoso.com", to: "sip:b@contoso.com"), arrival: Self.stranger, now: t0)) == 403)
    }

    @Test func mutualTLSCertificateMustNameTheDomain() throws {
        var r = try router()
        let request = try Self.subscribe(from: "sip:dan@fabrikam.com", to: "sip:alice@oma.example")
        var wrong = Self.edge
        wrong.certificateNames = ["edge.litware.com"]
        #expect(rejection(r.route(request, arrival: wrong, now: t0)) == 403)
        var other = Self.edge
        other.certificateNames = ["sip.fabrikam.com"]
        // Speaks for fabrikam.com, but is not the certificate configured for this peer.
        #expect(rejection(r.route(request, arrival: other, now: t0)) == 403)
        // An unconfigured TLS peer: its certificate must name the From domain.
        var partner = other
        partner.source = SIPTarget(.tls, host: "127.0.0.3", port: 41000)
        #expect(rejection(r.route(request, arrival: partner, now: t0)) == nil)
        partner.certificateNames = ["*.fabrikam.com"]
        #expect(rejection(r.route(request, arrival: partner, now: t0)) == nil)
        partner.certificateNames = ["fabrikam.com.evil.example", "evilfabrikam.com"]
        #expect(rejection(r.route(request, arrival: partner, now: t0)) == 403)
    }

    @Test func maxForwardsZeroAndLoopsAreRefused() throws {
        var r = try router()
        #expect(rejection(r.route(try Self.subscribe(from: "sip:a@oma.example", to: "sip:b@contoso.com", maxForwards: 0), arrival: Self.kamailio, now: t0)) == 483)
        var looped = try Self.subscribe(from: "sip:a@oma.example", to: "sip:b@contoso.com")
        looped.headers.prepend(.via, "SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bKgw1")
        #expect(rejection(r.route(looped, arrival: Self.kamailio, now: t0)) == 482)
    }

    /// A sent-by is the gateway's only with its transport (RFC 3261 §16.3 item 4): a peer's UDP
    /// socket on the port number of the gateway's TCP listener, on the same host, is no loop.
    @Test func aViaOfAnotherTransportOnTheGatewaysPortIsNoLoop() throws {
        var r = FederationRouter(configuration: try GatewayConfiguration(yaml: Self.yaml), localAddresses: ["127.0.0.1:5061"],
                                 localSentBy: ["TCP 127.0.0.1:5061"])
        var request = try Self.subscribe(from: "sip:a@oma.example", to: "sip:b@contoso.com")
        request.headers.prepend(.via, "SIP/2.0/UDP 127.0.0.1:5061;branch=z9hG4bKpeer")
        #expect(rejection(r.route(request, arrival: Self.kamailio, now: t0)) == nil)
        request.headers.prepend(.via, "SIP/2.0/TCP 127.0.0.1:5061;branch=z9hG4bKgw2")
        #expect(rejection(r.route(request, arrival: Self.kamailio, now: t0)) == 482)
    }

    @Test func peerOverItsRateGets503WithRetryAfter() throws {
        var r = try router()
        let request = try Self.subscribe(from: "sip:a@oma.example", to: "sip:b@contoso.com")
        // rate-limit 2/s, burst 2: the third request in the same instant is refused.
        #expect(rejection(r.route(request, arrival: Self.kamailio, now: t0)) == nil)
        #expect(rejection(r.route(request, arrival: Self.kamailio, now: t0)) == nil)
        guard case .reject(503, _, let headers) = r.route(request, arrival: Self.kamailio, now: t0) else {
            Issue.record("not 503"); return
        }
        #expect(headers[.retryAfter] == "1")
        // Half a second later one token is back.
        #expect(rejection(r.route(request, arrival: Self.kamailio, now: t0 + .milliseconds(500))) == nil)
        // Unlimited peers are not affected.
        #expect(rejection(r.route(request, arrival: Self.stranger, now: t0)) == nil)
    }

    @Test func aWildcardCertificateStandsForOneLeftMostLabelOnly() throws {
        var r = try router()
        var partner = Self.edge
        partner.source = SIPTarget(.tls, host: "127.0.0.3", port: 41000)
        partner.certificateNames = ["*.fabrikam.com"]
        // RFC 6125 §6.4.3: `*.fabrikam.com` is one label deeper, never two.
        #expect(rejection(r.route(try Self.subscribe(from: "sip:dan@a.b.fabrikam.com", to: "sip:alice@oma.example"), arrival: partner, now: t0)) == 403)
        #expect(FederationRouter.certificate(["*.fabrikam.com"], speaksFor: "sip.fabrikam.com"))
        #expect(!FederationRouter.certificate(["*.fabrikam.com"], speaksFor: "a.b.fabrikam.com"))
    }

    @Test func aRequestInADialogMustComeFromTheDialogsPeerAndCertificate() throws {
        let r = try router()
        // A dialog the configured edge made over mutual TLS.
        let owner = r.dialogPeer(for: Self.edge)
        #expect(r.name(of: owner) == "edge" && owner.certificateNames == ["edge.contoso.com"])
        #expect(r.admits(Self.edge, into: owner))
        // Another connection from the same host presenting a partner's, or a rogue, certificate.
        for names in [["sip.fabrikam.com"], ["evil.example"]] {
            var other = Self.edge
            other.source.port = 40001
            other.certificateNames = names
            #expect(!r.admits(other, into: owner), "\(names)")
        }
        // The other side, or another transport, is never the dialog's peer.
        var wrongSide = Self.edge
        wrongSide.side = .oma
        #expect(!r.admits(wrongSide, into: owner))
        var tcp = Self.edge
        tcp.source.kind = .tcp
        #expect(!r.admits(tcp, into: owner))
        // An unconfigured UDP peer: the same address only.
        let stranger = r.dialogPeer(for: Self.stranger)
        var moved = Self.stranger
        moved.source.port = 5061
        #expect(r.admits(Self.stranger, into: stranger) && !r.admits(moved, into: stranger))
    }

    @Test func aTLSDialogsRequestsNeverLeaveTLSNorGoToAnArbitraryHost() throws {
        let r = try router()
        let owner = r.dialogPeer(reached: SIPTarget(.tls, host: "127.0.0.2", port: 5061, serverName: "edge.contoso.com"), side: .enterprise)
        #expect(r.name(of: owner) == "edge")
        // RFC 5630 §3.1.1: a Contact with transport=tcp does not take the dialog off TLS.
        #expect(!r.mayReach(SIPTarget(.tcp, host: "127.0.0.2", port: 5061), in: owner))
        #expect(r.mayReach(SIPTarget(.tls, host: "127.0.0.2", port: 5062), in: owner))
        #expect(!r.mayReach(SIPTarget(.tls, host: "192.0.2.66", port: 5061), in: owner))
        #expect(owner.target.kind == .tls && owner.target.serverName == "edge.contoso.com")
        // An unconfigured UDP watcher is reached at the address it wrote from, not its Contact's.
        let watcher = r.dialogPeer(for: Self.stranger)
        #expect(r.mayReach(SIPTarget(.udp, host: "127.0.0.9", port: 5060), in: watcher))
        #expect(!r.mayReach(SIPTarget(.udp, host: "127.0.0.9", port: 7000), in: watcher))
        #expect(!r.mayReach(SIPTarget(.udp, host: "198.51.100.7", port: 5060), in: watcher))
    }
}
