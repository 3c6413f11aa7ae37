import Foundation
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing

/// The gateway against real peers (docs/testing.md), all on 127.0.0.1: Kamailio as the OMA domain
/// (`Peers/kamailio`), sipp playing the enterprise side with the seed's §4 messages
/// (`Peers/sipp`). Every expectation is on what a peer actually received (sipp's `-trace_msg`,
/// Kamailio's body log), checked against the RFCs and the §3.7.5.4 / §3.7.5.5 tables in
/// `Mappings/`, never against the gateway's own output.
///
/// A missing sipp or Kamailio fails the tests (scripts/setup.sh installs them; CI must not pass
/// without them). The suite runs serialized: each test starts its own peers on ports chosen free.
@Suite(.serialized)
struct GatewayPeerTests {
    static let gruu = "sip:server3.contoso.com@contoso.com;gruu;opaque=srvr:HomeServer:dL8cwxBrTuG8eC4-Q_GNGAAA"

    init() throws {
        _ = try Sipp.executable()
        guard PeerAssets.kamailioInstalled else {
            throw PeerError("Kamailio with presence and SQLite modules is not installed (bash scripts/setup.sh)")
        }
    }

    /// Dave, in the OMA domain, watches Bob through Kamailio: watcher.xml holds the subscription
    /// `hold` milliseconds, waiting for `notifies` NOTIFYs; its run must succeed.
    static func daveWatchesBob(
        _ peers: GatewayPeers, accept: String = "application/pidf+xml", event: String = "presence", hold: Int,
        notifies: Int = 2, timeLimit: TimeInterval = 60
    ) async throws -> Sipp.Run {
        let watcher = try await Sipp.run(scenario: PeerAssets.scenario("watcher.xml"), remote: peers.omaSide,
                                         keys: ["watcher": "sip:dave@oma.example", "resource": "sip:bob@contoso.com",
                                                "accept": accept, "event": event],
                                         timeLimit: timeLimit, extra: ["-d", String(hold), "-set", "notifies", String(notifies)])
        #expect(watcher.succeeded, "OMA watcher: \(watcher)")
        return watcher
    }

    /// Publishes `activity` for `user`@oma.example to Kamailio (RFC 3903).
    static func publish(_ peers: GatewayPeers, user: String, activity: String, note: String = "from the OMA side") async throws {
        let run = try await Sipp.run(scenario: PeerAssets.scenario("oma-publish.xml"), remote: peers.omaSide,
                                     keys: ["user": user, "activity": activity, "note": note], timeLimit: 20)
        #expect(run.succeeded, "PUBLISH to Kamailio: \(run)")
    }

    // MARK: OMA → enterprise (flow 1)

    /// [MS-PRES] §3.7.5.4 rows 4 and 5: an OMA presentity published "busy" (RFC 4480 §3.2) is
    /// seen by an enterprise watcher at an availability in 6000–7499 whose token is not
    /// on-the-phone; "on-the-phone" gives the same band with the on-the-phone token. Batched
    /// (§4.5) and single (§4.6) category SUBSCRIBEs alike. The watcher's refresh is answered, the
    /// gateway refreshes its PIDF subscription at Kamailio, and the watcher's unsubscribe ends the
    /// OMA subscription too (Kamailio sees Expires 0).
    @Test(arguments: [("busy", "enterprise-watcher.xml"), ("on-the-phone", "enterprise-watcher-single.xml")])
    func omaPublishReachesEnterpriseWatcherInTheBusyBand(activity: String, scenario: String) async throws {
        try await GatewayPeers.with(options: .init(defaultExpires: 6)) { peers in
            try await Self.publish(peers, user: "carol", activity: activity)
            // The watcher holds the subscription 7 s (-d): longer than the 6 s the gateway asks of Kamailio.
            let run = try await Sipp.run(scenario: PeerAssets.scenario(scenario), remote: peers.enterpriseSide,
                                         keys: ["watcher": "sip:alice@contoso.com", "resource": "sip:carol@oma.example"],
                                         timeLimit: 60, extra: ["-d", "7000"])
            #expect(run.succeeded, "enterprise watcher: \(run)")
            let notifications = run.receivedResponses(to: "SUBSCRIBE").filter { $0.statusCode == 200 }.map(SIPMessage.response)
                + run.receivedRequests("BENOTIFY").map(SIPMessage.request) + run.receivedRequests("NOTIFY").map(SIPMessage.request)
            let state = try #require(aggregateState(notifications.flatMap(categoriesDocuments), of: "sip:carol@oma.example"),
                                     "no state category for carol in \(run)")
            let table = try MappingTable("availability-pidf.tsv")
            let rows = table.rows(availability: state.availability, token: state.token)
            // The published activity and <basic>open</basic> are what the §3.7.5.4 row gives back.
            #expect(rows.contains { $0["basic"] == "open" && $0["rpid_activity"] == activity },
                    "availability \(state.availability) token \(state.token ?? "-") is not a §3.7.5.4 row for open + \(activity)")
            #expect((6000...7499).contains(state.availability))
            if activity == "on-the-phone" { #expect(state.token == "on-the-phone") } else { #expect(state.token != "on-the-phone") }
            // Refresh and unsubscribe crossed to the OMA side.
            let status = try await peers.status { $0.isIdle }
            #expect(status.isIdle, "subscriptions left: \(status)")
            let subscribes = peers.kamailioSubscribes(for: "sip:carol@oma.example")
            #expect(subscribes.filter { !$0.contains("expires=[0]") }.count >= 2, "no refresh at Kamailio:\n\(subscribes.joined(separator: "\n"))")
            #expect(subscribes.contains { $0.contains("expires=[0]") }, "no unsubscribe at Kamailio:\n\(subscribes.joined(separator: "\n"))")
        }
    }

    // MARK: enterprise → OMA (flow 2)

    /// An enterprise state change to 15500 reaches a watcher in the OMA domain (subscribed through
    /// Kamailio, which record-routes): in PIDF as open + away ([MS-PRES] §3.7.5.4 row 9), in
    /// msrtc.pidf as avail 15500 with aggregates 300/100 (§3.7.5.5 row 9). Both sides refresh
    /// (the gateway refreshes the 6 s the edge grants) and the watcher's unsubscribe reaches the
    /// enterprise as Expires 0.
    @Test(arguments: ["application/pidf+xml", "text/xml+msrtc.pidf"])
    func enterpriseAwayReachesOMAWatcher(accept: String) async throws {
        let edge = (scenario: "enterprise-edge.xml", keys: ["avail1": "3500", "avail2": "15500", "expires": "6"], calls: 1, pause: 1500)
        try await GatewayPeers.with(edge: edge) { peers in
            let watcher = try await Self.daveWatchesBob(peers, accept: accept, hold: 7000)
            let edgeRun = try await #require(peers.edge).finish()
            #expect(edgeRun.succeeded, "enterprise edge: \(edgeRun)")

            // What the watcher received through Kamailio.
            // In-dialog requests follow the Record-Route: every NOTIFY came through Kamailio.
            let notifies = watcher.receivedRequests("NOTIFY")
            #expect(notifies.allSatisfy { (try? $0.headers.via)?.first?.port == peers.kamailio.port })
            let changed = try #require(notifies.last { String(decoding: $0.body, as: UTF8.self).contains(accept == "application/pidf+xml" ? "away" : "15500") })
            #expect(try changed.headers.contentType?.mediaType == accept)
            if accept == "application/pidf+xml" {
                let row = try #require(try MappingTable("availability-pidf.tsv").rows(availability: 15500, token: nil).first)
                let pidf = try PIDFDocument(bytes: changed.body)
                #expect(pidf.entity == "sip:bob@contoso.com")
                #expect(pidf.tuples.contains { $0.status.basic?.rawValue == row["basic"] })
                let activities = pidf.persons.flatMap(\.rpid.activities).flatMap(\.tokens) + pidf.tuples.flatMap(\.rpid.activities).flatMap(\.tokens)
                #expect(activities.contains(try #require(row["rpid_activity"])), "activities \(activities)")
            } else {
                let row = try #require(try MappingTable("availability-msrtc.tsv").rows(availability: 15500, token: nil).first)
                let msrtc = try MSRTCPresentity(bytes: changed.body)
                #expect(msrtc.states.contains { $0.avail.map(String.init) == row["avail"] })
                #expect(msrtc.availabilityAggregate.map(String.init) == row["availability_aggregate"])
                #expect(msrtc.activityAggregate.map(String.init) == row["activity_aggregate"])
            }

            // What the enterprise side received: the watcher's identity, a refresh, the unsubscribe.
            let subscribes = edgeRun.receivedRequests("SUBSCRIBE")
            #expect(try subscribes.first?.headers.from?.uri.description == "sip:dave@oma.example")
            #expect(subscribes.dropFirst().contains { (try? $0.headers.expires).flatMap { $0 } ?? 0 > 0 }, "no refresh reached the enterprise")
            #expect(try subscribes.last?.headers.expires == 0, "no unsubscribe reached the enterprise")
            let status = try await peers.status { $0.isIdle }
            #expect(status.isIdle, "subscriptions left: \(status)")
        }
    }

    /// RFC 6446 rate control through Kamailio: the watcher asks for `max-rate=0.3` (one NOTIFY
    /// per 3.3 s at most); the
    /// enterprise changes Bob's state twice half a second after the first (6500 busy, then 15500
    /// away). The first change is held, and when the 3.3 seconds end the watcher gets the state
    /// as it is then, away ([MS-PRES] §3.7.5.4 row 9): the busy state is never sent.
    @Test func maxRateHoldsChangesForAnOMAWatcher() async throws {
        let edge = (scenario: "enterprise-edge-burst.xml", keys: ["avail1": "3500", "avail2": "6500", "avail3": "15500", "expires": "600"],
                    calls: 1, pause: 500)
        try await GatewayPeers.with(edge: edge) { peers in
            let started = Date()
            let watcher = try await Self.daveWatchesBob(peers, event: "presence;max-rate=0.3", hold: 1000)
            let edgeRun = try await #require(peers.edge).finish()
            #expect(edgeRun.succeeded, "enterprise edge: \(edgeRun)")
            let bodies = watcher.receivedRequests("NOTIFY").map { String(decoding: $0.body, as: UTF8.self) }
            #expect(bodies.count >= 2, "\(bodies)")
            #expect(bodies.first?.contains("<basic>open</basic>") == true)
            #expect(bodies.dropFirst().first?.contains("away") == true, "\(bodies)")
            #expect(!bodies.contains { $0.contains("busy") }, "a held change went out: \(bodies)")
            // The second NOTIFY waited for the interval: the run took at least the 3.3 seconds
            // and the one-second hold.
            #expect(Date().timeIntervalSince(started) >= 4)
            let status = try await peers.status { $0.isIdle }
            #expect(status.isIdle, "subscriptions left: \(status)")
        }
    }

    /// RFC 6446 §7 through Kamailio: the watcher asks for `adaptive-min-rate=0.016` (one NOTIFY
    /// in 62.5 s at first, §7.4) and Bob's state does not change: the gateway sends it again
    /// about a minute after the first NOTIFY, giving the rate back in Subscription-State.
    @Test func adaptiveMinRateSendsTheStateAgainForAnOMAWatcher() async throws {
        let edge = (scenario: "enterprise-edge.xml", keys: ["avail1": "3500", "avail2": "3500", "expires": "600"],
                    calls: 1, pause: 1000)
        try await GatewayPeers.with(edge: edge) { peers in
            let started = Date()
            let watcher = try await Self.daveWatchesBob(peers, event: "presence;adaptive-min-rate=0.016", hold: 500, timeLimit: 100)
            let edgeRun = try await #require(peers.edge).finish()
            #expect(edgeRun.succeeded, "enterprise edge: \(edgeRun)")
            let notifies = watcher.receivedRequests("NOTIFY")
            try #require(notifies.count >= 2, "\(notifies.count) NOTIFYs")
            // The same state twice: the second is the adaptive minimum rate's, not a change.
            #expect(notifies[0].body == notifies[1].body)
            let state = try #require(try notifies[1].headers.subscriptionState)
            #expect(state.parameters.value("adaptive-min-rate") == "0.016", "\(state)")
            #expect(Date().timeIntervalSince(started) >= 62)
            let status = try await peers.status { $0.isIdle }
            #expect(status.isIdle, "subscriptions left: \(status)")
        }
    }

    /// [MS-PRES] §3.4.5.1.3.1: a batch response that lists the resource as `resubscribe` with a
    /// `poolFqdn` makes the gateway send its next category SUBSCRIBE for that resource to the pool
    /// GRUU (the seed's `sip:server3.contoso.com@contoso.com;gruu;opaque=…`), and the pool's answer
    /// reaches the OMA watcher (3500 → open, §3.7.5.4 row 2).
    @Test func poolFqdnResubscribeGoesToThePoolGRUU() async throws {
        let edge = (scenario: "enterprise-edge-pool.xml", keys: ["avail1": "3500", "expires": "600", "pool": Self.gruu], calls: 2, pause: 0)
        try await GatewayPeers.with(edge: edge) { peers in
            let watcher = try await Self.daveWatchesBob(peers, hold: 500, notifies: 1, timeLimit: 40)
            let edgeRun = try await #require(peers.edge).finish()
            let subscribes = edgeRun.receivedRequests("SUBSCRIBE")
            let first = try #require(subscribes.first)
            #expect(first.uri.description != Self.gruu)
            let toPool = try #require(subscribes.first { $0.uri.description == Self.gruu }, "no SUBSCRIBE to the pool GRUU:\n\(edgeRun)")
            let batch = try BatchSubscribe(bytes: toPool.body)
            #expect(batch.actions.contains { $0.resources.contains { $0.uri == "sip:bob@contoso.com" } })
            #expect(try toPool.headers.from?.uri.description == "sip:dave@oma.example")
            let status = try await peers.status { $0.omaWatches == 0 && $0.enterpriseWatches == 0 }
            #expect(status.omaWatches == 0)
        }
    }

    /// Over TCP toward the enterprise, where `subscriber-list` is on by default: the gateway's
    /// first category SUBSCRIBE for an OMA watcher asks, for the resource, that the watcher join
    /// its subscriber list ([MS-PRES] §2.2.2.4.1, §3.6); its refreshes and unsubscribe do not. The
    /// SUBSCRIBE is past 1,300 bytes, which TCP carries; the watcher gets its state.
    @Test func anOMAWatcherAsksToJoinTheSubscriberListOverTCP() async throws {
        let edge = (scenario: "enterprise-edge.xml", keys: ["avail1": "3500", "avail2": "15500", "expires": "6"], calls: 1, pause: 1500)
        try await GatewayPeers.with(edge: edge, options: GatewayPeers.Options(enterpriseTCP: true)) { peers in
            let watcher = try await Self.daveWatchesBob(peers, hold: 7000)
            let edgeRun = try await #require(peers.edge).finish()
            #expect(edgeRun.succeeded, "enterprise edge: \(edgeRun)")
            let subscribes = edgeRun.receivedRequests("SUBSCRIBE")
            let first = try #require(subscribes.first, "no SUBSCRIBE reached the edge: \(edgeRun)")
            #expect(SIPMessage.request(first).serialized().count > 1300)
            let contexts = try BatchSubscribe(bytes: first.body).actions.flatMap(\.resources).map(\.context)
            #expect(contexts == [BatchSubscribe.Resource.addedAsWatcher], "\(contexts)")
            let later = subscribes.dropFirst()
            #expect(!later.isEmpty, "no refresh or unsubscribe: \(edgeRun)")
            for request in later where !request.body.isEmpty {
                #expect(try BatchSubscribe(bytes: request.body).actions.flatMap(\.resources).allSatisfy { $0.context == nil })
            }
            #expect(watcher.receivedRequests("NOTIFY").contains { String(decoding: $0.body, as: UTF8.self).contains("away") })
        }
    }

    // MARK: OMA publication → enterprise SERVICE publish (flow 4)

    /// An OMA PUBLISH (RFC 3903) of a linked identity served with `publish-to-enterprise` reaches
    /// the enterprise as a SERVICE category publish for the enterprise identity ([MS-PRES]
    /// §2.2.2.2, §4.2.1): the state as a `machineState` in containers 2 and 3 at the availability the
    /// reverse table gives RPID busy (`pidf-availability.tsv`), the note in 200/300/400.
    @Test func linkedIdentityPublishReachesTheEnterpriseAsServicePublish() async throws {
        let edge = (scenario: "enterprise-service.xml", keys: [String: String](), calls: 1, pause: 0)
        var options = GatewayPeers.Options(enterpriseTCP: true)
        options.linkedIdentities = """
              - { oma: "sip:frank@oma.example", enterprise: "sip:frank@contoso.com", publish-to-enterprise: true, publish-to-oma: false }
            """
        try await GatewayPeers.with(edge: edge, options: options) { peers in
            // Straight to the gateway: it is the RFC 3903 presence server of frank@oma.example.
            let publish = try await Sipp.run(scenario: PeerAssets.scenario("oma-publish.xml"), remote: "127.0.0.1:\(peers.omaPort)",
                                             keys: ["user": "frank", "activity": "busy", "note": "Out to lunch"], timeLimit: 20)
            #expect(publish.succeeded, "PUBLISH to the gateway: \(publish)")
            let edgeRun = try await #require(peers.edge).finish()
            #expect(edgeRun.succeeded, "enterprise edge: \(edgeRun)")
            let service = try #require(edgeRun.receivedRequests("SERVICE").first, "no SERVICE reached the enterprise: \(edgeRun)")
            #expect(service.uri.description == "sip:frank@contoso.com")
            #expect(try service.headers.contentType?.mediaType == "application/msrtc-category-publish+xml")
            let document = try CategoryPublish(bytes: service.body)
            let expected = try #require(try MappingTable("pidf-availability.tsv").rows.first {
                $0["basic"] == "open" && $0["activity"] == "busy" && $0["user_input"] == "*"
            }?["availability"])
            let states = document.publications.filter { $0.categoryName == .state }
            #expect(Set(states.map(\.container)).isSuperset(of: [2, 3]), "state containers: \(states.map(\.container))")
            for state in states {
                guard case .state(let value)? = state.payload else { Issue.record("state publication without state"); continue }
                #expect(value.availability.map(String.init) == expected)
            }
            let notes = document.publications.filter { $0.categoryName == .note }
            #expect(Set(notes.map(\.container)).isSuperset(of: [200, 300, 400]), "note containers: \(notes.map(\.container))")
            #expect(String(decoding: service.body, as: UTF8.self).contains("Out to lunch"))
        }
    }

    // MARK: polite blocking

    /// A politely blocked enterprise watcher (RFC 5025 sub-handling polite-block) of an OMA
    /// presentity receives exactly what a watcher of that presentity received before it ever
    /// published, byte for byte, with the same headers except dialog identifiers; an allowed
    /// watcher subscribing after the same publication sees it (the publication did reach the
    /// gateway). Compared in every output format: categories, msrtc.pidf ([MS-PRES] §4.11) and
    /// PIDF (§4.10).
    @Test func politelyBlockedWatcherSeesTheNeverPublishedBodies() async throws {
        let rules = NSTemporaryDirectory() + "gwpeers-rules-\(UInt32.random(in: 0...UInt32.max)).xml"
        try """
            <?xml version="1.0" encoding="UTF-8"?>
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules">
              <cr:rule id="ex"><cr:conditions><cr:identity><cr:one id="sip:mallory@contoso.com"/></cr:identity></cr:conditions>
                <cr:actions><pr:sub-handling>polite-block</pr:sub-handling></cr:actions></cr:rule>
            </cr:ruleset>
            """.write(toFile: rules, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        // Only mallory has a rule; everyone else gets the network default (sameEnterprise: allow).
        // No allow-all rule: matching rules combine to the largest sub-handling (RFC 4745 §10.2),
        // so one would lift mallory's polite-block to allow.
        let options = GatewayPeers.Options(presentities: "  \"sip:erin@oma.example\": { pres-rules: \(rules) }")
        try await GatewayPeers.with(options: options) { peers in
            // First notification per format: (message, comparable body).
            func categories(_ watcher: String) async throws -> (SIPMessage, [UInt8]) {
                let run = try await Sipp.run(scenario: PeerAssets.scenario("enterprise-watcher.xml"), remote: peers.enterpriseSide,
                                             keys: ["watcher": watcher, "resource": "sip:erin@oma.example"], timeLimit: 40, extra: ["-d", "0"])
                #expect(run.succeeded, "\(watcher): \(run)")
                let ok = try #require(run.receivedResponses(to: "SUBSCRIBE").first { $0.statusCode == 200 })
                let part = try #require(bodyParts(.response(ok)).first { $0.type == "application/msrtc-event-categories+xml" },
                                        "no categories in the 200 to \(watcher)")
                return (.response(ok), part.body)
            }
            func document(_ watcher: String, accept: String) async throws -> (SIPMessage, [UInt8]) {
                let run = try await Sipp.run(scenario: PeerAssets.scenario("watcher.xml"), remote: peers.enterpriseSide,
                                             keys: ["watcher": watcher, "resource": "sip:erin@oma.example", "accept": accept, "event": "presence"],
                                             timeLimit: 40, extra: ["-d", "0", "-set", "notifies", "1"])
                #expect(run.succeeded, "\(watcher) (\(accept)): \(run)")
                let notify = try #require(run.receivedRequests("NOTIFY").first { !$0.body.isEmpty })
                return (.request(notify), notify.body)
            }
            func compare(_ format: String, _ actual: (SIPMessage, [UInt8]), _ expected: (SIPMessage, [UInt8])) {
                #expect(actual.1 == expected.1, "\(format) body differs:\n\(String(decoding: actual.1, as: UTF8.self))\n--- never published:\n\(String(decoding: expected.1, as: UTF8.self))")
                #expect(headersWithoutDialogIdentifiers(actual.0) == headersWithoutDialogIdentifiers(expected.0), "\(format) headers differ")
            }
            // erin has never published: what an allowed watcher sees (bob), before and after the
            // PUBLISH the politely blocked watcher (mallory) sees.
            let neverPublished = try await categories("sip:bob@contoso.com")
            let formats = ["text/xml+msrtc.pidf", "application/pidf+xml"]
            var neverPublishedDocuments: [String: (SIPMessage, [UInt8])] = [:]
            for accept in formats { neverPublishedDocuments[accept] = try await document("sip:bob@contoso.com", accept: accept) }
            try await Self.publish(peers, user: "erin", activity: "busy", note: "private")
            compare("categories", try await categories("sip:mallory@contoso.com"), neverPublished)
            for accept in formats {
                let expected = try #require(neverPublishedDocuments[accept])
                compare(accept, try await document("sip:mallory@contoso.com", accept: accept), expected)
            }
            // The publication is there: an allowed watcher now sees busy (§3.7.5.4 row 4 band).
            let (_, allowed) = try await categories("sip:bob@contoso.com")
            let state = aggregateState([try CategoriesDocument(bytes: allowed)], of: "sip:erin@oma.example")
            #expect(state.map { (6000...7499).contains($0.availability) } == true, "allowed watcher after PUBLISH: \(String(decoding: allowed, as: UTF8.self))")
        }
    }

    // MARK: the OMA side stops answering

    /// Kamailio is stopped while an enterprise watcher's subscription is bridged: the gateway's
    /// refresh (the OMA side granted 4 s) gets no answer, the watcher is told the resource is
    /// terminated (RLMI, [MS-PRES] §3.4.5.1.3, or Subscription-State terminated, RFC 6665
    /// §4.2.2), and nothing is left: every subscription count returns to 0.
    @Test func omaServerThatStopsAnsweringEndsEnterpriseSubscriptionsWithoutLeaks() async throws {
        try await GatewayPeers.with(options: .init(defaultExpires: 4)) { peers in
            try await Self.publish(peers, user: "carol", activity: "busy")
            let watcher = try await Sipp.start(scenario: PeerAssets.scenario("enterprise-watcher-hold.xml"), remote: peers.enterpriseSide,
                                               keys: ["watcher": "sip:alice@contoso.com", "resource": "sip:carol@oma.example"],
                                               timeLimit: 100)
            let bridged = try await peers.status { $0.omaLegs == 1 && $0.enterpriseWatches == 1 }
            #expect(bridged.omaLegs == 1, "not bridged: \(bridged)")
            await peers.kamailio.stop()
            let run = await watcher.finish()
            #expect(run.succeeded, "watcher was not told the subscription ended: \(run)")
            let received = run.receivedMessages.compactMap(\.request).filter { $0.method.description == "BENOTIFY" || $0.method.description == "NOTIFY" }
            #expect(received.contains { String(decoding: $0.body, as: UTF8.self).contains(#"state="terminated""#)
                    || (try? $0.headers.subscriptionState)?.state == .terminated })
            let status = try await peers.status(within: 40) { $0.isIdle }
            #expect(status.isIdle, "subscriptions left after the OMA side stopped answering: \(status)")
        }
    }
}
