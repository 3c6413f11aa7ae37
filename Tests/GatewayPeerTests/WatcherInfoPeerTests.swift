import Foundation
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import SIPMessages
import SIPTransport
import Testing

/// Watcher information over real sockets (RFC 3857, RFC 3858; docs/flows.md, "Watcher
/// information"): the gateway in process with its configuration in a file, the OMA proxy and the
/// enterprise edge as bare UDP sockets of the test. Mary's owner, behind the OMA proxy, watches
/// who watches her; an enterprise watcher waits for her (`confirm`), and a reload that allows it
/// reaches her at once as `approved`.
@Suite(.serialized) struct WatcherInfoPeerTests {
    typealias Gateway = AdminAPITests.Gateway

    static let mary = "sip:mary@oma.example"

    static func policy(_ handling: String) -> String {
        """
          "\(mary)":
            defaults: { sameEnterprise: \(handling), federated: allow, publicCloud: polite-block }
        """
    }

    /// Writes the configuration with Mary's `handling` and reloads it over the admin API.
    static func reload(_ gw: Gateway, _ handling: String) async throws {
        try Gateway.yaml(kamailio: gw.kamailio.port, edge: gw.edge.port, token: nil, presentities: policy(handling))
            .write(to: gw.file, atomically: true, encoding: .utf8)
        #expect(try await gw.http("POST", "/reload").0 == 200)
    }

    static func winfoSubscribe(_ gw: Gateway, from subscriber: String = mary, cseq: Int, expires: Int, toTag: String? = nil)
        -> String
    {
        """
        SUBSCRIBE \(mary) SIP/2.0
        Via: SIP/2.0/UDP \(gw.kamailio.hostPort);branch=z9hG4bKwi\(cseq)\(subscriber.count);rport
        Max-Forwards: 70
        From: <\(subscriber)>;tag=wi\(subscriber.count)
        To: <\(mary)>\(toTag.map { ";tag=\($0)" } ?? "")
        Call-ID: winfo-\(subscriber.count)@oma
        CSeq: \(cseq) SUBSCRIBE
        Contact: <sip:mary@\(gw.kamailio.hostPort)>
        Event: presence.winfo
        Accept: application/watcherinfo+xml
        Expires: \(expires)

        """
    }

    /// What the OMA proxy's socket receives for a second: the final response to a SUBSCRIBE, and
    /// the watcher information NOTIFYs (answered 200), read.
    static func received(_ gw: Gateway) async throws -> (status: Int?, toTag: String?, documents: [WatcherInfo], states: [String]) {
        let messages = await gw.kamailio.receive(for: 1)
        let response = messages.compactMap(\.response).first { (try? $0.headers.cseq)?.method == .subscribe }
        var documents: [WatcherInfo] = []
        var states: [String] = []
        for notify in messages.compactMap(\.request) where notify.method == .notify && notify.headers[.event] == "presence.winfo" {
            gw.kamailio.answer(notify, to: gw.oma)
            states.append(notify.headers[.subscriptionState] ?? "")
            if !notify.body.isEmpty {
                #expect(notify.headers[.contentType] == "application/watcherinfo+xml")
                documents.append(try WatcherInfo(bytes: notify.body))
            }
        }
        return (response?.statusCode, try response?.headers.to?.tag, documents, states)
    }

    @Test func theOwnerSeesAWaitingWatcherAndItsApprovalAfterAReload() async throws {
        let gw = try await Gateway()
        try await Self.reload(gw, "confirm")

        // Only the presentity may see its watchers (RFC 3857 §5.1.6).
        gw.kamailio.send(Self.winfoSubscribe(gw, from: "sip:eve@oma.example", cseq: 1, expires: 600), to: gw.oma)
        #expect(try await Self.received(gw).status == 403)

        gw.kamailio.send(Self.winfoSubscribe(gw, cseq: 1, expires: 600), to: gw.oma)
        let subscribed = try await Self.received(gw)
        #expect(subscribed.status == 200)
        let tag = try #require(subscribed.toTag)
        let first = try #require(subscribed.documents.first)
        #expect(first.state == .full && first.version == 0)
        #expect(first.lists == [WatcherInfo.WatcherList(resource: Self.mary, package: "presence")])

        // Carol, behind the enterprise edge, subscribes to Mary: she waits for Mary (no OMA leg).
        gw.carolSubscribes(to: Self.mary, callID: "carol-watch")
        let pending = try await Self.received(gw)
        let carol = try #require(pending.documents.first?.lists.first?.watchers.first)
        #expect(pending.documents.first?.state == .partial && pending.documents.first?.version == 1)
        #expect(carol.uri == "sip:carol@contoso.com" && carol.status == .pending && carol.event == .subscribe)

        // Mary allows her: the reload decides the waiting watcher and Mary hears it at once.
        try await Self.reload(gw, "allow")
        let approved = try await Self.received(gw)
        let entry = try #require(approved.documents.first?.lists.first?.watchers.first)
        #expect(approved.documents.first?.version == 2)
        #expect(entry.id == carol.id && entry.status == .active && entry.event == .approved)

        // Mary unsubscribes: 200 and the final NOTIFY.
        gw.kamailio.send(Self.winfoSubscribe(gw, cseq: 2, expires: 0, toTag: tag), to: gw.oma)
        let ended = try await Self.received(gw)
        #expect(ended.status == 200)
        #expect(ended.states.contains { $0.hasPrefix("terminated") })
        await gw.stop()
    }

    /// With two shards (docs/shards.md, "Across shards"), Mary's owner is told of the watchers
    /// of both: one enterprise watcher on each shard waits for her, and a reload that allows
    /// them reaches her for both at once.
    @Test func theOwnerSeesTheWatchersOfEveryShard() async throws {
        let gw = try await Gateway(presentities: Self.policy("confirm"), extra: "threads: 2")
        let map = ShardMap(count: 2)
        var users: [Int: String] = [:]
        for name in ["carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"] where users.count < 2 {
            let shard = map.shard(ofAddressOfRecord: try SIPURI("sip:\(name)@contoso.com"))
            if users[shard] == nil { users[shard] = name }
        }
        let watchers = try #require(users.count == 2 ? [users[0]!, users[1]!] : nil)

        gw.kamailio.send(Self.winfoSubscribe(gw, cseq: 1, expires: 600), to: gw.oma)
        #expect(try await Self.received(gw).status == 200)
        for user in watchers { gw.carolSubscribes(to: Self.mary, callID: "\(user)-watch", as: user) }
        var listed: [String: WatcherInfo.Watcher] = [:]
        let deadline = Date().addingTimeInterval(10)
        while listed.count < 2, Date() < deadline {
            for watcher in try await Self.received(gw).documents.flatMap({ $0.lists.flatMap(\.watchers) }) {
                listed[watcher.uri] = watcher
            }
        }
        #expect(Set(listed.keys) == Set(watchers.map { "sip:\($0)@contoso.com" }))
        #expect(listed.values.allSatisfy { $0.status == .pending })

        // Allowed: both approved, whichever shard holds them.
        try await Self.reload(gw, "allow")
        var approved: Set<String> = []
        let later = Date().addingTimeInterval(10)
        while approved.count < 2, Date() < later {
            for watcher in try await Self.received(gw).documents.flatMap({ $0.lists.flatMap(\.watchers) })
            where watcher.status == .active && watcher.event == .approved {
                approved.insert(watcher.uri)
            }
        }
        #expect(approved == Set(watchers.map { "sip:\($0)@contoso.com" }))
        await gw.stop()
    }
}
