import NIOCore
import PresenceDocuments
import MSPresenceEvents
import PresenceGateway
import PresenceMapping
import SIPMessages
import Testing

/// The bridging flows of docs/flows.md on the sans-IO core: messages in, messages out.
@Suite struct GatewayCoreTests {
    struct Unexpected: Error { var what: String }

    /// Drives a core: delivers text messages, keeps the clock, collects what it sends.
    struct Harness {
        var core: GatewayCore
        var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var nextID: GatewayCore.ServerRequestID = 0

        init(yaml: String = GatewayConfiguration.defaultYAML) throws {
            let configuration = try GatewayConfiguration(yaml: yaml)
            core = GatewayCore(
                configuration: configuration, mapper: PresenceMapper(tables: try MappingTables.builtIn()),
                contacts: [.oma: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5060")),
                           .enterprise: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5061;transport=tcp"))],
                ids: IdentifierSource(token: { "t\($0)" }, jitter: { 0 }))
        }

        mutating func receive(_ request: SIPRequest, from side: GatewayConfiguration.Side,
                              network: SourceNetwork = .federated) -> (GatewayCore.ServerRequestID, [GatewayCore.Action]) {
            nextID += 1
            let watcher = (try? request.headers.from).flatMap { WatcherIdentity(uri: $0.uri.description, network: network) }
            return (nextID, core.receive(request, id: nextID, from: side, watcher: watcher, now: now))
        }
    }

    static func request(_ lines: [String], body: [UInt8] = []) throws -> SIPRequest {
        let head = Array((lines + ["Content-Length: \(body.count)", "", ""]).joined(separator: "\r\n").utf8)
        guard let r = try SIPMessage(parsing: head + body).request else { throw Unexpected(what: "not a request") }
        return r
    }

    static func sent(_ actions: [GatewayCore.Action], to side: GatewayConfiguration.Side) -> [(SIPRequest, GatewayCore.Context)] {
        actions.compactMap { if case .send(let r, let s, let c) = $0, s == side { (r, c) } else { nil } }
    }

    static func responses(_ actions: [GatewayCore.Action], _ id: GatewayCore.ServerRequestID) -> [SIPResponse] {
        actions.compactMap { if case .respond(let i, let r) = $0, i == id { r } else { nil } }
    }

    static func categories(availability: UInt32, token: MSActivityToken? = nil, uri: String,
                           publishTime: String = "2026-11-22T10:00:00.000") -> CategoriesDocument {
        let state = MSState(type: .aggregateState, availability: availability,
                            activities: token.map { [MSActivity(token: $0)] } ?? [])
        return CategoriesDocument(uri: uri, categories: [Category(name: .state, instance: 1, publishTime: publishTime, payload: .state(state))])
    }

    // MARK: Flow 2: OMA watcher → enterprise presentity

    static func omaSubscribe(accept: String = "application/pidf+xml", expires: Int = 600, cseq: Int = 1,
                             toTag: String? = nil, event: String = "presence") throws -> SIPRequest {
        try request([
            "SUBSCRIBE sip:bob@contoso.com SIP/2.0",
            "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKo\(cseq)",
            "Max-Forwards: 69",
            "From: <sip:alice@oma.example>;tag=oma1",
            "To: <sip:bob@contoso.com>" + (toTag.map { ";tag=\($0)" } ?? ""),
            "Call-ID: oma-call-1",
            "CSeq: \(cseq) SUBSCRIBE",
            "Contact: <sip:alice@127.0.0.1:5070>",
            "Event: \(event)",
            "Accept: \(accept)",
            "Expires: \(expires)",
        ])
    }

    /// The enterprise's 200 OK to a category SUBSCRIBE, its first notification piggybacked (§4.6).
    static func enterpriseOK(_ subscribe: SIPRequest, _ document: CategoriesDocument) -> SIPResponse {
        let body = BatchSubscribeResponse(list: RLMIList(uri: "sip:alice@oma.example"), categories: [document]).multipart(boundary: "b1")
        return SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "ent1", headers: [
            (.contact, "<sip:pool.contoso.com:5061;transport=tls>"), (.expires, "3600"), (.require, "eventlist"),
            (.contentType, BatchCategorySubscription.multipartContentType(boundary: "b1")), (.event, "presence"),
            (.subscriptionState, "active;expires=3600"), (.msPiggybackCSeq, "1"),
        ], body: body.bytes)
    }

    /// A BENOTIFY in the dialog the core's SUBSCRIBE created.
    static func enterpriseBENOTIFY(_ subscribe: SIPRequest, cseq: Int, _ document: CategoriesDocument) throws -> SIPRequest {
        let from = try #require(try subscribe.headers.from)
        return try request([
            "BENOTIFY sip:gw@127.0.0.1:5061;transport=tcp SIP/2.0",
            "Via: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKbn\(cseq)",
            "Max-Forwards: 70",
            "From: <sip:bob@contoso.com>;tag=ent1",
            "To: <\(from.uri)>;tag=\(from.tag ?? "")",
            "Call-ID: \(subscribe.headers.callID ?? "")",
            "CSeq: \(cseq) BENOTIFY",
            "Event: presence",
            "Subscription-State: active;expires=3000",
            "Require: eventlist",
            "Content-Type: application/msrtc-event-categories+xml",
        ], body: document.serialized())
    }

    @Test func omaWatcherGetsEnterpriseStateAsPIDFAndOnlyRealChanges() throws {
        var h = try Harness()
        let (id, actions) = h.receive(try Self.omaSubscribe(), from: .oma)
        // A batched category SUBSCRIBE toward the enterprise on behalf of the watcher (§4.5 shape:
        // From = To = the watcher), naming the resource and the bridged categories.
        let (subscribe, context) = try #require(Self.sent(actions, to: .enterprise).first)
        #expect(subscribe.uri.description == "sip:bob@contoso.com")
        #expect(try subscribe.headers.from?.uri.description == "sip:alice@oma.example")
        #expect(try subscribe.headers.to?.uri.description == "sip:alice@oma.example")
        #expect(try subscribe.headers.require == ["adhoclist", "categoryList"])
        let batch = try BatchSubscribe(bytes: subscribe.body)
        #expect(batch.actions[0].resources.map(\.uri) == ["sip:bob@contoso.com"])
        #expect(Set(batch.actions[0].categories) == [.state, .note, .contactCard, .calendarData, .services])
        #expect(Self.responses(actions, id).isEmpty)

        let answered = h.core.receive(Self.enterpriseOK(subscribe, Self.categories(availability: 15500, uri: "sip:bob@contoso.com")),
                                      to: subscribe, context: context, now: h.now)
        let ok = try #require(Self.responses(answered, id).first)
        #expect(ok.statusCode == 200)
        let (notify, _) = try #require(Self.sent(answered, to: .oma).first)
        #expect(notify.method == .notify)
        #expect(try notify.headers.contentType?.mediaType == "application/pidf+xml")
        // MS-PRES 3.7.5.4 row 9: 15000-17999 → open, away.
        let pidf = String(decoding: notify.body, as: UTF8.self)
        #expect(pidf.contains("<basic>open</basic>"))
        #expect(pidf.contains("away"))

        // An enterprise change to 6500 (3.7.5.4 row 4: busy) reaches the watcher; BENOTIFY gets no answer.
        h.now = h.now + .seconds(1)
        let busy = try Self.enterpriseBENOTIFY(subscribe, cseq: 2, Self.categories(availability: 6500, uri: "sip:bob@contoso.com"))
        let (bnID, changed) = h.receive(busy, from: .enterprise)
        #expect(Self.responses(changed, bnID).isEmpty)
        let (busyNotify, _) = try #require(Self.sent(changed, to: .oma).first)
        #expect(String(decoding: busyNotify.body, as: UTF8.self).contains("busy"))
        // The same state again: nothing to tell the watcher.
        let (_, same) = h.receive(try Self.enterpriseBENOTIFY(subscribe, cseq: 3, Self.categories(availability: 6500, uri: "sip:bob@contoso.com")), from: .enterprise)
        #expect(Self.sent(same, to: .oma).isEmpty)

        // Unsubscribe crosses: 200, final NOTIFY, and Expires 0 toward the enterprise.
        let okTag = try #require(try ok.headers.to?.tag)
        let (unsubID, unsub) = h.receive(try Self.omaSubscribe(expires: 0, cseq: 2, toTag: okTag), from: .oma)
        #expect(Self.responses(unsub, unsubID).first?.statusCode == 200)
        let final = try #require(Self.sent(unsub, to: .oma).first?.0)
        #expect(try final.headers.subscriptionState?.state == .terminated)
        let enterpriseUnsub = try #require(Self.sent(unsub, to: .enterprise).first?.0)
        #expect(try enterpriseUnsub.headers.expires == 0)
        #expect(h.core.counts.omaWatches == 0)
    }

    /// A refresh's 200 OK whose piggybacked state was published before the state a BENOTIFY
    /// already brought (the BENOTIFY overtook the answer) leaves the newer state in place; the
    /// server stamps publishTime itself ([MS-PRES] §3.2.5.1.2). Later states still pass, from a
    /// BENOTIFY or a refresh's answer.
    @Test func anOlderPiggybackedStateNeverReplacesANewerOne() throws {
        var h = try Harness()
        let bob = "sip:bob@contoso.com"
        // The watcher's subscription outlasts the enterprise leg's first refresh.
        let (_, actions) = h.receive(try Self.omaSubscribe(expires: 3600), from: .oma)
        let (subscribe, context) = try #require(Self.sent(actions, to: .enterprise).first)
        let answered = h.core.receive(Self.enterpriseOK(subscribe, Self.categories(availability: 15500, uri: bob)),
                                      to: subscribe, context: context, now: h.now)
        let refreshAt = try #require(answered.compactMap { if case .schedule(.refresh(context), let at) = $0 { at } else { nil } }.first)
        // 10:05: busy (MS-PRES 3.7.5.4 row 4).
        let busy = Self.categories(availability: 6500, uri: bob, publishTime: "2026-11-22T10:05:00.000")
        let (_, changed) = h.receive(try Self.enterpriseBENOTIFY(subscribe, cseq: 2, busy), from: .enterprise)
        #expect(Self.sent(changed, to: .oma).contains { String(decoding: $0.0.body, as: UTF8.self).contains("busy") })

        // The refresh's answer carries the 10:00 state (away) after it: the watcher is told nothing.
        h.now = refreshAt
        let refresh = try #require(Self.sent(h.core.fire(.refresh(context), now: h.now), to: .enterprise).first?.0)
        let stale = h.core.receive(Self.enterpriseOK(refresh, Self.categories(availability: 15500, uri: bob)),
                                   to: refresh, context: context, now: h.now)
        #expect(Self.sent(stale, to: .oma).isEmpty, "the older piggybacked state went to the watcher")
        // A fraction of a second later is later: 10:05:00.250, online (3.7.5.4 row 1: open).
        let online = Self.categories(availability: 3500, uri: bob, publishTime: "2026-11-22T10:05:00.250")
        let (_, back) = h.receive(try Self.enterpriseBENOTIFY(subscribe, cseq: 3, online), from: .enterprise)
        let notify = try #require(Self.sent(back, to: .oma).first?.0)
        #expect(!String(decoding: notify.body, as: UTF8.self).contains("busy"))
        #expect(!String(decoding: notify.body, as: UTF8.self).contains("away"))
        #expect(String(decoding: notify.body, as: UTF8.self).contains("<basic>open</basic>"))
    }

    /// RFC 6665 §4.2.1.1: terms the gateway cannot grant are refused before anything is sent
    /// on; an initial SUBSCRIBE gets a To tag of its own, a refresh its dialog's, and the
    /// subscription it refreshes goes on.
    @Test func refusedTermsAreAnsweredAndARefusedRefreshKeepsItsSubscription() throws {
        var h = try Harness()
        // Shorter than subscriptions.minimum-expires (60 s): 423 with Min-Expires.
        let (briefID, brief) = h.receive(try Self.omaSubscribe(expires: 30), from: .oma)
        let tooBrief = try #require(Self.responses(brief, briefID).first)
        #expect(tooBrief.statusCode == 423)
        #expect(try tooBrief.headers.minExpires == 60)
        #expect(try tooBrief.headers.to?.tag?.isEmpty == false)
        #expect(Self.sent(brief, to: .enterprise).isEmpty)
        #expect(h.core.counts.omaWatches == 0)

        let (id, actions) = h.receive(try Self.omaSubscribe(), from: .oma)
        let (subscribe, context) = try #require(Self.sent(actions, to: .enterprise).first)
        let answered = h.core.receive(Self.enterpriseOK(subscribe, Self.categories(availability: 3500, uri: "sip:bob@contoso.com")),
                                      to: subscribe, context: context, now: h.now)
        let okTag = try #require(try Self.responses(answered, id).first?.headers.to?.tag)
        // A refresh accepting none of the formats: 406 in the dialog.
        let (refreshID, refresh) = h.receive(try Self.omaSubscribe(accept: "text/plain", cseq: 2, toTag: okTag), from: .oma)
        let refused = try #require(Self.responses(refresh, refreshID).first)
        #expect(refused.statusCode == 406)
        #expect(try refused.headers.to?.tag == okTag)
        #expect(Self.sent(refresh, to: .enterprise).isEmpty && Self.sent(refresh, to: .oma).isEmpty)
        #expect(h.core.counts.omaWatches == 1)
    }

    @Test func msrtcWatcherReceives15500_300_100() throws {
        var h = try Harness()
        let (id, actions) = h.receive(try Self.omaSubscribe(accept: "text/xml+msrtc.pidf"), from: .oma)
        let (subscribe, context) = try #require(Self.sent(actions, to: .enterprise).first)
        let answered = h.core.receive(Self.enterpriseOK(subscribe, Self.categories(availability: 15500, uri: "sip:bob@contoso.com")),
                                      to: subscribe, context: context, now: h.now)
        #expect(Self.responses(answered, id).first?.statusCode == 200)
        let (notify, _) = try #require(Self.sent(answered, to: .oma).first)
        #expect(try notify.headers.contentType?.mediaType == "text/xml+msrtc.pidf")
        // MS-PRES 3.7.5.5 row 9: 15000-17999 → avail 15500, availability aggregate 300, activity aggregate 100.
        let msrtc = try MSRTCPresentity(bytes: notify.body)
        #expect(msrtc.states.first?.avail == 15500)
        #expect(msrtc.availabilityAggregate == 300)
        #expect(msrtc.activityAggregate == 100)
    }

    @Test func enterpriseRefusalIsTheOMAWatchersAnswer() throws {
        var h = try Harness()
        let (id, actions) = h.receive(try Self.omaSubscribe(), from: .oma)
        let (subscribe, context) = try #require(Self.sent(actions, to: .enterprise).first)
        let answered = h.core.receive(SIPResponse(replyingTo: subscribe, statusCode: 404, toTag: "x"), to: subscribe, context: context, now: h.now)
        #expect(Self.responses(answered, id).first?.statusCode == 404)
        #expect(h.core.counts.omaWatches == 0 && h.core.counts.enterpriseLegs == 0)
    }

    // MARK: Flow 3: following the enterprise's batch rejections

    /// A batch 200 OK whose RLMI part lists `rejected` and whose categories parts carry `accepted`.
    static func batchOK(_ subscribe: SIPRequest, rejected: [(String, RLMIList.Instance)] = [],
                        accepted: [CategoriesDocument] = [], tag: String = "ent1") -> SIPResponse {
        let list = RLMIList(uri: "sip:alice@oma.example", resources: rejected.map { RLMIList.Resource(uri: $0.0, instances: [$0.1]) })
        let body = BatchSubscribeResponse(list: list, categories: accepted).multipart(boundary: "b9")
        return SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: tag, headers: [
            (.contact, "<sip:pool.contoso.com:5061;transport=tls>"), (.expires, "3600"), (.require, "eventlist"),
            (.contentType, BatchCategorySubscription.multipartContentType(boundary: "b9")), (.event, "presence"),
            (.subscriptionState, "active;expires=3600"), (.msPiggybackCSeq, "1"),
        ], body: body.bytes)
    }

    static func omaSubscribe(to resource: String, callID: String) throws -> SIPRequest {
        try request([
            "SUBSCRIBE \(resource) SIP/2.0",
            "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK\(callID)",
            "Max-Forwards: 69",
            "From: <sip:alice@oma.example>;tag=\(callID)",
            "To: <\(resource)>",
            "Call-ID: \(callID)",
            "CSeq: 1 SUBSCRIBE",
            "Contact: <sip:alice@127.0.0.1:5070>",
            "Event: presence",
            "Accept: application/pidf+xml",
            "Expires: 600",
        ])
    }

    @Test func poolFqdnResubscribeGoesToThePoolAndGroupsLaterResourcesThere() throws {
        var h = try Harness()
        let pool = "sip:pool2.contoso.com@contoso.com;gruu;opaque=srvr:HomeServer:x"
        let (bobID, first) = h.receive(try Self.omaSubscribe(to: "sip:bob@contoso.com", callID: "c-bob"), from: .oma)
        let (home, homeContext) = try #require(Self.sent(first, to: .enterprise).first)
        let hinted = h.core.receive(Self.batchOK(home, rejected: [("sip:bob@contoso.com",
            RLMIList.Instance(state: .resubscribe, cid: "bob@contoso.com", poolFqdn: pool))]), to: home, context: homeContext, now: h.now)
        // bob moves to a batch dialog with the pool GRUU as Request-URI; the home dialog, now empty, is unsubscribed.
        let sends = Self.sent(hinted, to: .enterprise).map(\.0)
        let toPool = try #require(sends.first { $0.uri.description == pool })
        #expect(try toPool.headers.require == ["adhoclist", "categoryList"])
        #expect(try BatchSubscribe(bytes: toPool.body).actions[0].resources.map(\.uri) == ["sip:bob@contoso.com"])
        let unsubscribeHome = sends.first { $0.uri.description != pool && $0.headers[.expires] == "0" }
        #expect(unsubscribeHome != nil)
        let poolContext = try #require(Self.sent(hinted, to: .enterprise).first { $0.0.uri.description == pool }?.1)
        let answered = h.core.receive(Self.batchOK(toPool, accepted: [Self.categories(availability: 3500, uri: "sip:bob@contoso.com")], tag: "pool1"),
                                      to: toPool, context: poolContext, now: h.now)
        #expect(Self.responses(answered, bobID).first?.statusCode == 200)

        // carol turns out to live on the same pool: she joins the existing pool dialog in-dialog.
        let (_, second) = h.receive(try Self.omaSubscribe(to: "sip:carol@contoso.com", callID: "c-carol"), from: .oma)
        let (home2, home2Context) = try #require(Self.sent(second, to: .enterprise).first)
        let moved = h.core.receive(Self.batchOK(home2, rejected: [("sip:carol@contoso.com",
            RLMIList.Instance(state: .resubscribe, cid: "carol@contoso.com", poolFqdn: pool))], tag: "ent2"),
            to: home2, context: home2Context, now: h.now)
        let add = try #require(Self.sent(moved, to: .enterprise).map(\.0).first { (try? $0.headers.to)??.tag == "pool1" })
        #expect(add.headers.callID == toPool.headers.callID)
        let addBody = try BatchSubscribe(bytes: add.body)
        #expect(addBody.actions.map(\.kind) == [.subscribe])
        #expect(addBody.actions[0].resources.map(\.uri) == ["sip:carol@contoso.com"])
    }

    /// A second OMA watch of the same watcher and resource (another device, or a stand-in for a
    /// watcher at the OMA presence server) does not join the pool dialog that already carries the
    /// resource, where it would take the resource's notifications from the first: it gets a
    /// dialog of its own, and the first watcher is still notified.
    @Test func aSecondWatchOfTheSameResourceGetsAPoolDialogOfItsOwn() throws {
        var h = try Harness()
        let pool = "sip:pool2.contoso.com@contoso.com;gruu;opaque=srvr:HomeServer:x"
        let (_, first) = h.receive(try Self.omaSubscribe(to: "sip:bob@contoso.com", callID: "c-bob"), from: .oma)
        let (home, homeContext) = try #require(Self.sent(first, to: .enterprise).first)
        let hinted = h.core.receive(
            Self.batchOK(home, rejected: [("sip:bob@contoso.com",
                RLMIList.Instance(state: .resubscribe, cid: "bob@contoso.com", poolFqdn: pool))]),
            to: home, context: homeContext, now: h.now)
        let (toPool, poolContext) = try #require(Self.sent(hinted, to: .enterprise).first { $0.0.uri.description == pool })
        _ = h.core.receive(Self.batchOK(toPool, accepted: [Self.categories(availability: 3500, uri: "sip:bob@contoso.com")]),
                           to: toPool, context: poolContext, now: h.now)

        let (_, second) = h.receive(try Self.omaSubscribe(to: "sip:bob@contoso.com", callID: "c-bob2"), from: .oma)
        let own = try #require(Self.sent(second, to: .enterprise).first?.0)
        #expect(own.uri.description == pool)
        #expect(own.headers.callID != toPool.headers.callID && (try? own.headers.to)??.tag == nil)

        let (_, changed) = h.receive(try Self.enterpriseBENOTIFY(toPool, cseq: 2, Self.categories(availability: 6500, uri: "sip:bob@contoso.com")),
                                     from: .enterprise)
        #expect(Self.sent(changed, to: .oma).contains { $0.0.headers.callID == "c-bob" })
    }

    @Test func resubscribeWithoutPoolIsASingleSubscribeToTheResource() throws {
        var h = try Harness()
        let (id, first) = h.receive(try Self.omaSubscribe(to: "sip:john@contoso.com", callID: "c-john"), from: .oma)
        let (home, context) = try #require(Self.sent(first, to: .enterprise).first)
        let next = h.core.receive(Self.batchOK(home, rejected: [("sip:john@contoso.com",
            RLMIList.Instance(state: .resubscribe, cid: "john@contoso.com"))]), to: home, context: context, now: h.now)
        let (single, singleContext) = try #require(Self.sent(next, to: .enterprise).first { !$0.0.headers.contains(.require) })
        #expect(single.uri.description == "sip:john@contoso.com")
        #expect(try single.headers.to?.uri.description == "sip:john@contoso.com")
        let answered = h.core.receive(Self.enterpriseOK(single, Self.categories(availability: 3500, uri: "sip:john@contoso.com")),
                                      to: single, context: singleContext, now: h.now)
        #expect(Self.responses(answered, id).first?.statusCode == 200)
    }

    @Test func quotaExceededRefusesTheWatcherWithRetryAfter() throws {
        var h = try Harness()
        let (id, first) = h.receive(try Self.omaSubscribe(to: "sip:dan@contoso.com", callID: "c-dan"), from: .oma)
        let (home, context) = try #require(Self.sent(first, to: .enterprise).first)
        let next = h.core.receive(Self.batchOK(home, rejected: [("sip:dan@contoso.com",
            RLMIList.Instance(state: .terminated, reason: "quotaExceeded", cid: "dan@contoso.com", statusCode: 413))]),
            to: home, context: context, now: h.now)
        let refusal = try #require(Self.responses(next, id).first)
        #expect(refusal.statusCode == 503)
        #expect(refusal.headers[.retryAfter] == "3600")
        #expect(h.core.counts.omaWatches == 0)
    }

    @Test func enterpriseThatRefusesBatchGetsSingleSubscribesFromThenOn() throws {
        var h = try Harness()
        let (id, first) = h.receive(try Self.omaSubscribe(to: "sip:bob@contoso.com", callID: "c-b1"), from: .oma)
        let (batch, context) = try #require(Self.sent(first, to: .enterprise).first)
        #expect(batch.headers.contains(.require))
        let fallback = h.core.receive(SIPResponse(replyingTo: batch, statusCode: 403, toTag: "x"), to: batch, context: context, now: h.now)
        #expect(Self.responses(fallback, id).isEmpty)
        let (single, singleContext) = try #require(Self.sent(fallback, to: .enterprise).first)
        #expect(!single.headers.contains(.require))
        #expect(try single.headers.to?.uri.description == "sip:bob@contoso.com")
        let answered = h.core.receive(Self.enterpriseOK(single, Self.categories(availability: 3500, uri: "sip:bob@contoso.com")),
                                      to: single, context: singleContext, now: h.now)
        #expect(Self.responses(answered, id).first?.statusCode == 200)
        // The next watcher goes single at once.
        let (_, later) = h.receive(try Self.omaSubscribe(to: "sip:carol@contoso.com", callID: "c-c1"), from: .oma)
        #expect(Self.sent(later, to: .enterprise).first.map { !$0.0.headers.contains(.require) } == true)
    }

    // MARK: Flow 1: enterprise watcher → OMA presentity

    static func enterpriseSubscribe(resources: [String], expires: Int = 3600, from: String = "sip:carol@contoso.com") throws -> SIPRequest {
        let batch = BatchSubscribe(uri: from, actions: [
            BatchSubscribe.Action(kind: .subscribe, resources: resources.map { .init(uri: $0) }, categories: [.state, .note, .contactCard]),
        ])
        return try request([
            "SUBSCRIBE \(from) SIP/2.0",
            "Via: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKe1",
            "Max-Forwards: 69",
            "From: <\(from)>;tag=ent-w1;epid=5e434f57d3",
            "To: <\(from)>",
            "Call-ID: ent-call-1",
            "CSeq: 1 SUBSCRIBE",
            "Contact: <\(from);opaque=user:epid:x;gruu>",
            "Event: presence",
            "Accept: application/msrtc-event-categories+xml, application/rlmi+xml, multipart/related",
            "Supported: ms-benotify, ms-piggyback-first-notify, eventlist",
            "Require: adhoclist, categoryList",
            "Expires: \(expires)",
            "Content-Type: application/msrtc-adrl-categorylist+xml",
        ], body: batch.serialized())
    }

    static func pidf(_ entity: String, basic: String = "open", activity: String?) -> [UInt8] {
        let activities = activity.map { "<rpid:activities><rpid:\($0)/></rpid:activities>" } ?? ""
        return Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" \
            xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="\(entity)">
            <tuple id="t1"><status><basic>\(basic)</basic></status></tuple>
            <dm:person id="p1">\(activities)</dm:person>
            </presence>
            """.utf8)
    }

    /// A NOTIFY in the OMA leg's dialog (Kamailio's shape: first NOTIFY CSeq 2).
    static func omaNotify(_ subscribe: SIPRequest, cseq: Int, state: String = "active;expires=3500", body: [UInt8],
                          event: String = "presence", contentType: String = "application/pidf+xml") throws -> SIPRequest {
        let from = try #require(try subscribe.headers.from)
        return try request([
            "NOTIFY sip:gw@127.0.0.1:5060 SIP/2.0",
            "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKn\(cseq)",
            "Max-Forwards: 70",
            "From: <\(subscribe.uri)>;tag=kam1",
            "To: <\(from.uri)>;tag=\(from.tag ?? "")",
            "Call-ID: \(subscribe.headers.callID ?? "")",
            "CSeq: \(cseq) NOTIFY",
            "Contact: <sip:127.0.0.1:5070>",
            "Event: \(event)",
            "Subscription-State: \(state)",
        ] + (body.isEmpty ? [] : ["Content-Type: \(contentType)"]), body: body)
    }

    static func firstCategories(_ response: SIPResponse) throws -> BatchSubscribeResponse {
        guard let multipart = try SIPMessage.response(response).multipartBody() else { throw Unexpected(what: "not multipart") }
        return try BatchSubscribeResponse(multipart: multipart)
    }

    static func availability(_ document: CategoriesDocument?) -> (UInt32?, MSActivityToken?) {
        for category in document?.categories ?? [] {
            if case .state(let s) = category.payload { return (s.availability, s.activities.first?.token) }
        }
        return (nil, nil)
    }

    @Test func enterpriseWatcherSeesOMABusyAsAvailabilityInTheBusyBand() throws {
        var h = try Harness()
        let (id, actions) = h.receive(try Self.enterpriseSubscribe(resources: ["sip:john@oma.example"]), from: .enterprise, network: .sameEnterprise)
        let (subscribe, context) = try #require(Self.sent(actions, to: .oma).first)
        #expect(subscribe.uri.description == "sip:john@oma.example")
        #expect(try subscribe.headers.from?.uri.description == "sip:carol@contoso.com")
        #expect(try subscribe.headers.accept?.first?.subtype == "pidf+xml")
        #expect(Self.responses(actions, id).isEmpty)
        _ = h.core.receive(SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "kam1", headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                           to: subscribe, context: context, now: h.now)
        // Kamailio's first NOTIFY with "on-the-phone": the enterprise watcher's answer goes out now.
        let (notifyID, answered) = h.receive(try Self.omaNotify(subscribe, cseq: 2, body: Self.pidf("sip:john@oma.example", activity: "on-the-phone")), from: .oma)
        #expect(Self.responses(answered, notifyID).first?.statusCode == 200)
        let ok = try #require(Self.responses(answered, id).first)
        #expect(ok.statusCode == 200)
        #expect(ok.headers[.msPiggybackCSeq] == "1")
        let first = try Self.firstCategories(ok)
        #expect(first.list.resources.isEmpty)
        let (availability, token) = Self.availability(first.categories.first)
        #expect((6000...7499).contains(availability ?? 0))
        #expect(token == "on-the-phone")

        // A later "busy" arrives as a BENOTIFY (the watcher supports ms-benotify), availability 6000-7499, no token.
        h.now = h.now + .seconds(2)
        let (_, changed) = h.receive(try Self.omaNotify(subscribe, cseq: 3, body: Self.pidf("sip:john@oma.example", activity: "busy")), from: .oma)
        let (benotify, _) = try #require(Self.sent(changed, to: .enterprise).first)
        #expect(benotify.method == .benotify)
        let update = try CategoriesDocument(bytes: benotify.body)
        #expect(update.uri == "sip:john@oma.example")
        #expect((6000...7499).contains(Self.availability(update).0 ?? 0))
        #expect(Self.availability(update).1 == nil)
    }

    @Test func slowOMASideIsAnsweredAfterThePiggybackWaitThenNotified() throws {
        var h = try Harness()
        let (id, actions) = h.receive(try Self.enterpriseSubscribe(resources: ["sip:john@oma.example"]), from: .enterprise, network: .sameEnterprise)
        let (subscribe, _) = try #require(Self.sent(actions, to: .oma).first)
        let wait = actions.compactMap { if case .schedule(.firstAnswer(let c), let at) = $0 { (c, at) } else { nil } }
        let (context, at) = try #require(wait.first)
        #expect(at == h.now + .milliseconds(500))
        h.now = at
        let answered = h.core.fire(.firstAnswer(context), now: h.now)
        let ok = try #require(Self.responses(answered, id).first)
        // Nothing known yet: the categories asked for, empty (as for a presentity that never published).
        #expect(try Self.firstCategories(ok).categories.first?.categories == [Category(name: .state), Category(name: .note), Category(name: .contactCard)])
        let (_, later) = h.receive(try Self.omaNotify(subscribe, cseq: 2, body: Self.pidf("sip:john@oma.example", activity: "away")), from: .oma)
        let (benotify, _) = try #require(Self.sent(later, to: .enterprise).first)
        // RPID away → 15500 (Mappings/pidf-availability.tsv "open away").
        #expect(Self.availability(try CategoriesDocument(bytes: benotify.body)).0 == 15500)
    }

    @Test func watcherWithoutPiggybackIsAnsweredAtOnceAndNotifiedLater() throws {
        var h = try Harness()
        var request = try Self.enterpriseSubscribe(resources: ["sip:john@oma.example"])
        request.headers.set(.supported, "ms-benotify, eventlist")
        let (id, actions) = h.receive(request, from: .enterprise, network: .sameEnterprise)
        let ok = try #require(Self.responses(actions, id).first)
        #expect(ok.statusCode == 200)
        #expect(ok.headers[.msPiggybackCSeq] == nil)
        // The first notification goes out as a BENOTIFY with the categories asked, empty for now.
        let first = try #require(Self.sent(actions, to: .enterprise).first?.0)
        #expect(first.method == .benotify)
        let (subscribe, context) = try #require(Self.sent(actions, to: .oma).first)
        _ = h.core.receive(SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "kam1", headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                           to: subscribe, context: context, now: h.now)
        let (_, later) = h.receive(try Self.omaNotify(subscribe, cseq: 2, body: Self.pidf("sip:john@oma.example", activity: "away")), from: .oma)
        let (benotify, _) = try #require(Self.sent(later, to: .enterprise).first)
        #expect(Self.availability(try CategoriesDocument(bytes: benotify.body)).0 == 15500)
    }

    @Test func politelyBlockedEnterpriseWatcherGetsTheNeverPublishedBytes() throws {
        var h = try Harness()
        // The default policy politely blocks publicCloud watchers.
        func firstAnswer(network: SourceNetwork, pidf: [UInt8]) throws -> (SIPResponse, [GatewayCore.Action]) {
            let (id, actions) = h.receive(try Self.enterpriseSubscribe(resources: ["sip:john@oma.example"], from: "sip:pc@cloud.example"),
                                          from: .enterprise, network: network)
            let (subscribe, context) = try #require(Self.sent(actions, to: .oma).first)
            _ = h.core.receive(SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "kam1",
                                           headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                               to: subscribe, context: context, now: h.now)
            let (_, answered) = h.receive(try Self.omaNotify(subscribe, cseq: 2, body: pidf), from: .oma)
            let ok = try #require(Self.responses(answered, id).first)
            let (_, changed) = h.receive(try Self.omaNotify(subscribe, cseq: 3, body: Self.pidf("sip:john@oma.example", activity: "busy")), from: .oma)
            return (ok, changed)
        }
        let (blocked, blockedLater) = try firstAnswer(network: .publicCloud, pidf: Self.pidf("sip:john@oma.example", activity: "on-the-phone"))
        // The same watcher's view of a presentity that never published: closed, no activity.
        let (never, _) = try firstAnswer(network: .publicCloud, pidf: Self.pidf("sip:john@oma.example", basic: "closed", activity: nil))
        #expect(try Self.firstCategories(blocked).categories.map { $0.serialized() } == Self.firstCategories(never).categories.map { $0.serialized() })
        #expect(try Self.firstCategories(blocked).list == Self.firstCategories(never).list)
        // Same headers apart from dialog identifiers (To tag) and the multipart boundary token.
        func shape(_ r: SIPResponse) -> [String] {
            r.headers.fields.filter { $0.name != .to && $0.name != .contentType }.map { "\($0.name): \($0.value)" }
        }
        #expect(shape(blocked) == shape(never))
        #expect(blocked.statusCode == 200)
        // Its presentity's real changes are never told.
        #expect(Self.sent(blockedLater, to: .enterprise).isEmpty)
        // An allowed (federated) watcher does see the real state, so the two are distinguishable in the test.
        let (allowed, _) = try firstAnswer(network: .federated, pidf: Self.pidf("sip:john@oma.example", activity: "on-the-phone"))
        #expect(try Self.firstCategories(allowed).categories.map { $0.serialized() } != Self.firstCategories(never).categories.map { $0.serialized() })
    }

    @Test func omaSideThatStopsAnsweringEndsTheResourceWithoutLeaks() throws {
        var h = try Harness()
        let (id, actions) = h.receive(try Self.enterpriseSubscribe(resources: ["sip:john@oma.example"]), from: .enterprise, network: .sameEnterprise)
        let (subscribe, context) = try #require(Self.sent(actions, to: .oma).first)
        let granted = h.core.receive(SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "kam1", headers: [(.expires, "600"), (.contact, "<sip:127.0.0.1:5070>")]),
                                     to: subscribe, context: context, now: h.now)
        let refreshAt = try #require(granted.compactMap { if case .schedule(.refresh, let at) = $0 { at } else { nil } }.first)
        let (_, answered) = h.receive(try Self.omaNotify(subscribe, cseq: 2, body: Self.pidf("sip:john@oma.example", activity: "away")), from: .oma)
        #expect(Self.responses(answered, id).first?.statusCode == 200)
        // The refresh times out (the transaction layer reports 408).
        h.now = refreshAt
        let refresh = try #require(Self.sent(h.core.fire(.refresh(context), now: h.now), to: .oma).first?.0)
        let failed = h.core.receive(SIPResponse(replyingTo: refresh, statusCode: 408), to: refresh, context: context, now: h.now)
        let expiry = try #require(failed.compactMap { if case .schedule(.expiry(let c), let at) = $0 { (c, at) } else { nil } }.first)
        h.now = expiry.1
        let ended = h.core.fire(.expiry(expiry.0), now: h.now)
        // The enterprise watcher is told the resource ended (RLMI terminated), and the leg is gone.
        let (notify, _) = try #require(Self.sent(ended, to: .enterprise).first)
        guard let multipart = try SIPMessage.request(notify).multipartBody() else { throw Unexpected(what: "no RLMI") }
        let instance = try BatchSubscribeResponse(multipart: multipart).list.resources.first?.instances.first
        #expect(instance?.state == .terminated)
        #expect(instance?.reason == "timeout")
        #expect(h.core.counts.omaLegs == 0)
        #expect(h.core.counts.enterpriseWatches == 1)
    }
}

/// Flow 4, OMA → enterprise: the gateway as presence server of linked identities.
@Suite struct LinkedIdentityPublicationTests {
    typealias H = GatewayCoreTests

    static let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(
        of: #"- { oma: "sip:alice@oma.example", enterprise: "sip:alice@contoso.com", publish-to-enterprise: false, publish-to-oma: true }"#,
        with: #"- { oma: "sip:bob@oma.example", enterprise: "sip:bob@contoso.com", publish-to-enterprise: true, publish-to-oma: false }"#)

    static func publish(_ body: [UInt8], cseq: Int, ifMatch: String? = nil, uri: String = "sip:bob@oma.example") throws -> SIPRequest {
        try H.request([
            "PUBLISH \(uri) SIP/2.0",
            "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKp\(cseq)",
            "Max-Forwards: 69",
            "From: <\(uri)>;tag=pub1",
            "To: <\(uri)>",
            "Call-ID: pub-1",
            "CSeq: \(cseq) PUBLISH",
            "Event: presence",
            "Expires: 600",
            "Content-Type: application/pidf+xml",
        ] + (ifMatch.map { ["SIP-If-Match: \($0)"] } ?? []), body: body)
    }

    static func publishedStates(_ service: SIPRequest) throws -> [(UInt32, UInt32?)] {
        let body = try CategoryPublish(bytes: service.body)
        return body.publications.compactMap { p in
            guard p.categoryName == .state, case .state(let s)? = p.payload else { return nil }
            return (p.container, s.availability)
        }
    }

    @Test func omaPublicationIsServedToEnterpriseWatchersAndPublishedIntoTheEnterprise() throws {
        var h = try H.Harness(yaml: Self.yaml)
        let (id, first) = h.receive(try Self.publish(H.pidf("sip:bob@oma.example", activity: "busy"), cseq: 1), from: .oma)
        let ok = try #require(H.responses(first, id).first)
        #expect(ok.statusCode == 200)
        let etag = try #require(ok.headers[.sipETag])
        // SERVICE category publish for the enterprise identity: a machineState of 6500 into containers 2 and 3.
        let (service, serviceContext) = try #require(H.sent(first, to: .enterprise).first)
        #expect(service.method == .service)
        #expect(try service.headers.from?.uri.description == "sip:bob@contoso.com")
        #expect(try service.headers.to?.uri.description == "sip:bob@contoso.com")
        let states = try Self.publishedStates(service)
        #expect(states.map(\.0) == [2, 3])
        #expect(states.allSatisfy { $0.1 == 6500 })
        _ = h.core.receive(SIPResponse(replyingTo: service, statusCode: 200, toTag: "svc"), to: service, context: serviceContext, now: h.now)

        // An enterprise watcher of bob@oma.example is served from the publication: no OMA SUBSCRIBE.
        let (watchID, watched) = h.receive(try H.enterpriseSubscribe(resources: ["sip:bob@oma.example"]), from: .enterprise, network: .sameEnterprise)
        #expect(H.sent(watched, to: .oma).isEmpty)
        let answer = try #require(H.responses(watched, watchID).first)
        #expect(H.availability(try H.firstCategories(answer).categories.first).0 == 6500)

        // The publication is modified to "away": the watcher is notified, the enterprise re-published.
        h.now = h.now + .seconds(5)
        let (modID, modified) = h.receive(try Self.publish(H.pidf("sip:bob@oma.example", activity: "away"), cseq: 2, ifMatch: etag), from: .oma)
        #expect(H.responses(modified, modID).first?.statusCode == 200)
        let benotify = try #require(H.sent(modified, to: .enterprise).first { $0.0.method == .benotify }?.0)
        #expect(H.availability(try CategoriesDocument(bytes: benotify.body)).0 == 15500)
        let republish = try #require(H.sent(modified, to: .enterprise).first { $0.0.method == .service }?.0)
        #expect(try Self.publishedStates(republish).allSatisfy { $0.1 == 15500 })
        // The second SERVICE carries the versions the first one's 200 taught (update, not create).
        let versions = try CategoryPublish(bytes: republish.body).publications.map(\.version)
        #expect(versions.allSatisfy { $0 == 1 })
    }

    /// What the gateway publishes for a linked identity, next to what the user's own Lync client
    /// publishes, as the server computes the user's state from both ([MS-PRES] §3.8.5.1.2, the
    /// project's ``StateAggregation``): the OMA device is one more `machineState` endpoint, so a
    /// closed or idle phone leaves the user available while the client is active, and the phone
    /// counts when it is the most active endpoint. Before, its `userState` 18500 made the user
    /// offline (the highest availability wins, §3.8.5.1.2.2). `shutdown` withdraws it.
    @Test func aClosedOMAPhoneLeavesTheUserAvailableWhileTheirClientIsActive() throws {
        var h = try H.Harness(yaml: Self.yaml)
        // The user's Lync client: its machineState (active) in containers 2 and 3, published by the client.
        func lync(_ availability: UInt32) -> StateAggregation.Instance {
            .init(state: MSState(type: .machineState, manual: false, availability: availability), published: 1,
                  expireType: .endpoint, endpointID: "221ef77e-3a68-5570-86ed-6ea5bd4b7ff8")
        }
        // The gateway's instances in container 2 after each SERVICE, as the server holds them.
        var held: [UInt32: StateAggregation.Instance] = [:]
        func apply(_ service: SIPRequest) throws {
            #expect(service.method == .service)
            for p in try CategoryPublish(bytes: service.body).publications where p.categoryName == .state && p.container == 2 {
                if p.expires == 0 {
                    held[p.instance] = nil
                } else if case .state(let state)? = p.payload {
                    held[p.instance] = .init(state: state, published: 2, expireType: p.expireType, endpointID: p.endpointID)
                }
            }
        }
        func userState(lyncAt availability: UInt32) -> UInt32? {
            StateAggregation.aggregateState(of: [lync(availability)] + held.values).availability
        }
        var cseq = 0
        func publish(_ basic: String, _ activity: String?, etag: String?) throws -> (String?, SIPRequest?) {
            cseq += 1
            h.now = h.now + .seconds(5)
            let (id, actions) = h.receive(
                try Self.publish(H.pidf("sip:bob@oma.example", basic: basic, activity: activity), cseq: cseq, ifMatch: etag),
                from: .oma)
            let ok = H.responses(actions, id).first
            #expect(ok?.statusCode == 200)
            let service = H.sent(actions, to: .enterprise).first { $0.0.method == .service }
            if let (request, context) = service {
                _ = h.core.receive(SIPResponse(replyingTo: request, statusCode: 200, toTag: "svc"), to: request, context: context, now: h.now)
            }
            return (ok?.headers[.sipETag] ?? etag, service?.0)
        }

        // The phone is on: one machineState of the gateway's endpoint, never instance 0 or 1 (the
        // server's computed aggregateState, §3.8.5.1.2.7), bound to the endpoint its Contact names.
        var (etag, service) = try publish("open", nil, etag: nil)
        let first = try #require(service)
        try apply(first)
        let published = try CategoryPublish(bytes: first.body).publications.filter { $0.categoryName == .state && $0.expires != 0 }
        #expect(published.map(\.container) == [2, 3])
        for p in published {
            guard case .state(let state)? = p.payload else { continue }
            #expect(state.type == .machineState)
            #expect(state.manual == false)
            #expect(p.instance >= 0x3000_0000 && p.instance < 0x4000_0000, "instance \(p.instance)")
            #expect(p.expireType == .endpoint)
            let endpoint = try #require(p.endpointID)
            #expect(try first.headers.contact.first?.address?.parameters.value("+sip.instance") == "<urn:uuid:\(endpoint)>")
        }
        #expect(userState(lyncAt: 3500) == 3500)

        // The phone goes idle (away): the user's active client still decides.
        (etag, service) = try publish("open", "away", etag: etag)
        try apply(try #require(service))
        #expect(userState(lyncAt: 3500) == 3500)
        // The phone busy while the client is away: the phone is the most active endpoint.
        (etag, service) = try publish("open", "busy", etag: etag)
        try apply(try #require(service))
        #expect(userState(lyncAt: 15500) == 6500)

        // The phone is closed: its machineState is withdrawn, and the user stays available.
        (etag, service) = try publish("closed", nil, etag: etag)
        try apply(try #require(service))
        #expect(held.isEmpty)
        #expect(userState(lyncAt: 3500) == 3500)
        // What the gateway published before, a userState of 18500, would have made them offline.
        let closedAsUserState = StateAggregation.Instance(
            state: MSState(type: .userState, availability: 18500), published: 2, expireType: .static)
        #expect(StateAggregation.aggregateState(of: [lync(3500), closedAsUserState]).availability == 18500)

        // On again, then the gateway stops for good (`shutdown: terminate`): withdrawn.
        (etag, service) = try publish("open", nil, etag: etag)
        try apply(try #require(service))
        #expect(!held.isEmpty)
        let stop = h.core.shutdown(now: h.now)
        let withdrawal = try #require(H.sent(stop, to: .enterprise).first { $0.0.method == .service }?.0)
        try apply(withdrawal)
        #expect(held.isEmpty)
        #expect(try CategoryPublish(bytes: withdrawal.body).publications.allSatisfy { $0.expires == 0 })
    }

    /// Two sources are two endpoints ([MS-PRES] §3.8.5.1.2): a newer source that is closed does
    /// not hide an older one that is open and busy, as the newest publication alone did.
    @Test func severalSourcesAreAggregatedAsEndpoints() throws {
        var h = try H.Harness(yaml: Self.yaml)
        let (id, first) = h.receive(try Self.publish(H.pidf("sip:bob@oma.example", activity: "busy"), cseq: 1), from: .oma)
        #expect(H.responses(first, id).first?.statusCode == 200)
        let (service, serviceContext) = try #require(H.sent(first, to: .enterprise).first)
        _ = h.core.receive(SIPResponse(replyingTo: service, statusCode: 200, toTag: "svc"), to: service, context: serviceContext, now: h.now)

        h.now = h.now + .seconds(5)
        let (secondID, second) = h.receive(
            try Self.publish(H.pidf("sip:bob@oma.example", basic: "closed", activity: nil), cseq: 2), from: .oma)
        #expect(H.responses(second, secondID).first?.statusCode == 200)
        // Still busy: nothing else is published into the enterprise, and a watcher sees 6500.
        for (request, _) in H.sent(second, to: .enterprise) where request.method == .service {
            #expect(try Self.publishedStates(request).allSatisfy { $0.1 == 6500 })
        }
        let (watchID, watched) = h.receive(try H.enterpriseSubscribe(resources: ["sip:bob@oma.example"]), from: .enterprise, network: .sameEnterprise)
        let answer = try #require(H.responses(watched, watchID).first)
        #expect(H.availability(try H.firstCategories(answer).categories.first).0 == 6500)
    }

    @Test func publishForAnIdentityTheGatewayDoesNotServeIs404() throws {
        var h = try H.Harness(yaml: Self.yaml)
        let (id, actions) = h.receive(try Self.publish(H.pidf("sip:carl@oma.example", activity: "busy"), cseq: 1, uri: "sip:carl@oma.example"), from: .oma)
        #expect(H.responses(actions, id).first?.statusCode == 404)
        #expect(H.sent(actions, to: .enterprise).isEmpty)
    }
}
