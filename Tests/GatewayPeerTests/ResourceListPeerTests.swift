import Foundation
import MSPresenceEvents
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing

/// Resource lists served to OMA watchers (RFC 4662) with real peers: a sipp watcher subscribes to
/// a list of two enterprise users through Kamailio (the OMA proxy); the enterprise edge is a UDP
/// socket of the test. The list's NOTIFYs carry two PIDF documents, more than the 1300 bytes
/// RFC 3261 §18.1.1 allows over UDP: the gateway listens on UDP and TCP on the OMA side,
/// Kamailio relays to it over TCP, and the dialog's Contact is the TCP one, so the refresh and
/// the unsubscribe come back over TCP too.
@Suite(.serialized) struct ResourceListPeerTests {
    static let bob = "sip:bob@contoso.com"
    static let carol = "sip:carol@contoso.com"

    static func categories(_ uri: String, _ availability: UInt32, at second: Int) -> CategoriesDocument {
        CategoriesDocument(uri: uri, categories: [
            Category(name: .state, instance: 1, publishTime: "2026-11-26T10:00:\(10 + second).000",
                     payload: .state(MSState(type: .aggregateState, availability: availability)))
        ])
    }

    @Test func aSippWatcherOfAListThroughKamailio() async throws {
        let edge = try LoopbackDatagramPeer()
        var options = GatewayPeers.Options()
        options.omaTCP = true
        options.extra = """
            resource-lists:
              "sip:team@contoso.com": ["\(Self.bob)", "\(Self.carol)"]
            """
        try await GatewayPeers.with(edgePort: edge.port, options: options) { peers in
            // The subscription, held 3 s (-d), a refresh, the unsubscribe; sipp answers the NOTIFYs.
            let watcher = Task {
                try await Sipp.run(
                    scenario: PeerAssets.scenario("list-watcher.xml"), remote: peers.omaSide,
                    keys: ["watcher": "sip:dave@oma.example", "resource": "sip:team@contoso.com"],
                    timeLimit: 60, extra: ["-aa", "-d", "3000"])
            }
            // Each member's batch dialog is answered with its state in the 200 OK ([MS-PRES] §2.2.2.4.2).
            var legs: [String: SIPRequest] = [:]
            var tags: [String: String] = [:]  // Call-ID → the edge's tag in that dialog
            let deadline = Date().addingTimeInterval(10)
            while legs.count < 2, Date() < deadline {
                for request in await edge.receive(for: 0.1).compactMap(\.request)
                where request.method == .subscribe && legs[request.uri.description] == nil {
                    legs[request.uri.description] = request
                    tags[request.headers.callID ?? ""] = "edge-\(legs.count)"
                    let uri = request.uri.description
                    let body = BatchSubscribeResponse(
                        list: RLMIList(uri: "sip:dave@oma.example"),
                        categories: [Self.categories(uri, uri == Self.bob ? 3500 : 6500, at: legs.count)]
                    ).multipart(boundary: "edge")
                    edge.answer(request, to: peers.enterprisePort, toTag: tags[request.headers.callID ?? ""], extra: """
                        Expires: 600
                        Event: presence
                        Require: eventlist
                        Subscription-State: active;expires=600
                        ms-piggyback-cseq: 1
                        Content-Type: \(BatchCategorySubscription.multipartContentType(boundary: "edge"))

                        """, body: body.bytes)
                }
            }
            #expect(Set(legs.keys) == [Self.bob, Self.carol])
            // Carol becomes available a second later.
            try await Task.sleep(nanoseconds: 1_000_000_000)
            let carol = try #require(legs[Self.carol])
            let from = try #require(try carol.headers.from)
            edge.send("""
                BENOTIFY sip:gateway@127.0.0.1 SIP/2.0
                Via: SIP/2.0/UDP \(edge.hostPort);branch=z9hG4bKrlc2;rport
                Max-Forwards: 70
                From: <\(Self.carol)>;tag=\(tags[carol.headers.callID ?? ""] ?? "")
                To: <\(from.uri)>;tag=\(from.tag ?? "")
                Call-ID: \(carol.headers.callID ?? "")
                CSeq: 2 BENOTIFY
                Event: presence
                Subscription-State: active;expires=600
                Content-Type: application/msrtc-event-categories+xml

                """, body: Self.categories(Self.carol, 3500, at: 5).serialized(), to: peers.enterprisePort)
            // The members' unsubscribes: answered, each followed by its dialog's final NOTIFY
            // (RFC 6665 §4.1.2.3).
            var ended = 0
            while ended < 2, Date() < deadline.addingTimeInterval(30) {
                for request in await edge.receive(for: 0.2).compactMap(\.request)
                where request.method == .subscribe && request.headers[.expires] == "0" {
                    let dialogTag = try #require(tags[request.headers.callID ?? ""])
                    edge.answer(request, to: peers.enterprisePort, toTag: dialogTag, extra: "Expires: 0\n")
                    let from = try #require(try request.headers.from)
                    edge.send("""
                        NOTIFY sip:gateway@127.0.0.1 SIP/2.0
                        Via: SIP/2.0/UDP \(edge.hostPort);branch=z9hG4bKrle\(ended);rport
                        Max-Forwards: 70
                        From: <\(request.uri)>;tag=\(dialogTag)
                        To: <\(from.uri)>;tag=\(from.tag ?? "")
                        Call-ID: \(request.headers.callID ?? "")
                        CSeq: 3 NOTIFY
                        Event: presence
                        Subscription-State: terminated;reason=timeout

                        """, to: peers.enterprisePort)
                    ended += 1
                }
            }
            let run = try await watcher.value
            #expect(run.succeeded, "watcher: \(run)")

            let notifies = run.receivedRequests("NOTIFY")
            let lists = try notifies.map { notify in
                #expect(try notify.headers.require.contains("eventlist"))
                let body = try #require(try SIPMessage.request(notify).multipartBody())
                return (try RLMIList(bytes: try #require(body.parts.first).body), body.parts.dropFirst().map(\.body))
            }
            try #require(lists.count >= 3, "NOTIFYs: \(notifies.count)")
            // RFC 4662 §5.2: full state first, version 0, then one higher in each.
            #expect(lists.map(\.0.version) == (0..<UInt32(lists.count)).map { $0 })
            #expect(lists[0].0.fullState && lists[0].0.resources.map(\.uri) == [Self.bob, Self.carol])
            let first = try lists[0].1.map { try PIDFDocument(bytes: $0) }
            #expect(first.map(\.entity) == [Self.bob, Self.carol])
            #expect(!lists[1].0.fullState && lists[1].0.resources.map(\.uri) == [Self.carol])
            #expect(String(decoding: try #require(lists[1].1.first), as: UTF8.self).contains("<basic>open</basic>"))
            // The refresh brought full state again; the last NOTIFY ended the subscription.
            #expect(lists.dropFirst(2).allSatisfy { $0.0.fullState })
            #expect(notifies.last?.headers[.subscriptionState]?.hasPrefix("terminated") == true)
            // Every NOTIFY came through Kamailio.
            #expect(notifies.allSatisfy { (try? $0.headers.via)?.first?.port == peers.kamailio.port })
            let status = try await peers.status { $0.isIdle }
            #expect(status.isIdle, "subscriptions left: \(status)")
        }
    }
}
