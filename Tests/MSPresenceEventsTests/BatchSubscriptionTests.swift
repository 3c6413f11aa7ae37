import Foundation
import Multipart
import NIOCore
import PresenceDocuments
import MSPresenceEvents
import SIPMessages
import SIPStack
import Testing

/// The [MS-PRES] §4.5 (batched), §4.6 (resubscribe) and §4.7 (polling) exchanges, notifier and
/// subscriber side. Headers are the seed's (§4.5, §4.7), bodies
/// the extracted examples in ../shared/spec/examples.
@Suite struct BatchSubscriptionTests {
    static let examples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appending(path: "shared/spec/examples")

    static func example(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: examples.appending(path: name))) }

    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    let registry = SIPEventPackageRegistry()
    let server = SIPAddress(uri: try! SIPURI("sip:gateway.contoso.com:5061;transport=tls"))

    /// The seed's batch SUBSCRIBE header section with `cseq`, `expires` and an optional To tag.
    static func subscribe(cseq: Int, toTag: String? = nil, expires: Int? = nil, body: [UInt8]) throws -> SIPRequest {
        var lines = [
            "SUBSCRIBE sip:alice@contoso.com SIP/2.0",
            "Via: SIP/2.0/TLS 172.24.41.100:1596;branch=z9hG4bKbatch\(cseq)",
            "Max-Forwards: 70",
            "From: <sip:alice@contoso.com>;tag=09fedac5c9;epid=5e434f57d3",
            "To: <sip:alice@contoso.com>" + (toTag.map { ";tag=\($0)" } ?? ""),
            "Call-ID: 1de296daa57a419c9006fdc51b33ed8b",
            "CSeq: \(cseq) SUBSCRIBE",
            "Contact: <sip:alice@contoso.com;opaque=user:epid:YoF3PgQjXFaEdxpfElfutwAA;gruu>",
            "Event: presence",
            "Accept: application/msrtc-event-categories+xml, application/xpidf+xml, text/xml+msrtc.pidf, application/pidf+xml, application/rlmi+xml, multipart/related",
            "Supported: ms-benotify",
            "Proxy-Require: ms-benotify",
            "Supported: ms-piggyback-first-notify",
            "Require: adhoclist, categoryList",
            "Supported: eventlist",
            "Content-Type: application/msrtc-adrl-categorylist+xml",
        ]
        if let expires { lines.append("Expires: \(expires)") }
        lines.append("Content-Length: \(body.count)")
        let head = Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
        guard let request = try SIPMessage(parsing: head + body).request else { throw Unexpected("not a request") }
        return request
    }

    struct Unexpected: Error { var what: String; init(_ what: String) { self.what = what } }

    func terms(_ request: SIPRequest) throws -> SubscriptionTerms {
        guard case .accept(let terms) = SubscriptionTerms.evaluate(request, registry: registry) else {
            throw Unexpected("rejected")
        }
        return terms
    }

    static func responses(_ actions: [NotifierSubscription.Action]) -> [SIPResponse] {
        actions.compactMap { if case .respond(let r) = $0 { r } else { nil } }
    }

    static func notifies(_ actions: [NotifierSubscription.Action]) -> [SIPRequest] {
        actions.compactMap { if case .notify(let r) = $0 { r } else { nil } }
    }

    static func parts(_ response: SIPResponse) throws -> BatchSubscribeResponse {
        guard let multipart = try SIPMessage.response(response).multipartBody() else { throw Unexpected("not multipart") }
        return try BatchSubscribeResponse(multipart: multipart)
    }

    /// john's and bob's categories as the seed's 200 OKs carry them.
    static func published() throws -> [String: CategoriesDocument] {
        let john = try CategoriesDocument(bytes: example("4.5-batch-subscribe-1-200ok-part2-categories.xml"))
        let bob = try CategoriesDocument(bytes: example("4.5-batch-subscribe-2-200ok-part2-categories.xml"))
        return [john.uri: john, bob.uri: bob]
    }

    func resolver(_ documents: [String: CategoriesDocument]) -> (String, [CategoryName]) -> BatchCategorySubscription.Resolution {
        { uri, _ in
            if let document = documents[uri] { return .accepted(document) }
            return .rejected(RLMIList.Instance(state: .resubscribe, cid: String(uri.dropFirst(4))))
        }
    }

    @Test func seedExchangeCreatesAddsAndRemovesResourcesInOneDialog() throws {
        let documents = try Self.published()
        let first = try Self.subscribe(cseq: 1, expires: 3600, body: Self.example("4.5-batch-subscribe-1.xml"))
        #expect(BatchCategorySubscription.isBatch(first))
        let (created, actions) = try BatchCategorySubscription.accept(
            first, batch: BatchSubscribe(bytes: first.body), terms: terms(first), localTag: "C9230080",
            contact: server, boundary: "d20e87acad9e400aac184344edb29a4a", now: t0, resolve: resolver(documents))
        var batch = try #require(created)
        // §4.5: the first notification rides in the 200 OK; no NOTIFY follows.
        #expect(Self.notifies(actions).isEmpty)
        let ok = try #require(Self.responses(actions).first)
        #expect(ok.statusCode == 200)
        #expect(try ok.headers.to?.tag == "C9230080")
        #expect(ok.headers[.msPiggybackCSeq] == "1")
        #expect(try ok.headers.require == ["eventlist"])
        #expect(try ok.headers.subscriptionState?.state == .active)
        let type = try #require(try ok.headers.contentType)
        #expect(type.mediaType == "multipart/related")
        #expect(type.parameters.value("type") == "\"application/rlmi+xml\"" || type.parameters.value("type") == "application/rlmi+xml")
        #expect(type.parameters.value("start") == "resourceList")
        let body = try Self.parts(ok)
        // The seed's RLMI part: <list uri="sip:alice@contoso.com" version="0" fullState="false"/>.
        #expect(body.list == (try RLMIList(bytes: Self.example("4.5-batch-subscribe-1-200ok-part1-rlmi.xml"))))
        #expect(body.categories == [documents["sip:john@contoso.com"]])
        #expect(batch.resources.keys.sorted() == ["sip:john@contoso.com"])

        let add = try Self.subscribe(cseq: 2, toTag: "C9230080", expires: 3600, body: Self.example("4.5-batch-subscribe-2-add-bob.xml"))
        let added = try batch.update(add, batch: BatchSubscribe(bytes: add.body), terms: terms(add),
                                 boundary: "b6778ced37dc4bb1b40bbfd006a6beae", now: t0, resolve: resolver(documents))
        let addOK = try #require(Self.responses(added).first)
        #expect(addOK.headers[.msPiggybackCSeq] == "2")
        #expect(try Self.parts(addOK).categories.map(\.uri) == ["sip:bob@contoso.com"])
        #expect(Self.notifies(added).isEmpty)
        #expect(batch.resources.keys.sorted() == ["sip:bob@contoso.com", "sip:john@contoso.com"])

        let remove = try Self.subscribe(cseq: 3, toTag: "C9230080", expires: 3600, body: Self.example("4.5-batch-subscribe-3-unsubscribe.xml"))
        let removed = try batch.update(remove, batch: BatchSubscribe(bytes: remove.body), terms: terms(remove),
                                   boundary: "626cda06b25c49bcabe5d62d771dbdf3", now: t0, resolve: resolver(documents))
        let removeOK = try #require(Self.responses(removed).first)
        #expect(removeOK.statusCode == 200)
        let removeBody = try Self.parts(removeOK)
        #expect(removeBody.categories.isEmpty)
        #expect(removeBody.list == (try RLMIList(bytes: Self.example("4.5-batch-subscribe-3-200ok-part1-rlmi.xml"))))
        #expect(batch.resources.keys.sorted() == ["sip:bob@contoso.com"])

        // Later changes reach the watcher only for resources still in the dialog, as BENOTIFY
        // (the subscriber supports ms-benotify) with Require: eventlist.
        let john = try #require(documents["sip:john@contoso.com"])
        #expect(batch.resourceChanged(john, now: t0).isEmpty)
        let bob = try #require(documents["sip:bob@contoso.com"])
        let notify = try #require(Self.notifies(batch.resourceChanged(bob, now: t0)).first)
        #expect(notify.method == .benotify)
        #expect(try notify.headers.require == ["eventlist"])
        #expect(try notify.headers.cseq?.sequence == 4)
        #expect(try CategoriesDocument(bytes: notify.body) == bob)
    }

    @Test func notificationsCarryOnlyTheSubscribedCategories() throws {
        let batchBody = BatchSubscribe(uri: "sip:alice@contoso.com", actions: [
            BatchSubscribe.Action(kind: .subscribe, resources: [.init(uri: "sip:john@contoso.com")],
                                  categories: [.state, .note]),
        ])
        let request = try Self.subscribe(cseq: 1, expires: 600, body: batchBody.serialized())
        let john = try #require(try Self.published()["sip:john@contoso.com"])
        var asked: [CategoryName] = []
        let (created, actions) = try BatchCategorySubscription.accept(
            request, batch: batchBody, terms: terms(request), localTag: "t1", contact: server, boundary: "b1",
            now: t0, resolve: { _, categories in asked = categories; return .accepted(john) })
        var batch = try #require(created)
        #expect(asked == [.state, .note])
        let first = try Self.parts(try #require(Self.responses(actions).first))
        #expect(first.categories.first?.categories.map(\.name).sorted { $0.rawValue < $1.rawValue } == [.note, .state])
        let notify = try #require(Self.notifies(batch.resourceChanged(john, now: t0)).first)
        #expect(Set(try CategoriesDocument(bytes: notify.body).categories.map(\.name)) == [.note, .state])
        // A change in categories nobody asked for sends nothing.
        var cardOnly = john
        cardOnly.categories = john.categories(named: .contactCard)
        #expect(batch.resourceChanged(cardOnly, now: t0).isEmpty)
    }

    @Test func privateCategoriesAreIgnored() throws {
        // §3.4.5.1.3: "The server MUST ignore 'private' categories in the categoryList".
        let batchBody = BatchSubscribe(uri: "sip:alice@contoso.com", actions: [
            BatchSubscribe.Action(kind: .subscribe, resources: [.init(uri: "sip:john@contoso.com")],
                                  categories: [.legacyInterop, .state, .routing, .workingHours]),
        ])
        let request = try Self.subscribe(cseq: 1, expires: 600, body: batchBody.serialized())
        var asked: [CategoryName] = []
        _ = try BatchCategorySubscription.accept(
            request, batch: batchBody, terms: terms(request), localTag: "t1", contact: server, boundary: "b1",
            now: t0, resolve: { uri, categories in asked = categories; return .accepted(CategoriesDocument(uri: uri)) })
        #expect(asked == [.state])
    }

    @Test func rejectedResourcesAreListedInTheRLMIPartOnly() throws {
        let batchBody = BatchSubscribe(uri: "sip:alice@contoso.com", actions: [
            BatchSubscribe.Action(kind: .subscribe, resources: [
                .init(uri: "sip:john@contoso.com"), .init(uri: "sip:carol@contoso.com"), .init(uri: "sip:dan@fabrikam.com"),
            ], categories: [.state]),
        ])
        let request = try Self.subscribe(cseq: 1, expires: 600, body: batchBody.serialized())
        let pool = RLMIList.Instance(state: .resubscribe, cid: "carol@contoso.com",
                                     poolFqdn: "sip:pool2.contoso.com@contoso.com;gruu;opaque=srvr:HomeServer:x")
        let quota = RLMIList.Instance(state: .terminated, reason: "quotaExceeded", cid: "dan@fabrikam.com", statusCode: 413)
        let (created, actions) = try BatchCategorySubscription.accept(
            request, batch: batchBody, terms: terms(request), localTag: "t1", contact: server, boundary: "b1", now: t0,
            resolve: { uri, _ in
                switch uri {
                case "sip:carol@contoso.com": .rejected(pool)
                case "sip:dan@fabrikam.com": .rejected(quota)
                default: .accepted(CategoriesDocument(uri: uri, categories: [Category(name: .state)]))
                }
            })
        let body = try Self.parts(try #require(Self.responses(actions).first))
        #expect(body.list.resources.map(\.uri) == ["sip:carol@contoso.com", "sip:dan@fabrikam.com"])
        #expect(body.list.resources.map(\.instances) == [[pool], [quota]])
        #expect(body.categories.map(\.uri) == ["sip:john@contoso.com"])
        #expect(try #require(created).resources.keys.sorted() == ["sip:john@contoso.com"])
    }

    @Test func pollingSubscribeIsAnsweredOnceAndKeepsNoState() throws {
        // §4.7: Expires 0 and no To tag; the 200 OK carries the data and
        // "subscription-state: terminated;expires=0" (§4.7).
        let request = try Self.subscribe(cseq: 1, expires: 0, body: Self.example("4.7-polling-subscribe.xml"))
        let bob = try CategoriesDocument(bytes: Self.example("4.7-polling-200ok-part2-categories.xml"))
        let (created, actions) = try BatchCategorySubscription.accept(
            request, batch: BatchSubscribe(bytes: request.body), terms: terms(request), localTag: "3B320080",
            contact: server, boundary: "d1253170c4b643f9b930a5a191748c1c", now: t0, resolve: { _, _ in .accepted(bob) })
        #expect(created == nil)
        #expect(Self.notifies(actions).isEmpty)
        let ok = try #require(Self.responses(actions).first)
        #expect(try ok.headers.expires == 0)
        #expect(ok.headers[.subscriptionState] == "terminated;expires=0")
        #expect(ok.headers[.msPiggybackCSeq] == "1")
        #expect(try Self.parts(ok).categories == [bob])
    }

    @Test func endedSourceRemovesTheResourceWithAnRLMINotification() throws {
        let batchBody = BatchSubscribe(uri: "sip:alice@contoso.com", actions: [
            BatchSubscribe.Action(kind: .subscribe, resources: [.init(uri: "sip:john@oma.example")], categories: [.state]),
        ])
        let request = try Self.subscribe(cseq: 1, expires: 600, body: batchBody.serialized())
        let (created, _) = try BatchCategorySubscription.accept(
            request, batch: batchBody, terms: terms(request), localTag: "t1", contact: server, boundary: "b1",
            now: t0, resolve: { uri, _ in .accepted(CategoriesDocument(uri: uri)) })
        var batch = try #require(created)
        let gone = RLMIList.Instance(state: .terminated, reason: "noresource")
        let notify = try #require(Self.notifies(batch.removeResource("sip:john@oma.example", instance: gone, boundary: "b2", now: t0)).first)
        guard let multipart = try SIPMessage.request(notify).multipartBody() else { throw Unexpected("not multipart") }
        let list = try BatchSubscribeResponse(multipart: multipart).list
        #expect(list.resources == [RLMIList.Resource(uri: "sip:john@oma.example", instances: [gone])])
        #expect(batch.resources.isEmpty)
        #expect(batch.removeResource("sip:john@oma.example", instance: gone, boundary: "b3", now: t0).isEmpty)
    }
}
