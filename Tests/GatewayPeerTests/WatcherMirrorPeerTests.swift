import Foundation
import MSPresenceEvents
import PeerTestSupport
import PresenceDocuments
import SIPMessages
import Testing

/// Watchers at the OMA presence server (docs/flows.md, "Watchers at the OMA presence server"),
/// with real Kamailio (`presence`, `presence_xml` with `presence.winfo`) and sipp: alice is
/// linked with `publish-to-oma` and `mirror-watchers`, so the gateway publishes her enterprise
/// state to Kamailio and subscribes to her watcher information there. Dave watches her at
/// Kamailio, never through the gateway; Kamailio lists him, and the gateway subscribes into the
/// enterprise from him with the subscriber-list context ([MS-PRES] §2.2.2.4.1); once he
/// unsubscribes, the gateway unsubscribes that dialog.
@Suite(.serialized) struct WatcherMirrorPeerTests {
    @Test func anOMAWatcherAtTheServerJoinsTheEnterpriseSubscriberList() async throws {
        // Two dialogs at the edge: alice's own watch (flow 4) and dave's stand-in.
        let edge = (scenario: "enterprise-edge.xml", keys: ["avail1": "3500", "avail2": "6500", "expires": "600"], calls: 2,
                    pause: 500)
        var options = GatewayPeers.Options(enterpriseTCP: true)
        options.linkedIdentities = """
              - { oma: "sip:alice@oma.example", enterprise: "sip:alice@contoso.com", publish-to-oma: true, mirror-watchers: true }
            """
        var edgeRun: Sipp.Run?
        try await GatewayPeers.with(edge: edge, options: options) { peers in
            // The gateway's winfo subscription is at Kamailio before dave subscribes.
            let winfo = try await Self.waitFor(within: 10) {
                peers.kamailio.subscribeLines.contains { $0.contains("to=sip:alice@oma.example ") && $0.contains("presence.winfo") }
            }
            #expect(winfo, "no presence.winfo SUBSCRIBE reached Kamailio:\n\(peers.kamailio.subscribeLines.joined(separator: "\n"))")
            let daveRun = try await Sipp.run(
                scenario: PeerAssets.scenario("watcher.xml"), remote: peers.omaSide,
                keys: ["watcher": "sip:dave@oma.example", "resource": "sip:alice@oma.example",
                       "accept": "application/pidf+xml", "event": "presence"],
                timeLimit: 60, extra: ["-d", "4000", "-set", "notifies", "1"])
            #expect(daveRun.succeeded, "dave at Kamailio: \(daveRun)")
            // His unsubscribe reaches the gateway as a full list without him (RFC 3858 §4.4): it
            // unsubscribes his stand-in, before the shutdown unsubscribes alice's own watch.
            try await Task.sleep(nanoseconds: 2_000_000_000)
            await peers.shutdown()
            edgeRun = try await #require(peers.edge).finish()
        }
        let run = try #require(edgeRun)
        let fromDave = run.receivedRequests("SUBSCRIBE").filter {
            ((try? $0.headers.from) ?? nil)?.uri.description == "sip:dave@oma.example"
        }
        let first = try #require(fromDave.first, "no SUBSCRIBE from dave reached the edge: \(run)")
        let contexts = try BatchSubscribe(bytes: first.body).actions.flatMap(\.resources).map(\.context)
        #expect(contexts == [BatchSubscribe.Resource.addedAsWatcher], "\(contexts)")
        let subscribes = run.receivedRequests("SUBSCRIBE")
        let daveLeft = subscribes.firstIndex {
            ((try? $0.headers.from) ?? nil)?.uri.description == "sip:dave@oma.example"
                && $0.headers[SIPHeaderName.expires] == "0"
        }
        let aliceLeft = subscribes.firstIndex {
            ((try? $0.headers.from) ?? nil)?.uri.description == "sip:alice@oma.example"
                && $0.headers[SIPHeaderName.expires] == "0"
        }
        let left = try #require(daveLeft, "dave's stand-in was not unsubscribed: \(run)")
        let shutdown = try #require(aliceLeft, "alice's watch was not unsubscribed at shutdown: \(run)")
        #expect(left < shutdown, "dave's stand-in was unsubscribed only at shutdown: \(run)")
        #expect(first.uri.description == "sip:alice@contoso.com" || String(decoding: first.body, as: UTF8.self).contains("sip:alice@contoso.com"))
    }

    /// Polls `condition` every 100 ms for at most `seconds`; whether it came true.
    static func waitFor(within seconds: Double, _ condition: () -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        return condition()
    }
}
