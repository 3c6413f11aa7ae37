import Foundation
import Multipart
import NIOCore
import PresenceDocuments
import MSPresenceEvents
import SIPMessages
import SIPStack
import Testing

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
}
