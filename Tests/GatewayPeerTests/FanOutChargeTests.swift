import Foundation
import PresenceDocuments
import PeerTestSupport
import SIPMessages
import Testing

/// Every fan-out is charged to whoever caused it (docs/security.md, "A fan-out is charged to its
/// sender"), attacked over real sockets from unconfigured addresses (127.0.0.2 and up): a new
/// From in each request buys nothing, one sender past its share is refused while everyone else
/// is served on, and watcher information does not multiply one change into thousands of NOTIFYs.
/// The per-sender share is scaled down here (`subscriptions-per-peer` 12 and 50) so that a few
/// requests reach it; the default is 10,000.
@Suite(.serialized) struct FanOutChargeTests {
    /// Five members: the list's NOTIFY to a UDP watcher stays under 1,300 bytes (RFC 3261 §18.1.1).
    static let members = (1...5).map { "sip:m\($0)@contoso.com" }

    static func listSubscribe(from peer: LoopbackDatagramPeer, watcher: String, n: Int) -> String {
        """
        SUBSCRIBE sip:sales@contoso.com SIP/2.0
        Via: SIP/2.0/UDP \(peer.hostPort);branch=z9hG4bKfl\(n)x\(UInt32.random(in: 0...UInt32.max));rport
        Max-Forwards: 70
        From: <\(watcher)>;tag=fl\(n)
        To: <sip:sales@contoso.com>
        Call-ID: fanout-list-\(n)-\(UInt32.random(in: 0...UInt32.max))@oma
        CSeq: 1 SUBSCRIBE
        Contact: <sip:w@\(peer.hostPort)>
        Event: presence
        Supported: eventlist
        Accept: application/pidf+xml, multipart/related, application/rlmi+xml
        Expires: 600

        """
    }

    /// The final status the sender gets for its SUBSCRIBE within 2 s.
    static func finalStatus(at peer: LoopbackDatagramPeer) async -> Int? {
        let end = Date().addingTimeInterval(2)
        while end.timeIntervalSinceNow > 0 {
            if let status = await peer.receive(for: 0.2).compactMap(\.response).map(\.statusCode).first(where: { $0 >= 200 }) {
                return status
            }
        }
        return nil
    }

    @Test func aServedListFromOneSenderWithANewFromEachTimeIsChargedToTheSender() async throws {
        let gw = try await HostilePeerTests.Edge(extra: """
            resource-lists: { "sip:sales@contoso.com": [\(Self.members.map { "\"\($0)\"" }.joined(separator: ", "))] }
            limits: { subscriptions-per-peer: 12 }
            """)
        defer { Task { await gw.stop() } }
        let attacker = try LoopbackDatagramPeer(host: "127.0.0.2")
        var statuses: [Int?] = []
        for n in 1...3 {
            attacker.send(Self.listSubscribe(from: attacker, watcher: "sip:u\(n)@oma.example", n: n), to: gw.oma)
            statuses.append(await Self.finalStatus(at: attacker))
        }
        // Each list is its dialog and its 5 members: two fit the sender's 12, the third does not.
        #expect(statuses == [200, 200, 503], "\(statuses)")
        let made = Set(await gw.edge.receive(for: 1).compactMap(\.request).filter { $0.method == .subscribe }.compactMap(\.headers.callID))
        #expect(made.count <= 10, "\(made.count) subscriptions into the enterprise for one sender")
        // Another sender is served.
        let other = try LoopbackDatagramPeer(host: "127.0.0.3")
        other.send(Self.listSubscribe(from: other, watcher: "sip:v1@oma.example", n: 9), to: gw.oma)
        #expect(await Self.finalStatus(at: other) == 200)
    }

    static func batch(_ resources: [String], as user: String, from peer: LoopbackDatagramPeer) -> (String, [UInt8]) {
        let body = BatchSubscribe(uri: "sip:\(user)@contoso.com", actions: [
            BatchSubscribe.Action(kind: .subscribe, resources: resources.map { .init(uri: $0) }, categories: [.state]),
        ]).serialized()
        return ("""
            SUBSCRIBE sip:\(user)@contoso.com SIP/2.0
            Via: SIP/2.0/UDP \(peer.hostPort);branch=z9hG4bKfb\(UInt32.random(in: 0...UInt32.max));rport
            Max-Forwards: 70
            From: <sip:\(user)@contoso.com>;tag=fb1
            To: <sip:\(user)@contoso.com>
            Call-ID: fanout-batch-\(user)-\(UInt32.random(in: 0...UInt32.max))@contoso
            CSeq: 1 SUBSCRIBE
            Contact: <sip:\(user)@\(peer.hostPort)>
            Event: presence
            Accept: application/msrtc-event-categories+xml, application/rlmi+xml, multipart/related
            Supported: ms-benotify, ms-piggyback-first-notify, eventlist
            Require: adhoclist, categoryList
            Content-Type: application/msrtc-adrl-categorylist+xml

            """, body)
    }

    @Test func batchesFromOneSenderWithANewFromEachTimeAreChargedToTheSender() async throws {
        let gw = try await HostilePeerTests.Edge(extra: "limits: { subscriptions-per-peer: 50 }")
        defer { Task { await gw.stop() } }
        let attacker = try LoopbackDatagramPeer(host: "127.0.0.2")
        let resources = (1...20).map { "sip:r\($0)@oma.example" }
        for n in 1...3 {
            let (text, body) = Self.batch(resources, as: "u\(n)", from: attacker)
            attacker.send(text, body: body, to: gw.enterprise)
        }
        // Read until the paced SUBSCRIBEs stop coming (half a second with none) or 6 s pass.
        var atServer: Set<String> = []
        let paced = Date().addingTimeInterval(6)
        while Date() < paced {
            let got = await gw.kamailio.receive(for: 0.5).compactMap(\.request).filter { $0.method == .subscribe }
            atServer.formUnion(got.compactMap(\.headers.callID))
            if got.isEmpty, !atServer.isEmpty { break }
        }
        // 3 dialogs and 47 legs at most: the third batch's resources past the share are refused.
        #expect(atServer.count <= 47 && atServer.count >= 40, "\(atServer.count) SUBSCRIBEs to the OMA server for one sender")
        // The configured edge is served.
        let (text, body) = Self.batch(["sip:carol@oma.example"], as: "bob", from: gw.edge)
        gw.edge.send(text, body: body, to: gw.enterprise)
        // The attacker's legs, never answered here, are still retransmitted (RFC 3261 §17.1.2.2):
        // carol's SUBSCRIBE is looked for among them.
        var carol: SIPRequest?
        let end = Date().addingTimeInterval(2)
        while carol == nil, end.timeIntervalSinceNow > 0 {
            carol = await gw.kamailio.receive(for: 0.2).compactMap(\.request).first {
                $0.method == .subscribe && $0.uri.description == "sip:carol@oma.example"
            }
        }
        #expect(carol != nil, "the configured edge's SUBSCRIBE for carol did not reach the OMA server")
    }

    /// Past a sender's burst its fan-out is paced; another sender's subscription meanwhile does
    /// not wait behind it (scaled down: a burst of 5 and 10/s; by default 1,000 and 500/s).
    @Test func aSendersFanOutPastItsBurstIsPacedAndOthersAreNot() async throws {
        let gw = try await HostilePeerTests.Edge(extra: "limits: { fan-out-burst: 5, fan-out-rate: 10 }")
        defer { Task { await gw.stop() } }
        func subscribed(for seconds: Double) async -> Set<String> {
            Set(await gw.kamailio.receive(for: seconds).compactMap(\.request).filter { $0.method == .subscribe }
                .map(\.uri.description))
        }
        let resources = (1...20).map { "sip:p\($0)@oma.example" }
        let (text, body) = Self.batch(resources, as: "bob", from: gw.edge)
        gw.edge.send(text, body: body, to: gw.enterprise)
        let early = await subscribed(for: 0.4)
        #expect((5...9).contains(early.count), "\(early.count) SUBSCRIBEs in the first 0.4 s")
        let other = try LoopbackDatagramPeer(host: "127.0.0.2")
        let (otherText, otherBody) = Self.batch(["sip:q1@oma.example"], as: "u1", from: other)
        other.send(otherText, body: otherBody, to: gw.enterprise)
        let meanwhile = await subscribed(for: 0.3)
        #expect(meanwhile.contains("sip:q1@oma.example"), "another sender waited behind the fan-out")
        let rest = await subscribed(for: 2.2)
        #expect(early.union(meanwhile).union(rest).filter { $0.hasPrefix("sip:p") }.count == 20)
    }

    @Test func aPresentityHoldsAFewWatcherInfoSubscriptionsNotThousands() async throws {
        let gw = try await HostilePeerTests.Edge(extra: """
            presentities:
              "sip:mary@oma.example":
                defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
            """)
        defer { Task { await gw.stop() } }
        var requests: [String: String] = [:]
        for n in 1...20 {
            let callID = "fanout-winfo-\(n)-\(UInt32.random(in: 0...UInt32.max))@oma"
            requests[callID] = """
                SUBSCRIBE sip:mary@oma.example SIP/2.0
                Via: SIP/2.0/UDP \(gw.kamailio.hostPort);branch=z9hG4bKfw\(n)x\(UInt32.random(in: 0...UInt32.max));rport
                Max-Forwards: 70
                From: <sip:mary@oma.example>;tag=fw\(n)
                To: <sip:mary@oma.example>
                Call-ID: \(callID)
                CSeq: 1 SUBSCRIBE
                Contact: <sip:mary@\(gw.kamailio.hostPort)>
                Event: presence.winfo
                Accept: application/watcherinfo+xml
                Expires: 600

                """
            gw.kamailio.send(requests[callID]!, to: gw.oma)
            // Paced under the OMA server's rate limit (20/s), so that only the cap answers 503.
            try await Task.sleep(nanoseconds: 60_000_000)
        }
        // Every SUBSCRIBE is answered. Over UDP a client retransmits what is not (RFC 3261
        // §17.1.2.2): a datagram a loaded machine dropped is sent again, and the gateway's server
        // transaction answers a retransmission with the answer it gave.
        var answered: [String: Int] = [:]
        for _ in 0..<10 where answered.count < requests.count {
            for message in await gw.kamailio.receive(for: 1) {
                if case .response(let response) = message, (try? response.headers.cseq)?.method == .subscribe,
                   let callID = response.headers.callID {
                    answered[callID] = response.statusCode
                } else if case .request(let notify) = message {
                    gw.kamailio.answer(notify, to: gw.oma)
                }
            }
            for (callID, text) in requests where answered[callID] == nil { gw.kamailio.send(text, to: gw.oma) }
        }
        let statuses = answered.values.sorted()
        #expect(statuses.filter { $0 == 200 }.count == 16, "\(statuses)")
        #expect(statuses.filter { $0 == 503 }.count == 4, "\(statuses)")
    }
}
