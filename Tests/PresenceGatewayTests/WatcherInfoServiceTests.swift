import NIOCore
import PresenceDocuments
import PresenceGateway
import PresenceMapping
import SIPMessages
import Testing

/// Watcher information (RFC 3857, RFC 3858) for a presentity the gateway decides for
/// (docs/flows.md, "Watcher information"): its owner sees each enterprise watcher as the policy
/// places it, `pending` while the owner has not decided (`confirm`, RFC 5025 §3.2.1), and every
/// change as a `partial` document with the next version.
@Suite struct WatcherInfoServiceTests {
    typealias T = GatewayCoreTests
    typealias P = PendingResourceTests

    static func winfoSubscribe(
        _ presentity: String = P.mary, from subscriber: String = P.mary, expires: Int = 600, cseq: Int = 1,
        toTag: String? = nil, accept: String = "application/watcherinfo+xml"
    ) throws -> SIPRequest {
        try T.request([
            "SUBSCRIBE \(presentity) SIP/2.0",
            "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKw\(cseq)",
            "Max-Forwards: 69",
            "From: <\(subscriber)>;tag=winfo1",
            "To: <\(presentity)>" + (toTag.map { ";tag=\($0)" } ?? ""),
            "Call-ID: winfo-call-1",
            "CSeq: \(cseq) SUBSCRIBE",
            "Contact: <sip:mary@127.0.0.1:5070>",
            "Event: presence.winfo",
            "Accept: \(accept)",
            "Expires: \(expires)",
        ])
    }

    /// The watcher information NOTIFYs among `actions` that carry a document, read.
    static func documents(_ actions: [GatewayCore.Action]) throws -> [WatcherInfo] {
        try T.sent(actions, to: .oma).filter { $0.0.method == .notify && isWinfo($0.1) && !$0.0.body.isEmpty }
            .map { notify, _ in
                #expect(notify.headers[.contentType] == "application/watcherinfo+xml")
                #expect(notify.headers[.event] == "presence.winfo")
                return try WatcherInfo(bytes: notify.body)
            }
    }

    static func isWinfo(_ context: GatewayCore.Context) -> Bool {
        if case .winfoWatch = context { true } else { false }
    }

    /// Mary subscribes to her own watcher information: 200, then the full list.
    static func marySubscribes(_ h: inout T.Harness) throws -> (ok: SIPResponse, first: WatcherInfo) {
        let (id, actions) = h.receive(try winfoSubscribe(), from: .oma)
        let ok = try #require(T.responses(actions, id).first)
        #expect(ok.statusCode == 200)
        let first = try #require(try documents(actions).first)
        return (ok, first)
    }

    static func only(_ info: WatcherInfo) -> WatcherInfo.Watcher? {
        info.lists.count == 1 && info.lists[0].watchers.count == 1 ? info.lists[0].watchers[0] : nil
    }

    /// The `confirm` flow end to end: a watcher waiting for Mary is listed pending; Mary's new
    /// policy allows it (`approved`), then blocks it (`rejected`), each a partial document with
    /// the next version (RFC 3858 §4.4).
    @Test func aWatcherWaitingForTheOwnerIsSeenPendingThenApprovedThenRejected() throws {
        var h = try T.Harness(yaml: P.marysYAML("confirm"))
        let (_, first) = try Self.marySubscribes(&h)
        #expect(first.version == 0 && first.state == .full)
        #expect(first.lists == [WatcherInfo.WatcherList(resource: P.mary, package: "presence")])

        // Carol (same enterprise) subscribes to John and Mary; Mary has not decided.
        let (_, subscribed) = h.receive(
            try T.enterpriseSubscribe(resources: [P.john, P.mary]), from: .enterprise, network: .sameEnterprise)
        let pending = try #require(try Self.documents(subscribed).first)
        #expect(pending.version == 1 && pending.state == .partial)
        let carol = try #require(Self.only(pending))
        #expect(carol.uri == "sip:carol@contoso.com" && carol.status == .pending && carol.event == .subscribe)

        // Still undecided: nothing to report.
        #expect(try Self.documents(h.core.reconfigure(try P.marysPolicy("confirm"), mapper: P.mapper, now: h.now)).isEmpty)
        let allowed = try #require(
            try Self.documents(h.core.reconfigure(try P.marysPolicy("allow"), mapper: P.mapper, now: h.now)).first)
        #expect(allowed.version == 2 && allowed.state == .partial)
        #expect(Self.only(allowed).map { [$0.id, $0.status.rawValue, $0.event.rawValue] } == [carol.id, "active", "approved"])

        let blocked = try #require(
            try Self.documents(h.core.reconfigure(try P.marysPolicy("block"), mapper: P.mapper, now: h.now)).first)
        #expect(blocked.version == 3)
        #expect(Self.only(blocked).map { [$0.id, $0.status.rawValue, $0.event.rawValue] } == [carol.id, "terminated", "rejected"])
        // Told once: a later change of the same watch says nothing more of Carol.
        #expect(try Self.documents(h.core.reconfigure(try P.marysPolicy("block"), mapper: P.mapper, now: h.now)).isEmpty)
    }

    /// A watcher that leaves is listed once as `terminated`: `giveup` while it was still waiting
    /// for the owner, `timeout` once active (RFC 3857 §3.7); a refresh sends the full list again
    /// with the next version, and an unsubscribe ends the dialog with a final full list.
    @Test func leavingWatchersRefreshAndUnsubscribe() throws {
        var h = try T.Harness(yaml: P.marysYAML("confirm"))
        let (ok, _) = try Self.marySubscribes(&h)
        let (carolID, subscribed) = h.receive(
            try T.enterpriseSubscribe(resources: [P.mary], expires: 600), from: .enterprise, network: .sameEnterprise)
        let carolFirst = try #require(try Self.documents(subscribed).first)
        let carol = try #require(Self.only(carolFirst))
        let carolOK = try #require(T.responses(subscribed, carolID).first)
        #expect(carolOK.statusCode == 200)

        // Carol's subscription runs out while Mary has not decided: she gave up.
        h.now = h.now + .seconds(601)
        let carolKey = try #require(Int(carol.id.dropFirst()))
        let expired = try #require(try Self.documents(h.core.fire(.expiry(.enterpriseWatch(carolKey)), now: h.now)).first)
        #expect(Self.only(expired).map { [$0.id, $0.status.rawValue, $0.event.rawValue] } == [carol.id, "terminated", "giveup"])

        // Mary refreshes: the full list (now empty) with the next version.
        let tag = try #require(try ok.headers.to?.tag)
        let (refreshID, refreshed) = h.receive(try Self.winfoSubscribe(cseq: 2, toTag: tag), from: .oma)
        #expect(T.responses(refreshed, refreshID).first?.statusCode == 200)
        let full = try #require(try Self.documents(refreshed).first)
        #expect(full.state == .full && full.version == expired.version + 1 && full.lists[0].watchers.isEmpty)

        // Mary unsubscribes: 200, and a final NOTIFY; the dialog is gone.
        let (endID, ended) = h.receive(try Self.winfoSubscribe(expires: 0, cseq: 3, toTag: tag), from: .oma)
        #expect(T.responses(ended, endID).first?.statusCode == 200)
        let (last, _) = try #require(T.sent(ended, to: .oma).first)
        #expect(last.headers[.subscriptionState]?.hasPrefix("terminated") == true)
        let (againID, again) = h.receive(try Self.winfoSubscribe(cseq: 4, toTag: tag), from: .oma)
        #expect(T.responses(again, againID).first?.statusCode == 481)
    }

    /// An active watcher whose subscription runs out is listed `terminated`/`timeout`.
    @Test func anActiveWatcherThatLeavesTimesOut() throws {
        var h = try T.Harness(yaml: P.marysYAML("allow"))
        _ = try Self.marySubscribes(&h)
        let (_, subscribed) = h.receive(
            try T.enterpriseSubscribe(resources: [P.mary], expires: 600), from: .enterprise, network: .sameEnterprise)
        let first = try #require(try Self.documents(subscribed).first)
        let carol = try #require(Self.only(first))
        #expect(carol.status == .active && carol.event == .subscribe)
        // Mary's OMA leg answers and reports: Carol's watch is answered; her list entry stays.
        let (leg, context) = try #require(T.sent(subscribed, to: .oma).first { !Self.isWinfo($0.1) })
        P.answer(&h, leg, context)
        let (_, reported) = h.receive(try T.omaNotify(leg, cseq: 2, body: T.pidf(P.mary, activity: "away")), from: .oma)
        #expect(try Self.documents(reported).isEmpty)
        h.now = h.now + .seconds(601)
        let carolKey = try #require(Int(carol.id.dropFirst()))
        let ended = h.core.fire(.expiry(.enterpriseWatch(carolKey)), now: h.now)
        let gone = try #require(try Self.documents(ended).first)
        #expect(Self.only(gone).map { [$0.id, $0.status.rawValue, $0.event.rawValue] } == [carol.id, "terminated", "timeout"])
    }

    /// The lists are worked out from what the flows report while anyone follows watchers: the
    /// watchers already there when the owner first subscribes are in the first full list; while
    /// no one follows, nothing is kept, and the next first subscription lists who is there then.
    @Test func theFirstSubscriptionListsTheWatchersAlreadyThere() throws {
        var h = try T.Harness(yaml: P.marysYAML("allow"))
        let dan = "sip:dan@contoso.com"
        _ = h.receive(try T.enterpriseSubscribe(resources: [P.john, P.mary]), from: .enterprise, network: .sameEnterprise)
        _ = h.receive(
            try T.enterpriseSubscribe(resources: [P.mary], expires: 600, from: dan), from: .enterprise,
            network: .sameEnterprise)

        let (ok, first) = try Self.marySubscribes(&h)
        #expect(first.state == .full)
        let listed = first.lists.first?.watchers ?? []
        #expect(listed.map(\.uri) == ["sip:carol@contoso.com", dan])
        #expect(listed.allSatisfy { $0.status == .active && $0.event == .subscribe })
        // Both answered without waiting longer for the OMA side's first NOTIFYs.
        let keys = listed.compactMap { Int($0.id.dropFirst()) }
        for key in keys { _ = h.core.fire(.firstAnswer(.enterpriseWatch(key)), now: h.now) }

        // Mary unsubscribes; Dan's subscription runs out while no one follows.
        let tag = try #require(try ok.headers.to?.tag)
        let (endID, ended) = h.receive(try Self.winfoSubscribe(expires: 0, cseq: 2, toTag: tag), from: .oma)
        #expect(T.responses(ended, endID).first?.statusCode == 200)
        #expect(h.core.winfoWatchCount == 0)
        h.now = h.now + .seconds(601)
        let danKey = try #require(keys.last)
        #expect(try Self.documents(h.core.fire(.expiry(.enterpriseWatch(danKey)), now: h.now)).isEmpty)

        // Her next subscription lists Carol alone.
        let (_, again) = try Self.marySubscribes(&h)
        #expect(again.lists.first?.watchers.map(\.uri) == ["sip:carol@contoso.com"])

        // Blocked, Carol's subscription to Mary ends and she leaves the list; allowing her
        // again lists nothing until she subscribes again.
        let blocked = try #require(
            try Self.documents(h.core.reconfigure(try P.marysPolicy("block"), mapper: P.mapper, now: h.now)).first)
        #expect(Self.only(blocked).map { [$0.uri, $0.status.rawValue] } == ["sip:carol@contoso.com", "terminated"])
        #expect(try Self.documents(h.core.reconfigure(try P.marysPolicy("allow"), mapper: P.mapper, now: h.now)).isEmpty)
    }

    /// Only the presentity sees its watchers (RFC 3857 §5.1.6); only presentities the gateway
    /// decides for have them here; only the OMA side asks; the body is watcherinfo or nothing.
    @Test func whoMayAskAndForWhat() throws {
        var h = try T.Harness(yaml: P.marysYAML("confirm"))
        func status(_ request: SIPRequest, from side: GatewayConfiguration.Side) -> Int? {
            let (id, actions) = h.receive(request, from: side)
            return T.responses(actions, id).first?.statusCode
        }
        #expect(status(try Self.winfoSubscribe(from: "sip:eve@oma.example"), from: .oma) == 403)
        #expect(status(try Self.winfoSubscribe(P.john, from: P.john), from: .oma) == 404)
        #expect(status(try Self.winfoSubscribe(), from: .enterprise) == 489)
        #expect(status(try Self.winfoSubscribe(accept: "application/pidf+xml"), from: .oma) == 406)
        #expect(status(try Self.winfoSubscribe(expires: 5), from: .oma) == 423)
        #expect(h.core.winfoWatchCount == 0)
        // A fetch (Expires 0): the full list once, nothing kept.
        let (id, fetched) = h.receive(try Self.winfoSubscribe(expires: 0), from: .oma)
        #expect(T.responses(fetched, id).first?.statusCode == 200)
        #expect(try Self.documents(fetched).first?.state == .full)
        #expect(h.core.winfoWatchCount == 0)
    }

    /// A linked identity the gateway is the presence server of: its owner sees the OMA watchers
    /// of its enterprise identity (flow 2) as well, pending until the enterprise answered.
    @Test func aLinkedIdentitysOwnerSeesTheWatchersOfItsEnterpriseIdentity() throws {
        let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(
            of: #"{ oma: "sip:alice@oma.example", enterprise: "sip:alice@contoso.com", publish-to-enterprise: false, publish-to-oma: true }"#,
            with: #"{ oma: "sip:bob@oma.example", enterprise: "sip:bob@contoso.com", publish-to-enterprise: true }"#)
        var h = try T.Harness(yaml: yaml)
        #expect(h.core.configuration.servesWatcherInfo(of: "sip:bob@oma.example"))
        let (id, actions) = h.receive(try Self.winfoSubscribe("sip:bob@oma.example", from: "sip:bob@oma.example"), from: .oma)
        #expect(T.responses(actions, id).first?.statusCode == 200)
        // Alice (OMA) subscribes to bob@contoso.com: pending until the enterprise answers.
        let (_, subscribed) = h.receive(try T.omaSubscribe(), from: .oma)
        let pending = try #require(try Self.documents(subscribed).first)
        let alice = try #require(Self.only(pending))
        #expect(alice.uri == "sip:alice@oma.example" && alice.status == .pending)
        let (leg, context) = try #require(T.sent(subscribed, to: .enterprise).first)
        let document = T.categories(availability: 3500, uri: "sip:bob@contoso.com")
        let answered = h.core.receive(T.enterpriseOK(leg, document), to: leg, context: context, now: h.now)
        let active = try #require(try Self.documents(answered).first)
        #expect(Self.only(active).map { [$0.id, $0.status.rawValue, $0.event.rawValue] } == [alice.id, "active", "approved"])
    }

    /// After a restart the subscription goes on in its dialog (CSeq above those used) and is
    /// sent the full list with the next version: the list last sent is not stored.
    @Test func aRestoredSubscriptionIsSentTheFullListWithTheNextVersion() throws {
        typealias R = StateRestoreTests
        var h = try R.journaled(yaml: P.marysYAML("confirm"))
        var records = R.Records()
        _ = try Self.marySubscribes(&h)
        let (_, subscribed) = h.receive(
            try T.enterpriseSubscribe(resources: [P.john, P.mary]), from: .enterprise, network: .sameEnterprise)
        let pending = try #require(try Self.documents(subscribed).first)
        let (lastNotify, _) = try #require(T.sent(subscribed, to: .oma).first { Self.isWinfo($0.1) })
        // John's leg reports, so Carol is answered (an unanswered watch does not survive a restart).
        let (johnLeg, context) = try #require(T.sent(subscribed, to: .oma).first { $0.0.uri.description == P.john })
        P.answer(&h, johnLeg, context)
        _ = h.receive(try T.omaNotify(johnLeg, cseq: 2, body: T.pidf(P.john, activity: "away")), from: .oma)
        R.take(&h, into: &records)
        #expect(records.kinds()["winfo-watch"] == 1)

        var after = try R.journaled(yaml: P.marysYAML("confirm"), prefix: "r")
        let restored = try after.core.restore(records.all, clock: R.clock, now: after.now)
        #expect(after.core.winfoWatchCount == 1)
        let (notify, _) = try #require(T.sent(restored, to: .oma).first { Self.isWinfo($0.1) })
        #expect(notify.headers.callID == lastNotify.headers.callID)
        #expect(try #require(try notify.headers.cseq).sequence > (try #require(try lastNotify.headers.cseq)).sequence)
        let full = try WatcherInfo(bytes: notify.body)
        #expect(full.state == .full && full.version == pending.version + 1)
        #expect(full.lists.first?.watchers == pending.lists.first?.watchers)
        #expect(restored.contains { if case .schedule(.expiry(.winfoWatch), _) = $0 { true } else { false } })

        // Ended: the record goes.
        _ = after.core.shutdown(now: after.now)
        R.take(&after, into: &records)
        #expect(records.kinds()["winfo-watch"] == nil)
    }
}
