import Foundation
import Multipart
import NIOCore
import PresenceDocuments
import MSPresenceEvents
import SIPMessages
import SIPStack
import Testing
import XMLBridge

/// The gateway as the subscriber of a batched category subscription ([MS-PRES] §4.5, §4.6).
@Suite struct BatchSubscriberTests {
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
    let watcher = SIPAddress(uri: try! SIPURI("sip:alice@oma.example"))
    let contact = SIPAddress(uri: try! SIPURI("sip:gw@192.0.2.1:5061;transport=tls"))

    func start(_ resources: [String]) throws -> (BatchCategorySubscriber, SIPRequest) {
        let (subscriber, actions) = BatchCategorySubscriber.start(
            watcher: watcher, target: watcher.uri, contact: contact, resources: resources,
            categories: [.state, .note, .contactCard], expires: 3600, callID: "c1@gw", localTag: "w1")
        return (subscriber, try #require(Self.sent(actions).first))
    }

    static func sent(_ actions: [BatchCategorySubscriber.Action]) -> [SIPRequest] {
        actions.compactMap { if case .subscription(.send(let r)) = $0 { r } else { nil } }
    }

    static func events(_ actions: [BatchCategorySubscriber.Action]) -> [BatchCategorySubscriber.ResourceEvent] {
        actions.flatMap { action -> [BatchCategorySubscriber.ResourceEvent] in if case .resources(let e) = action { e } else { [] } }
    }

    /// A 200 OK to `request` with a piggybacked multipart body (§4.5 / §4.6 shape).
    static func ok(_ request: SIPRequest, cseq: Int, list: RLMIList, categories: [CategoriesDocument]) -> SIPResponse {
        let body = BatchSubscribeResponse(list: list, categories: categories).multipart(boundary: "bnd\(cseq)")
        var r = SIPResponse(replyingTo: request, statusCode: 200, toTag: "srv1", headers: [
            (.contact, "<sip:pool1.contoso.com:5061;transport=tls>"), (.expires, "3600"), (.require, "eventlist"),
            (.contentType, BatchCategorySubscription.multipartContentType(boundary: "bnd\(cseq)")),
            (.event, "presence"), (.subscriptionState, "active;expires=3600"), (.msPiggybackCSeq, String(cseq)),
        ])
        r.body = body.bytes
        return r
    }

    @Test func batchSubscribeCarriesTheSeedsHeadersAndBody() throws {
        let (_, request) = try start(["sip:john@contoso.com", "sip:bob@contoso.com"])
        #expect(request.method == .subscribe)
        #expect(try request.headers.from?.uri == watcher.uri)
        #expect(try request.headers.to?.uri == watcher.uri)
        #expect(try request.headers.require == ["adhoclist", "categoryList"])
        #expect(Set(try request.headers.supported) == ["eventlist", "ms-benotify", "ms-piggyback-first-notify"])
        #expect(try request.headers.contentType?.mediaType == "application/msrtc-adrl-categorylist+xml")
        let accept = try #require(try request.headers.accept).map { "\($0.type)/\($0.subtype)" }
        #expect(accept == ["application/msrtc-event-categories+xml", "application/rlmi+xml", "multipart/related"])
        let body = try BatchSubscribe(bytes: request.body)
        #expect(body.actions.count == 1)
        #expect(body.actions[0].kind == .subscribe)
        #expect(body.actions[0].resources.map(\.uri) == ["sip:john@contoso.com", "sip:bob@contoso.com"])
        #expect(body.actions[0].categories == [.state, .note, .contactCard])
    }

    @Test func rejectionsAndCategoriesOfThe200BecomeResourceEvents() throws {
        var (subscriber, request) = try start(["sip:john@contoso.com", "sip:carol@contoso.com", "sip:dan@fabrikam.com"])
        let pool = RLMIList.Instance(state: .resubscribe, cid: "carol@contoso.com",
                                     poolFqdn: "sip:pool2.contoso.com@contoso.com;gruu;opaque=srvr:HomeServer:x")
        let federated = RLMIList.Instance(state: .resubscribe, cid: "dan@fabrikam.com")
        let list = RLMIList(uri: "sip:alice@oma.example", resources: [
            .init(uri: "sip:carol@contoso.com", instances: [pool]), .init(uri: "sip:dan@fabrikam.com", instances: [federated]),
        ])
        let john = CategoriesDocument(uri: "sip:john@contoso.com", categories: [Category(name: .note)])
        let events = Self.events(subscriber.receive(Self.ok(request, cseq: 1, list: list, categories: [john]), now: t0, jitter: 0))
        #expect(events == [
            .rejected(uri: "sip:carol@contoso.com", instance: pool),
            .rejected(uri: "sip:dan@fabrikam.com", instance: federated),
            .categories(john),
        ])
        #expect(subscriber.subscription.status == .active)
    }

    @Test func additionsWaitForTheOutstandingSubscribeAndGoInTheDialog() throws {
        var (subscriber, request) = try start(["sip:john@contoso.com"])
        #expect(Self.sent(subscriber.add(["sip:bob@contoso.com"], now: t0)).isEmpty)
        let after = subscriber.receive(Self.ok(request, cseq: 1, list: RLMIList(uri: "sip:alice@oma.example"), categories: []),
                                       now: t0, jitter: 0)
        let add = try #require(Self.sent(after).first)
        #expect(try add.headers.to?.tag == "srv1")
        #expect(try add.headers.cseq?.sequence == 2)
        let body = try BatchSubscribe(bytes: add.body)
        #expect(body.actions.map(\.kind) == [.subscribe])
        #expect(body.actions[0].resources.map(\.uri) == ["sip:bob@contoso.com"])
        _ = subscriber.receive(Self.ok(add, cseq: 2, list: RLMIList(uri: "sip:alice@oma.example"), categories: []), now: t0, jitter: 0)
        let remove = try #require(Self.sent(subscriber.remove(["sip:john@contoso.com"], now: t0)).first)
        #expect(try BatchSubscribe(bytes: remove.body).actions.map(\.kind) == [.unsubscribe])
        #expect(subscriber.resources == ["sip:bob@contoso.com"])
    }

    @Test func benotifyWithCategoriesIsDeliveredWithoutAResponse() throws {
        var (subscriber, request) = try start(["sip:john@contoso.com"])
        _ = subscriber.receive(Self.ok(request, cseq: 1, list: RLMIList(uri: "sip:alice@oma.example"), categories: []), now: t0, jitter: 0)
        let john = CategoriesDocument(uri: "sip:john@contoso.com", categories: [Category(name: .state, instance: 1)])
        let text = """
            BENOTIFY sip:gw@192.0.2.1:5061;transport=tls SIP/2.0\r
            Via: SIP/2.0/TLS 203.0.113.5:5061;branch=z9hG4bKbn1\r
            Max-Forwards: 70\r
            From: <sip:alice@oma.example>;tag=srv1\r
            To: <sip:alice@oma.example>;tag=w1\r
            Call-ID: c1@gw\r
            CSeq: 2 BENOTIFY\r
            Contact: <sip:pool1.contoso.com:5061;transport=tls>\r
            Event: presence\r
            Subscription-State: active;expires=3500\r
            Require: eventlist\r
            Content-Type: application/msrtc-event-categories+xml\r
            Content-Length: 0\r
            \r\n
            """
        var notify = try #require(try SIPMessage(parsing: Array(text.utf8)).request)
        notify.body = john.serialized()
        let actions = subscriber.receive(notify: notify, now: t0, jitter: 0)
        #expect(Self.events(actions) == [.categories(john)])
        #expect(!actions.contains { if case .subscription(.respond) = $0 { true } else { false } })
    }

    // MARK: - Joining the subscriber list ([MS-PRES] §2.2.2.4.1, §3.6)

    static func contexts(_ request: SIPRequest) throws -> [String: XMLElement?] {
        var found: [String: XMLElement?] = [:]
        for action in try BatchSubscribe(bytes: request.body).actions {
            for resource in action.resources { found[resource.uri] = resource.context }
        }
        return found
    }

    @Test func aContextAsksToJoinTheSubscriberListAsTheSpecsExampleDoes() throws {
        let (_, request) = BatchCategorySubscriber.start(
            watcher: watcher, target: watcher.uri, contact: contact, resources: ["sip:john@contoso.com"],
            categories: [.state], callID: "c1@gw", localTag: "w1", context: true)
        let sent = try #require(Self.sent(request).first)
        // The same context element as §2.2.2.4.1's example (schema §6.13), and a body the schemas accept.
        let example = try BatchSubscribe(bytes: Array(try Data(contentsOf: URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("../shared/spec/examples/2.2.2.4.1-batch-subscribe-with-context.xml"))))
        let expected = try #require(example.actions.first?.resources.last?.context)
        let context = try #require(try Self.contexts(sent)["sip:john@contoso.com"] ?? nil)
        let ns = NS.subscriptionContext
        let mine = try #require(context.element(XMLName(ns, "subscriptionContext")))
        let theirs = try #require(expected.element(XMLName(ns, "subscriptionContext")))
        #expect(context.name == expected.name)
        #expect(mine[attribute: "majorVersion"] == "1" && mine[attribute: "minorVersion"] == "0")
        #expect(mine.element(XMLName(ns, "watcher"))?.element(XMLName(ns, "contactList")) != nil)
        #expect(theirs.element(XMLName(ns, "watcher"))?.element(XMLName(ns, "contactList")) != nil)
        let schema = try #require(PublishSchemaTests.harness)
        // Schema §6.8 omits batchSub's uri and name, which every example carries (docs/flows.md,
        // "Schema defects"); nothing else may be refused.
        let violations = try schema.validate(sent.body).filter {
            !"\($0)".contains("batchSub', attribute 'uri'") && !"\($0)".contains("batchSub', attribute 'name'")
        }
        #expect(violations.isEmpty, "\(violations)")
    }

    @Test func aFullSubscriberListRefusesTheFirstSubscribeAndEndsTheDialogForAnotherWithout() throws {
        var (subscriber, actions) = BatchCategorySubscriber.start(
            watcher: watcher, target: watcher.uri, contact: contact, resources: ["sip:john@contoso.com"],
            categories: [.state], callID: "c1@gw", localTag: "w1", context: true)
        let request = try #require(Self.sent(actions).first)
        actions = subscriber.receive(SIPResponse(replyingTo: request, statusCode: 413), now: t0, jitter: 0)
        #expect(subscriber.refusedContext)
        #expect(Self.sent(actions).isEmpty)
        // Without a context, a 413 is an ordinary refusal.
        var (plain, first) = try start(["sip:john@contoso.com"])
        _ = plain.receive(SIPResponse(replyingTo: first, statusCode: 413), now: t0, jitter: 0)
        #expect(!plain.refusedContext)
    }

    @Test func a413ToAnAdditionWithContextSendsItAgainWithoutAndRefreshesCarryNone() throws {
        var (subscriber, request) = try start(["sip:john@contoso.com"])
        _ = subscriber.receive(Self.ok(request, cseq: 1, list: RLMIList(uri: "sip:alice@oma.example"), categories: []),
                               now: t0, jitter: 0)
        let add = try #require(Self.sent(subscriber.add(["sip:bob@contoso.com"], context: true, now: t0)).first)
        #expect(try Self.contexts(add)["sip:bob@contoso.com"] ?? nil == BatchSubscribe.Resource.addedAsWatcher)
        // A second addition waits for the first's answer.
        #expect(Self.sent(subscriber.add(["sip:carol@contoso.com"], now: t0)).isEmpty)
        let again = Self.sent(subscriber.receive(SIPResponse(replyingTo: add, statusCode: 413), now: t0, jitter: 0))
        let retry = try #require(again.first)
        #expect(again.count == 1)
        // Bob again, without context, and the queued Carol with him; the dialog holds both.
        let contexts = try Self.contexts(retry)
        #expect(contexts.keys.sorted() == ["sip:bob@contoso.com", "sip:carol@contoso.com"])
        #expect(contexts.values.allSatisfy { $0 == nil })
        #expect(subscriber.subscription.status == .active)
        #expect(subscriber.resources == ["sip:john@contoso.com", "sip:bob@contoso.com", "sip:carol@contoso.com"])
        // Another 413, to a SUBSCRIBE without context, is not retried.
        #expect(Self.sent(subscriber.receive(SIPResponse(replyingTo: retry, statusCode: 413), now: t0, jitter: 0)).isEmpty)
        let refresh = try #require(Self.sent(subscriber.refresh(now: t0)).first)
        #expect(try Self.contexts(refresh).values.allSatisfy { $0 == nil })
    }
}
