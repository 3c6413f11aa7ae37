import NIOCore
import PresenceDocuments
import PresenceGateway
import PresenceMapping
import SIPMessages
import SIPTransport
import Testing

/// The runtime control behind the admin API on the loopback network (README, "Runtime
/// control"): the bridged subscriptions listed with both legs, one ended by the operator, and a
/// new configuration applied without dropping a dialog.
@Suite struct RuntimeControlTests {
    typealias Setup = GatewayRuntimeTests.Setup

    static let mapper = PresenceMapper(tables: try! MappingTables.builtIn())

    /// The default configuration with `presentities` entries added (YAML, indented by 2).
    static func configuration(presentities: String = "", peersFirst: String = "") throws -> GatewayConfiguration {
        var yaml = GatewayConfiguration.defaultYAML
        if !presentities.isEmpty {
            yaml = yaml.replacingOccurrences(of: "presentities:\n", with: "presentities:\n" + presentities)
        }
        if !peersFirst.isEmpty { yaml = yaml.replacingOccurrences(of: "peers:\n", with: "peers:\n" + peersFirst) }
        return try GatewayConfiguration(yaml: yaml)
    }

    /// An OMA watcher (dave@oma.example → bob@contoso.com) bridged: the enterprise leg answered
    /// with bob online. Returns the enterprise leg's SUBSCRIBE.
    static func bridgeOMAWatcher(_ s: Setup) throws -> SIPRequest {
        s.kamailio.send(try EdgeSecurityTests.omaSubscribe(id: "rc1", extra: ["Expires: 600"]), to: Setup.omaSide)
        s.run()
        let subscribe = try #require(s.edge.requests.first { GatewayRuntimeTests.names($0, "sip:bob@contoso.com") })
        s.edge.send(.response(GatewayRuntimeTests.categoriesOK(subscribe, "sip:bob@contoso.com", availability: 3500, tag: "rc")),
                    to: Setup.enterpriseSide)
        s.run(1)
        for notify in s.kamailio.requests where notify.method == .notify {
            s.kamailio.send(.response(SIPResponse(replyingTo: notify, statusCode: 200)), to: Setup.omaSide)
        }
        s.run()
        return subscribe
    }

    @Test func bothSidesBridgedSubscriptionsAreListedWithTheirLegs() throws {
        let s = try Setup()
        _ = try EdgeSecurityTests.bridgeEnterpriseWatcher(s)
        let leg = try Self.bridgeOMAWatcher(s)
        let all = s.runtime.bridgedSubscriptions(uri: nil, side: nil)
        #expect(all.count == 2)
        let enterprise = try #require(all.first { $0.side == "enterprise" })
        #expect(enterprise.watcher == "sip:bob@contoso.com" && enterprise.state == "active")
        #expect(enterprise.format == "application/pidf+xml")
        #expect(enterprise.peer == "enterprise-edge" && enterprise.network == "sameEnterprise")
        #expect(enterprise.resources.map(\.uri) == ["sip:carol@oma.example"])
        #expect(enterprise.resources.first?.decision == "allow")
        #expect(enterprise.resources.first?.leg?.state == "active" && enterprise.resources.first?.leg?.peer == "kamailio")
        #expect((enterprise.expiresIn ?? 0) > 590 && (enterprise.expiresIn ?? 0) <= 600)
        let oma = try #require(all.first { $0.side == "oma" })
        #expect(oma.watcher == "sip:dave@oma.example" && oma.network == "federated" && oma.peer == "kamailio")
        #expect(oma.resources.map(\.uri) == ["sip:bob@contoso.com"])
        #expect(oma.resources.first?.decision == nil)
        #expect(oma.resources.first?.leg?.callID == leg.headers.callID)
        #expect(oma.resources.first?.leg?.peer == "enterprise-edge")
        // Filters: by either end's address of record, and by the watcher's side.
        #expect(s.runtime.bridgedSubscriptions(uri: "sip:carol@oma.example", side: nil).map(\.id) == [enterprise.id])
        #expect(s.runtime.bridgedSubscriptions(uri: "sip:dave@oma.example;transport=udp", side: nil).map(\.id) == [oma.id])
        #expect(s.runtime.bridgedSubscriptions(uri: nil, side: .oma).map(\.id) == [oma.id])
        #expect(s.runtime.bridgedSubscriptions(uri: "sip:nobody@oma.example", side: nil).isEmpty)
        // A page is what the whole list holds there, with the number in all.
        let second = s.runtime.bridgedSubscriptions(uri: nil, side: nil, offset: 1, limit: 1)
        #expect(second.total == 2 && second.page.map(\.id) == [all[1].id])
        let filtered = s.runtime.bridgedSubscriptions(uri: "sip:carol@oma.example", side: nil, offset: 0, limit: 5)
        #expect(filtered.total == 1 && filtered.page.map(\.id) == [enterprise.id])
        let beyond = s.runtime.bridgedSubscriptions(uri: nil, side: nil, offset: 2, limit: 5)
        #expect(beyond.total == 2 && beyond.page.isEmpty)
    }

    @Test func endingASubscriptionNotifiesTheWatcherAndUnsubscribesTheOtherLeg() throws {
        let s = try Setup()
        let leg = try Self.bridgeOMAWatcher(s)
        let id = try #require(s.runtime.bridgedSubscriptions(uri: nil, side: .oma).first?.id)
        #expect(!s.runtime.endSubscription("o999", reason: "deactivated"))
        #expect(!s.runtime.endSubscription("nonsense", reason: "deactivated"))
        let notifies = s.kamailio.requests.count
        #expect(s.runtime.endSubscription(id, reason: "rejected"))
        s.run()
        // RFC 6665 §4.2.2: the final NOTIFY says why.
        let final = try #require(s.kamailio.requests.dropFirst(notifies).first { $0.method == .notify })
        #expect(try final.headers.subscriptionState?.state == .terminated)
        #expect(try final.headers.subscriptionState?.reason == "rejected")
        // The enterprise leg is unsubscribed in its dialog (RFC 6665 §4.1.2.3).
        let unsubscribe = try #require(s.edge.requests.last { $0.method == .subscribe && $0.headers.callID == leg.headers.callID })
        #expect(try unsubscribe.headers.expires == 0)
        #expect(s.runtime.bridgedSubscriptions(uri: nil, side: nil).allSatisfy { $0.state == "terminated" || $0.id != id })
    }

    @Test func aReloadThatChangesNoViewSendsNothingAndKeepsEveryDialog() throws {
        let s = try Setup()
        let subscribe = try EdgeSecurityTests.bridgeEnterpriseWatcher(s)
        _ = try Self.bridgeOMAWatcher(s)
        let sent = s.network.log.count
        // The peers move: kamailio is now the second configured peer, not the first.
        s.runtime.reconfigure(try Self.configuration(peersFirst: "  - { name: other-oma, address: 127.0.0.9, side: oma }\n"), mapper: Self.mapper)
        s.run()
        #expect(s.network.log.count == sent)
        #expect(s.runtime.bridgedSubscriptions(uri: nil, side: nil).count == 2)
        // The OMA leg's dialog still belongs to kamailio, by name: its NOTIFY is relayed.
        #expect(s.runtime.bridgedSubscriptions(uri: "sip:carol@oma.example", side: nil).first?.resources.first?.leg?.peer == "kamailio")
        let before = s.edge.requests.count { $0.method == .notify }
        var closed = try #require(try EdgeSecurityTests.notify(for: subscribe, cseq: 5).request)
        closed.body = Array(String(decoding: closed.body, as: UTF8.self).replacingOccurrences(of: "open", with: "closed").utf8)
        s.kamailio.send(.request(closed), to: Setup.omaSide)
        s.run()
        #expect(s.kamailio.responses.last?.statusCode == 200)
        #expect(s.edge.requests.count { $0.method == .notify } == before + 1)
    }

    @Test func aWatcherThePolicyNowPolitelyBlocksSeesWhatAnyPolitelyBlockedWatcherSees() throws {
        let s = try Setup()
        _ = try EdgeSecurityTests.bridgeEnterpriseWatcher(s)
        let before = s.edge.requests.count { $0.method == .notify }
        s.runtime.reconfigure(try Self.configuration(presentities: """
              "sip:carol@oma.example":
                defaults: { sameEnterprise: polite-block, federated: allow, publicCloud: polite-block }

            """), mapper: Self.mapper)
        s.run()
        let notifies = s.edge.requests.filter { $0.method == .notify }
        #expect(notifies.count == before + 1)
        let changed = try #require(notifies.last)
        #expect(try changed.headers.subscriptionState?.state == .active)
        // A watcher subscribing now, politely blocked from the start, is shown the same body.
        s.edge.send(try GatewayRuntimeTests.parse([
            "SUBSCRIBE sip:carol@oma.example SIP/2.0",
            "Via: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKpb2",
            "Max-Forwards: 70",
            "From: <sip:erin@contoso.com>;tag=pb2",
            "To: <sip:carol@oma.example>",
            "Call-ID: pb2@contoso",
            "CSeq: 1 SUBSCRIBE",
            "Contact: <sip:erin@127.0.0.1:5062;transport=tcp>",
            "Event: presence",
            "Accept: application/pidf+xml",
        ]), to: Setup.enterpriseSide)
        s.run()
        let erinsSubscribe = try #require(s.kamailio.requests.last { $0.method == .subscribe && $0.headers.callID != nil
            && (try? $0.headers.from)?.uri.description == "sip:erin@contoso.com" })
        s.kamailio.send(.response(SIPResponse(replyingTo: erinsSubscribe, statusCode: 200, toTag: "k2", headers: [
            (.contact, "<sip:127.0.0.1:5070>"), (.expires, "600"),
        ])), to: Setup.omaSide)
        s.kamailio.send(try EdgeSecurityTests.notify(for: erinsSubscribe, cseq: 1), to: Setup.omaSide)
        s.run(1)
        let erins = try #require(s.edge.requests.last { $0.method == .notify && $0.headers.callID == "pb2@contoso" })
        #expect(erins.body == changed.body)
        // Reloading the same policy again changes nobody's view: nothing more is sent.
        let count = s.edge.requests.count
        s.runtime.reconfigure(try Self.configuration(presentities: """
              "sip:carol@oma.example":
                defaults: { sameEnterprise: polite-block, federated: allow, publicCloud: polite-block }

            """), mapper: Self.mapper)
        s.run()
        #expect(s.edge.requests.count == count)
    }

    @Test func aWatcherThePolicyNowBlocksLosesTheResourceAndTheOMALegEnds() throws {
        let s = try Setup()
        let leg = try EdgeSecurityTests.bridgeEnterpriseWatcher(s)
        s.runtime.reconfigure(try Self.configuration(presentities: """
              "sip:carol@oma.example":
                defaults: { sameEnterprise: block, federated: allow, publicCloud: polite-block }

            """), mapper: Self.mapper)
        s.run()
        let final = try #require(s.edge.requests.last { $0.method == .notify })
        #expect(try final.headers.subscriptionState?.state == .terminated)
        #expect(try final.headers.subscriptionState?.reason == "rejected")
        let unsubscribe = try #require(s.kamailio.requests.last { $0.method == .subscribe && $0.headers.callID == leg.headers.callID })
        #expect(try unsubscribe.headers.expires == 0)
    }

    // MARK: A watcher waiting for its presentity's owner (`confirm`, RFC 5025 §3.2.1)

    /// carol@oma.example's defaults with `sameEnterprise` (bob's network) set to `handling`.
    static func carol(_ handling: String) -> String {
        """
          "sip:carol@oma.example":
            defaults: { sameEnterprise: \(handling), federated: allow, publicCloud: polite-block }

        """
    }

    /// A gateway where carol's owner has not decided on bob: bob's PIDF SUBSCRIBE is answered
    /// with a pending dialog (RFC 6665 §4.2.1.3) and no OMA subscription is made for it.
    static func bobWaitsForCarol() throws -> Setup {
        var yaml = GatewayConfiguration.defaultYAML
        yaml = yaml.replacingOccurrences(of: "presentities:\n", with: "presentities:\n" + carol("confirm"))
        let s = try Setup(yaml: yaml)
        s.edge.send(try EdgeSecurityTests.bobSubscribesToCarol(id: "cf1"), to: Setup.enterpriseSide)
        s.run()
        #expect(s.edge.responses.contains { $0.statusCode == 200 })
        let first = try #require(s.edge.requests.last { $0.method == .notify })
        #expect(try first.headers.subscriptionState?.state == .pending)
        #expect(first.body.isEmpty)
        #expect(!s.kamailio.requests.contains { $0.method == .subscribe })
        return s
    }

    @Test func aWaitingWatcherTheOwnerNowAllowsIsSubscribedAndActivatedWithTheState() throws {
        let s = try Self.bobWaitsForCarol()
        s.runtime.reconfigure(try Self.configuration(presentities: Self.carol("allow")), mapper: Self.mapper)
        s.run()
        let subscribe = try #require(s.kamailio.requests.first { $0.method == .subscribe })
        #expect(subscribe.uri.description == "sip:carol@oma.example")
        #expect(try subscribe.headers.from?.uri.description == "sip:bob@contoso.com")
        // Nothing more for bob until the OMA side has spoken.
        #expect(s.edge.requests.count { $0.method == .notify } == 1)
        s.kamailio.send(.response(SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "k1", headers: [
            (.contact, "<sip:127.0.0.1:5070>"), (.expires, "600"),
        ])), to: Setup.omaSide)
        s.kamailio.send(try EdgeSecurityTests.notify(for: subscribe, cseq: 1), to: Setup.omaSide)
        s.run(1)
        let active = try #require(s.edge.requests.last { $0.method == .notify })
        #expect(try active.headers.subscriptionState?.state == .active)
        let pidf = try PIDFDocument(bytes: active.body)
        #expect(pidf.tuples.first?.status.basic == .open)
        #expect(s.edge.requests.count { $0.method == .notify } == 2)
    }

    @Test func aWaitingWatcherTheOwnerNowBlocksIsTerminatedRejectedWithoutAnOMASubscription() throws {
        let s = try Self.bobWaitsForCarol()
        s.runtime.reconfigure(try Self.configuration(presentities: Self.carol("block")), mapper: Self.mapper)
        s.run()
        let final = try #require(s.edge.requests.last { $0.method == .notify })
        #expect(try final.headers.subscriptionState?.state == .terminated)
        #expect(try final.headers.subscriptionState?.reason == "rejected")
        #expect(!s.kamailio.requests.contains { $0.method == .subscribe })
        #expect(s.runtime.bridgedSubscriptions(uri: "sip:carol@oma.example", side: nil).isEmpty)
    }

    @Test func aWaitingWatcherTheOwnerNowPolitelyBlocksIsActivatedAndCannotTellFromTheOMAState() throws {
        let s = try Self.bobWaitsForCarol()
        s.runtime.reconfigure(try Self.configuration(presentities: Self.carol("polite-block")), mapper: Self.mapper)
        s.run()
        let active = try #require(s.edge.requests.last { $0.method == .notify })
        #expect(try active.headers.subscriptionState?.state == .active)
        #expect(!active.body.isEmpty)
        // The leg is made (a later allow shows the state), and carol's state changes nothing bob sees.
        let subscribe = try #require(s.kamailio.requests.first { $0.method == .subscribe })
        s.kamailio.send(.response(SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "k1", headers: [
            (.contact, "<sip:127.0.0.1:5070>"), (.expires, "600"),
        ])), to: Setup.omaSide)
        s.kamailio.send(try EdgeSecurityTests.notify(for: subscribe, cseq: 1), to: Setup.omaSide)
        s.run(1)
        #expect(s.edge.requests.count { $0.method == .notify } == 2)
        // A later allow shows her state.
        s.runtime.reconfigure(try Self.configuration(presentities: Self.carol("allow")), mapper: Self.mapper)
        s.run()
        let shown = try #require(s.edge.requests.last { $0.method == .notify })
        #expect(try PIDFDocument(bytes: shown.body).tuples.first?.status.basic == .open)
    }

    @Test func aWaitingWatcherStaysPendingWhileTheOwnerStillConfirms() throws {
        let s = try Self.bobWaitsForCarol()
        s.runtime.reconfigure(try Self.configuration(presentities: Self.carol("confirm")), mapper: Self.mapper)
        s.run()
        #expect(s.edge.requests.count { $0.method == .notify } == 1)
        #expect(!s.kamailio.requests.contains { $0.method == .subscribe })
    }
}
