import NIOCore
import PresenceDocuments
import MSPresenceEvents
import PresenceGateway
import PresenceMapping
import SIPMessages
import Testing

/// Flow 1 with an OMA presentity that has not authorized the watcher yet (docs/flows.md, "Flow 1"): the OMA
/// leg's `Subscription-State: pending` (RFC 6665 §4.1.3, RFC 3856 §6.6.2) is reflected per
/// resource in a batch dialog as an RLMI instance `state="pending"` ([MS-PRES] §2.2.2.4.2), and
/// as the dialog's own state in a single subscription; pending → active and pending →
/// terminated reach the enterprise watcher.
@Suite struct PendingResourceTests {
    typealias T = GatewayCoreTests

    static let john = "sip:john@oma.example"
    static let mary = "sip:mary@oma.example"
    static let mapper = PresenceMapper(tables: try! MappingTables.builtIn())

    /// Subscribes the enterprise watcher to `resources`, lets every OMA leg answer 200, and
    /// returns the server request id and each resource's OMA SUBSCRIBE.
    static func subscribe(_ h: inout T.Harness, resources: [String], single: Bool = false) throws
        -> (GatewayCore.ServerRequestID, [String: SIPRequest]) {
        var request = try T.enterpriseSubscribe(resources: resources)
        if single {
            // A single category subscription: no `Require: adhoclist, categoryList` (§3.4.5.1.1).
            request.headers.remove(.require)
            request.uri = try SIPURI(resources[0])
            request.headers.set(.to, "<\(resources[0])>")
        }
        let (id, actions) = h.receive(request, from: .enterprise, network: .sameEnterprise)
        var legs: [String: SIPRequest] = [:]
        for (subscribe, context) in T.sent(actions, to: .oma) {
            legs[subscribe.uri.description] = subscribe
            Self.answer(&h, subscribe, context)
        }
        return (id, legs)
    }

    /// The OMA side answers the gateway's SUBSCRIBE for a leg with 200 (RFC 6665 §4.2.1.1).
    static func answer(_ h: inout T.Harness, _ subscribe: SIPRequest, _ context: GatewayCore.Context) {
        _ = h.core.receive(SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "kam1",
                                       headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                           to: subscribe, context: context, now: h.now)
    }

    static func rlmi(_ request: SIPRequest) throws -> BatchSubscribeResponse {
        guard let multipart = try SIPMessage.request(request).multipartBody() else { throw T.Unexpected(what: "not multipart") }
        return try BatchSubscribeResponse(multipart: multipart)
    }

    /// The default configuration with Mary's owner deciding `handling` for watchers of the
    /// enterprise (RFC 5025 §3.2.1).
    static func marysYAML(_ handling: String) -> String {
        GatewayConfiguration.defaultYAML.replacingOccurrences(of: "presentities:\n", with: """
            presentities:
              "\(mary)":
                defaults: { sameEnterprise: \(handling), federated: allow, publicCloud: polite-block }

            """)
    }

    static func marysPolicy(_ handling: String) throws -> GatewayConfiguration {
        try GatewayConfiguration(yaml: marysYAML(handling))
    }

    /// John and Mary in one batch, Mary's owner undecided (`confirm`): no OMA leg for Mary, and
    /// the watcher answered once John's leg reported. Returns John's leg and the 200 OK.
    static func maryWaitsInABatch() throws -> (h: T.Harness, johnLeg: SIPRequest, ok: SIPResponse) {
        var h = try T.Harness(yaml: marysYAML("confirm"))
        let (id, legs) = try subscribe(&h, resources: [john, mary])
        #expect(legs[mary] == nil)
        let johnLeg = try #require(legs[john])
        let (_, answered) = h.receive(try T.omaNotify(johnLeg, cseq: 2, body: T.pidf(john, activity: "away")), from: .oma)
        return (h, johnLeg, try #require(T.responses(answered, id).first))
    }

    /// A resource whose owner has not decided (`confirm`) is listed pending without an OMA
    /// subscription; a new policy that allows it starts the OMA leg, and the leg's first state
    /// makes it active with that state, as when the OMA side authorizes the watcher.
    @Test func batchResourceWaitingForItsOwnerIsActivatedWhenANewPolicyAllowsIt() throws {
        var (h, _, ok) = try Self.maryWaitsInABatch()
        let first = try T.firstCategories(ok)
        #expect(first.list.resources.map(\.uri) == [Self.mary])
        #expect(first.list.resources.first?.instances.first?.state == .pending)
        #expect(first.categories.map(\.uri) == [Self.john])

        // Still undecided: nothing happens.
        #expect(h.core.reconfigure(try Self.marysPolicy("confirm"), mapper: Self.mapper, now: h.now).isEmpty)
        // Allowed: Mary's OMA leg starts; the watcher hears nothing before it reports.
        let allowed = h.core.reconfigure(try Self.marysPolicy("allow"), mapper: Self.mapper, now: h.now)
        #expect(T.sent(allowed, to: .enterprise).isEmpty)
        let (maryLeg, context) = try #require(T.sent(allowed, to: .oma).first { $0.0.uri.description == Self.mary })
        Self.answer(&h, maryLeg, context)
        let (_, activated) = h.receive(try T.omaNotify(maryLeg, cseq: 2, body: T.pidf(Self.mary, activity: "away")), from: .oma)
        let (notify, _) = try #require(T.sent(activated, to: .enterprise).first)
        let update = try Self.rlmi(notify)
        #expect(update.list.resources.map(\.uri) == [Self.mary])
        #expect(update.list.resources.first?.instances.first?.state == .active)
        #expect(T.availability(update.categories.first).0 == 15500)
    }

    /// A resource whose owner now blocks the watcher leaves the batch `terminated;reason=rejected`
    /// ([MS-PRES] §2.2.2.4.2), without an OMA subscription; the rest of the dialog goes on.
    @Test func batchResourceWaitingForItsOwnerLeavesRejectedWhenANewPolicyBlocksIt() throws {
        var (h, johnLeg, _) = try Self.maryWaitsInABatch()
        let blocked = h.core.reconfigure(try Self.marysPolicy("block"), mapper: Self.mapper, now: h.now)
        #expect(T.sent(blocked, to: .oma).isEmpty)
        let (notify, _) = try #require(T.sent(blocked, to: .enterprise).first)
        #expect(notify.headers[.subscriptionState]?.hasPrefix("active") == true)
        let instance = try #require(try Self.rlmi(notify).list.resources.first { $0.uri == Self.mary }?.instances.first)
        #expect(instance.state == .terminated && instance.reason == "rejected")
        // John's changes still reach the watcher.
        let (_, busy) = h.receive(try T.omaNotify(johnLeg, cseq: 3, body: T.pidf(Self.john, activity: "busy")), from: .oma)
        #expect(!T.sent(busy, to: .enterprise).isEmpty)
    }

    @Test func batchResourcePendingAtTheOMASideIsListedPendingThenActiveWithItsState() throws {
        var h = try T.Harness()
        let (id, legs) = try Self.subscribe(&h, resources: [Self.john, Self.mary])
        let johnLeg = try #require(legs[Self.john])
        let maryLeg = try #require(legs[Self.mary])
        _ = h.receive(try T.omaNotify(johnLeg, cseq: 2, body: T.pidf(Self.john, activity: "on-the-phone")), from: .oma)
        // Mary's presence server waits for her authorization: pending, no body.
        let (_, answered) = h.receive(try T.omaNotify(maryLeg, cseq: 2, state: "pending;expires=3500", body: []), from: .oma)
        let ok = try #require(T.responses(answered, id).first)
        #expect(ok.statusCode == 200)
        #expect(ok.headers[.subscriptionState]?.hasPrefix("active") == true)
        let first = try T.firstCategories(ok)
        // The RLMI part lists only Mary, pending (id 0, cid = the resource URI, §2.2.2.4.2) ...
        #expect(first.list.resources.map(\.uri) == [Self.mary])
        let instance = try #require(first.list.resources.first?.instances.first)
        #expect(instance.state == .pending && instance.id == "0" && instance.cid == Self.mary && instance.reason == nil)
        // ... and only John has a categories part.
        #expect(first.categories.map(\.uri) == [Self.john])

        // Mary accepts: the first real NOTIFY makes her active, with her state, in one notification.
        h.now = h.now + .seconds(5)
        let (_, activated) = h.receive(try T.omaNotify(maryLeg, cseq: 3, body: T.pidf(Self.mary, activity: "away")), from: .oma)
        let (notify, _) = try #require(T.sent(activated, to: .enterprise).first)
        let update = try Self.rlmi(notify)
        #expect(update.list.resources.map(\.uri) == [Self.mary])
        #expect(update.list.resources.first?.instances.first?.state == .active)
        #expect(update.categories.map(\.uri) == [Self.mary])
        #expect(T.availability(update.categories.first).0 == 15500)
        // From then on Mary's changes are ordinary category notifications.
        let (_, busy) = h.receive(try T.omaNotify(maryLeg, cseq: 4, body: T.pidf(Self.mary, activity: "busy")), from: .oma)
        let (benotify, _) = try #require(T.sent(busy, to: .enterprise).first)
        #expect((6000...7499).contains(T.availability(try CategoriesDocument(bytes: benotify.body)).0 ?? 0))
    }

    @Test func pendingResourceWhoseWatcherIsRejectedLeavesTheBatchAsTerminatedRejected() throws {
        var h = try T.Harness()
        let (id, legs) = try Self.subscribe(&h, resources: [Self.john, Self.mary])
        _ = h.receive(try T.omaNotify(try #require(legs[Self.john]), cseq: 2, body: T.pidf(Self.john, activity: "away")), from: .oma)
        let maryLeg = try #require(legs[Self.mary])
        let (_, answered) = h.receive(try T.omaNotify(maryLeg, cseq: 2, state: "pending", body: []), from: .oma)
        #expect(T.responses(answered, id).first?.statusCode == 200)
        // Mary declines: terminated;reason=rejected (RFC 6665 §4.2.2).
        let (_, ended) = h.receive(try T.omaNotify(maryLeg, cseq: 3, state: "terminated;reason=rejected", body: []), from: .oma)
        let (notify, _) = try #require(T.sent(ended, to: .enterprise).first)
        let removal = try Self.rlmi(notify)
        #expect(removal.list.resources.map(\.uri) == [Self.mary])
        #expect(removal.list.resources.first?.instances.first?.state == .terminated)
        #expect(removal.list.resources.first?.instances.first?.reason == "rejected")
        #expect(removal.categories.isEmpty)
        // Mary's leg is gone; John's stays, and so does the watcher's dialog.
        #expect(h.core.counts.omaLegs == 1)
        #expect(h.core.counts.enterpriseWatches == 1)
    }

    @Test func activeResourceThatTurnsPendingIsListedPendingAndItsChangesStop() throws {
        var h = try T.Harness()
        let (_, legs) = try Self.subscribe(&h, resources: [Self.john, Self.mary])
        let johnLeg = try #require(legs[Self.john])
        _ = h.receive(try T.omaNotify(johnLeg, cseq: 2, body: T.pidf(Self.john, activity: "away")), from: .oma)
        _ = h.receive(try T.omaNotify(try #require(legs[Self.mary]), cseq: 2, body: T.pidf(Self.mary, activity: "away")), from: .oma)
        let (_, pending) = h.receive(try T.omaNotify(johnLeg, cseq: 3, state: "pending", body: []), from: .oma)
        let (notify, _) = try #require(T.sent(pending, to: .enterprise).first)
        let update = try Self.rlmi(notify)
        #expect(update.list.resources.first?.uri == Self.john)
        #expect(update.list.resources.first?.instances.first?.state == .pending)
        #expect(update.categories.isEmpty)
    }

    @Test func singleSubscriptionToAPendingResourceIsPendingUntilTheFirstRealNotify() throws {
        var h = try T.Harness()
        let (id, legs) = try Self.subscribe(&h, resources: [Self.john], single: true)
        let leg = try #require(legs[Self.john])
        let (_, answered) = h.receive(try T.omaNotify(leg, cseq: 2, state: "pending;expires=3500", body: []), from: .oma)
        let ok = try #require(T.responses(answered, id).first)
        #expect(ok.statusCode == 200)
        // The dialog's own state is pending (RFC 6665 §4.1.3), and no state is shown.
        #expect(try ok.headers.subscriptionState?.state == .pending)
        #expect(try T.firstCategories(ok).categories.isEmpty)
        // The first real NOTIFY activates the dialog with John's state.
        let (_, activated) = h.receive(try T.omaNotify(leg, cseq: 3, body: T.pidf(Self.john, activity: "away")), from: .oma)
        let (notify, _) = try #require(T.sent(activated, to: .enterprise).first)
        #expect(try notify.headers.subscriptionState?.state == .active)
        #expect(T.availability(try CategoriesDocument(bytes: notify.body)).0 == 15500)
        // Pending again: nothing is shown meanwhile; active again: the new state as usual.
        let (_, repending) = h.receive(try T.omaNotify(leg, cseq: 4, state: "pending", body: []), from: .oma)
        #expect(T.sent(repending, to: .enterprise).isEmpty)
        let (_, back) = h.receive(try T.omaNotify(leg, cseq: 5, body: T.pidf(Self.john, activity: "busy")), from: .oma)
        let (again, _) = try #require(T.sent(back, to: .enterprise).first)
        #expect((6000...7499).contains(T.availability(try CategoriesDocument(bytes: again.body)).0 ?? 0))
    }

    /// A resource whose owner now politely blocks the watcher is activated at once with the
    /// never-published view; its OMA leg starts, and the OMA state then changes nothing the
    /// watcher sees ([MS-PRES] §3.2.5.3: it must not be able to tell).
    @Test func batchResourceWaitingForItsOwnerIsActivatedUnpublishedWhenANewPolicyPolitelyBlocksIt() throws {
        var (h, _, _) = try Self.maryWaitsInABatch()
        let blocked = h.core.reconfigure(try Self.marysPolicy("polite-block"), mapper: Self.mapper, now: h.now)
        let (notify, _) = try #require(T.sent(blocked, to: .enterprise).first)
        let update = try Self.rlmi(notify)
        #expect(update.list.resources.first?.instances.first?.state == .active)
        #expect(update.categories.map(\.uri) == [Self.mary])
        #expect(T.availability(update.categories.first).0 == nil)
        let (maryLeg, context) = try #require(T.sent(blocked, to: .oma).first { $0.0.uri.description == Self.mary })
        Self.answer(&h, maryLeg, context)
        let (_, stateArrived) = h.receive(try T.omaNotify(maryLeg, cseq: 2, body: T.pidf(Self.mary, activity: "busy")), from: .oma)
        #expect(T.sent(stateArrived, to: .enterprise).isEmpty)
    }

    /// A single category subscription to a resource waiting for its owner is itself pending
    /// (RFC 6665 §4.2.1.3); a policy that now allows the watcher subscribes to the OMA side,
    /// and the leg's first state activates the dialog with it.
    @Test func singleSubscriptionWaitingForTheOwnerIsActivatedWhenANewPolicyAllowsIt() throws {
        var h = try T.Harness(yaml: Self.marysYAML("confirm"))
        let (id, actions) = h.receive(try {
            var request = try T.enterpriseSubscribe(resources: [Self.mary])
            request.headers.remove(.require)
            request.uri = try SIPURI(Self.mary)
            request.headers.set(.to, "<\(Self.mary)>")
            return request
        }(), from: .enterprise, network: .sameEnterprise)
        #expect(T.sent(actions, to: .oma).isEmpty)
        let ok = try #require(T.responses(actions, id).first)
        #expect(ok.statusCode == 200)
        #expect(try ok.headers.subscriptionState?.state == .pending)

        let allowed = h.core.reconfigure(try Self.marysPolicy("allow"), mapper: Self.mapper, now: h.now)
        let (leg, context) = try #require(T.sent(allowed, to: .oma).first)
        Self.answer(&h, leg, context)
        let (_, activated) = h.receive(try T.omaNotify(leg, cseq: 2, body: T.pidf(Self.mary, activity: "away")), from: .oma)
        let (notify, _) = try #require(T.sent(activated, to: .enterprise).first)
        #expect(try notify.headers.subscriptionState?.state == .active)
        #expect(T.availability(try CategoriesDocument(bytes: notify.body)).0 == 15500)
    }

    @Test func singleSubscriptionToAPendingResourceThatIsRejectedEndsRejected() throws {
        var h = try T.Harness()
        let (id, legs) = try Self.subscribe(&h, resources: [Self.john], single: true)
        let leg = try #require(legs[Self.john])
        let (_, answered) = h.receive(try T.omaNotify(leg, cseq: 2, state: "pending", body: []), from: .oma)
        #expect(try T.responses(answered, id).first?.headers.subscriptionState?.state == .pending)
        let (_, ended) = h.receive(try T.omaNotify(leg, cseq: 3, state: "terminated;reason=rejected", body: []), from: .oma)
        let (notify, _) = try #require(T.sent(ended, to: .enterprise).first)
        #expect(try notify.headers.subscriptionState?.state == .terminated)
        #expect(try notify.headers.subscriptionState?.reason == "rejected")
        #expect(h.core.counts.enterpriseWatches == 0)
        #expect(h.core.counts.omaLegs == 0)
    }

    @Test func politelyBlockedWatcherNeverSeesTheOMAPendingState() throws {
        var h = try T.Harness()
        let request = try T.enterpriseSubscribe(resources: [Self.john], from: "sip:pc@cloud.example")
        let (id, actions) = h.receive(request, from: .enterprise, network: .publicCloud)
        let (subscribe, context) = try #require(T.sent(actions, to: .oma).first)
        Self.answer(&h, subscribe, context)
        let (_, answered) = h.receive(try T.omaNotify(subscribe, cseq: 2, state: "pending", body: []), from: .oma)
        let first = try T.firstCategories(try #require(T.responses(answered, id).first))
        // The never-published view: listed nowhere, every category empty.
        #expect(first.list.resources.isEmpty)
        #expect(first.categories.first?.categories == [Category(name: .state), Category(name: .note), Category(name: .contactCard)])
    }
}
