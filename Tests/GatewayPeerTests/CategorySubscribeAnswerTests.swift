import Foundation
import PeerTestSupport
import PresenceDocuments
import SIPMessages
import Testing

/// The answers [MS-PRES] §3.4.5.3 gives a category SUBSCRIBE whose form is wrong, and the
/// `quotaExceeded` of §3.4.5.1.3, each sent over a real socket from the configured enterprise
/// edge (``HostilePeerTests/Edge``): the status the section names, and nothing subscribed at the
/// OMA side for a refused request.
@Suite(.serialized) struct CategorySubscribeAnswerTests {
    /// A category SUBSCRIBE from `from` to `to` (Request-URI `to`), with `batch` as its body;
    /// `batched` adds `Require: adhoclist, categoryList` (§3.4.5.1.1), otherwise it is single.
    static func subscribe(
        from: String, to: String, batch: BatchSubscribe, batched: Bool, via peer: LoopbackDatagramPeer, n: String
    ) -> (String, [UInt8]) {
        ("""
            SUBSCRIBE \(to) SIP/2.0
            Via: SIP/2.0/UDP \(peer.hostPort);branch=z9hG4bKcs\(n)\(UInt32.random(in: 0...UInt32.max));rport
            Max-Forwards: 70
            From: <\(from)>;tag=cs\(n)
            To: <\(to)>
            Call-ID: category-\(n)-\(UInt32.random(in: 0...UInt32.max))@contoso
            CSeq: 1 SUBSCRIBE
            Contact: <sip:w@\(peer.hostPort)>
            Event: presence
            Accept: application/msrtc-event-categories+xml, application/rlmi+xml, multipart/related
            Supported: ms-benotify, ms-piggyback-first-notify, eventlist
            \(batched ? "Require: adhoclist, categoryList" : "Require: categoryList")
            Content-Type: application/msrtc-adrl-categorylist+xml

            """, batch.serialized())
    }

    static func action(_ kind: BatchSubscribe.Action.Kind = .subscribe, _ resources: String...) -> BatchSubscribe.Action {
        BatchSubscribe.Action(kind: kind, resources: resources.map { .init(uri: $0) }, categories: [.state, .note])
    }

    /// The final answer the edge gets within `seconds`.
    static func finalAnswer(at peer: LoopbackDatagramPeer, within seconds: Double) async -> SIPResponse? {
        let end = Date().addingTimeInterval(seconds)
        while end.timeIntervalSinceNow > 0 {
            if let answer = await peer.receive(for: 0.1).compactMap(\.response).first(where: { $0.statusCode >= 200 }) {
                return answer
            }
        }
        return nil
    }

    /// §3.4.5.3, for a single category SUBSCRIBE (no `adhoclist` in Require): more than one
    /// resource, more than one action, an `unsubscribe` action, or a resource other than the
    /// To-URI get 400; a batch whose From-URI and To-URI differ gets 403. None is subscribed.
    @Test(arguments: [
        ("two resources in a single subscription", "sip:bob@contoso.com", "sip:carol@oma.example", false,
         [action(.subscribe, "sip:carol@oma.example", "sip:erin@oma.example")], 400),
        ("two actions in a single subscription", "sip:bob@contoso.com", "sip:carol@oma.example", false,
         [action(.subscribe, "sip:carol@oma.example"), action(.subscribe, "sip:carol@oma.example")], 400),
        ("an unsubscribe action in a single subscription", "sip:bob@contoso.com", "sip:carol@oma.example", false,
         [action(.unsubscribe, "sip:carol@oma.example")], 400),
        ("a single subscription whose resource is not its To", "sip:bob@contoso.com", "sip:carol@oma.example", false,
         [action(.subscribe, "sip:erin@oma.example")], 400),
        ("a batch from erin addressed To frank", "sip:erin@contoso.com", "sip:frank@contoso.com", true,
         [action(.subscribe, "sip:carol@oma.example")], 403),
    ] as [(String, String, String, Bool, [BatchSubscribe.Action], Int)])
    func malformedCategorySubscribeIsAnsweredAsTheSectionSays(
        _ name: String, _ from: String, _ to: String, _ batched: Bool, _ actions: [BatchSubscribe.Action], _ status: Int
    ) async throws {
        let gw = try await HostilePeerTests.Edge()
        var (text, body) = Self.subscribe(
            from: from, to: to, batch: BatchSubscribe(uri: from, actions: actions), batched: batched, via: gw.edge, n: "m")
        // A batch is sent to the subscriber's own URI (the §4.5 example's Request-URI).
        if batched { text = text.replacingOccurrences(of: "SUBSCRIBE \(to) ", with: "SUBSCRIBE \(from) ") }
        gw.edge.send(text, body: body, to: gw.enterprise)
        let answer = await Self.finalAnswer(at: gw.edge, within: 2)
        #expect(answer?.statusCode == status, "\(name): \(answer.map { "\($0.statusCode) \($0.reasonPhrase)" } ?? "no answer")")
        // The section's answer, not the router's (which refuses what it would not relay).
        #expect(answer?.reasonPhrase.contains("Relaying") == false)
        #expect(await gw.kamailio.receive(for: 0.3).compactMap(\.request).isEmpty, "\(name): a SUBSCRIBE went to the OMA side")
        await gw.stop()
    }

    /// §3.4.5.3: "For a single category SUBSCRIBE request, the server MUST send back a 404
    /// response" for a resource it does not find: one outside the OMA domains at once, and one
    /// the OMA server answers 404 with that 404. (The Request-URI is an OMA one: a request for a
    /// domain served on neither side is no relay's business, 403 before any of this.)
    @Test func aSingleSubscriptionToAnUnknownResourceIsAnswered404() async throws {
        let gw = try await HostilePeerTests.Edge()
        var (outside, outsideBody) = Self.subscribe(
            from: "sip:bob@contoso.com", to: "sip:nobody@elsewhere.example",
            batch: BatchSubscribe(actions: [Self.action(.subscribe, "sip:nobody@elsewhere.example")]), batched: false,
            via: gw.edge, n: "o")
        outside = outside.replacingOccurrences(of: "SUBSCRIBE sip:nobody@elsewhere.example", with: "SUBSCRIBE sip:carol@oma.example")
        gw.edge.send(outside, body: outsideBody, to: gw.enterprise)
        let first = await Self.finalAnswer(at: gw.edge, within: 2)
        #expect(first?.statusCode == 404, "\(first.map { "\($0.statusCode) \($0.reasonPhrase)" } ?? "no answer")")

        let (unknown, unknownBody) = Self.subscribe(
            from: "sip:bob@contoso.com", to: "sip:ghost@oma.example",
            batch: BatchSubscribe(actions: [Self.action(.subscribe, "sip:ghost@oma.example")]), batched: false,
            via: gw.edge, n: "u")
        gw.edge.send(unknown, body: unknownBody, to: gw.enterprise)
        // Answered at once, well within the piggyback wait (300 ms here).
        var leg: SIPRequest?
        let end = Date().addingTimeInterval(1)
        while leg == nil, end.timeIntervalSinceNow > 0 {
            leg = await gw.kamailio.receive(for: 0.05).compactMap(\.request).first { $0.method == .subscribe }
        }
        let subscribe = try #require(leg)
        #expect(subscribe.uri.description == "sip:ghost@oma.example")
        gw.kamailio.send(Self.response(404, "Not Found", to: subscribe), to: gw.oma)
        let answer = await Self.finalAnswer(at: gw.edge, within: 2)
        #expect(answer?.statusCode == 404, "\(answer.map { "\($0.statusCode) \($0.reasonPhrase)" } ?? "no answer")")
        await gw.stop()
    }

    /// §3.4.5.1.3: past `subscriptions-per-presentity` (2 here), a third watcher of carol gets
    /// her refused in the RLMI part as `terminated`, `quotaExceeded`, 413, `cid` her URI, while
    /// its other resource is subscribed.
    @Test func aPresentityWithAsManyWatchersAsItMayRefusesTheNextWithQuotaExceeded() async throws {
        let gw = try await HostilePeerTests.Edge(extra: "limits: { subscriptions-per-presentity: 2 }")
        var answered: [SIPResponse] = []
        for n in 1...3 {
            let watcher = "sip:w\(n)@contoso.com"
            let (text, body) = Self.subscribe(
                from: watcher, to: watcher,
                batch: BatchSubscribe(uri: watcher, actions: [Self.action(.subscribe, "sip:carol@oma.example", "sip:erin\(n)@oma.example")]),
                batched: true, via: gw.edge, n: "q\(n)")
            gw.edge.send(text, body: body, to: gw.enterprise)
            // The legs are answered 200 and notified by nobody: each watcher is answered after the
            // piggyback wait (300 ms here).
            answered.append(try #require(await Self.finalAnswer(at: gw.edge, within: 3)))
        }
        let legs = await gw.kamailio.receive(for: 0.5).compactMap(\.request).filter { $0.method == .subscribe }
        let legURIs = Set(legs.map(\.uri.description))
        #expect(legURIs == ["sip:carol@oma.example", "sip:erin1@oma.example", "sip:erin2@oma.example", "sip:erin3@oma.example"])
        #expect(Set(legs.filter { $0.uri.description == "sip:carol@oma.example" }.compactMap(\.headers.callID)).count == 2)
        for (n, answer) in answered.enumerated() {
            #expect(answer.statusCode == 200)
            let multipart = try #require(try SIPMessage.response(answer).multipartBody())
            let carol = try BatchSubscribeResponse(multipart: multipart).list.resources.first { $0.uri == "sip:carol@oma.example" }
            if n < 2 {
                #expect(carol == nil, "watcher \(n + 1): carol is in its rejection list")
            } else {
                let instance = try #require(carol?.instances.first)
                #expect(instance.state == .terminated)
                #expect(instance.reason == "quotaExceeded")
                #expect(instance.statusCode == 413)
                #expect(instance.cid == "carol@oma.example")
            }
        }
        await gw.stop()
    }

    /// A response to `request` with `status` (RFC 3261 §8.2.6), as the OMA server would send.
    static func response(_ status: Int, _ reason: String, to request: SIPRequest) -> String {
        let copied: [SIPHeaderName] = [.via, .from, .to, .callID, .cseq]
        var text = "SIP/2.0 \(status) \(reason)\n"
        for name in copied {
            for value in request.headers.values(named: name) {
                text += name == .to ? "\(name): \(value);tag=nf\n" : "\(name): \(value)\n"
            }
        }
        return text
    }
}
