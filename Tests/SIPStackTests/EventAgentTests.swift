import Foundation
import NIOCore
import SIPEventAgents
import NIOEmbedded
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// Mutable test state shared with the agents' callbacks (the loop and the test share one thread).
final class EventBox: @unchecked Sendable {
    var state: [String: [UInt8]] = [:]
    var notifier: NotifierAgent?
    var subscriberEvents: [SubscriptionAgent.Event] = []
    var notifierEvents: [NotifierAgent.Event] = []
    var publisherEvents: [PublicationAgent.Event] = []
    var peerInbox: [SIPReceivedMessage] = []
    var decision: NotifierAgent.Decision = .active
}

/// A watcher (127.0.0.1:5060: a ``SubscriptionAgent`` and a ``PublicationAgent``) and a presence
/// server (127.0.0.2:5070: a ``NotifierAgent`` fed by a ``PublicationServer``), plus a scripted
/// peer (127.0.0.3:5080), on one loopback network driven by an `EmbeddedEventLoop`.
final class EventAgentHarness {
    static let watcherAddress = SIPTarget(.udp, host: "127.0.0.1", port: 5060)
    static let serverAddress = SIPTarget(.udp, host: "127.0.0.2", port: 5070)
    static let peerAddress = SIPTarget(.udp, host: "127.0.0.3", port: 5080)

    let loop = EmbeddedEventLoop()
    let network: SIPLoopbackNetwork
    let watcherLayer: SIPTransactionLayer
    let serverLayer: SIPTransactionLayer
    let peer: SIPLoopbackNetwork.Endpoint
    let box = EventBox()
    let subscriber: SubscriptionAgent
    let publisher: PublicationAgent
    let notifier: NotifierAgent
    let esc: PublicationServer
    let start: NIODeadline

    init(piggyback: Bool = true) {
        network = SIPLoopbackNetwork(eventLoop: loop)
        watcherLayer = SIPTransactionLayer(transport: network.endpoint(Self.watcherAddress), configuration: .presenceEvents)
        serverLayer = SIPTransactionLayer(transport: network.endpoint(Self.serverAddress), configuration: .presenceEvents)
        peer = network.endpoint(Self.peerAddress)
        let box = self.box
        subscriber = SubscriptionAgent(layer: watcherLayer, jitter: { 0 }) { box.subscriberEvents.append($0) }
        publisher = PublicationAgent(layer: watcherLayer, jitter: { 0 }) { box.publisherEvents.append($0) }
        notifier = NotifierAgent(
            layer: serverLayer, contact: SIPAddress(uri: SIPURI(scheme: .sip, user: "bob", host: "127.0.0.2", port: 5070)),
            limits: .init(piggyback: piggyback),
            policy: { _ in box.decision },
            state: { resource, _ in box.state[resource] },
            onEvent: { box.notifierEvents.append($0) })
        box.notifier = notifier
        esc = PublicationServer(layer: serverLayer) { resource, publications in
            box.state[resource] = publications.last?.body
            box.notifier?.publish(resource: resource)
        }
        watcherLayer.start()
        serverLayer.start()
        subscriber.installAsRequestHandler()
        let notifier = self.notifier, esc = self.esc, serverLayer = self.serverLayer
        serverLayer.setRequestHandler(for: [.subscribe, .publish]) { incoming in
            if notifier.handle(incoming) || esc.handle(incoming) { return }
            try? serverLayer.respond(SIPResponse(replyingTo: incoming.request, statusCode: 405, toTag: incoming.toTag),
                                     to: incoming.transaction)
        }
        peer.setMessageHandler { box.peerInbox.append($0) }
        start = loop.now
    }

    func advance(to seconds: Double) {
        loop.advanceTime(to: start + .nanoseconds(Int64(seconds * 1e9)))
    }

    func run() { loop.run() }

    /// A subscription to bob at `target` (the server unless told).
    func configuration(target: SIPTarget = serverAddress, expires: UInt32 = 600, supported: [String] = []) -> SubscriberSubscription.Configuration {
        let bob = SIPURI(scheme: .sip, user: "bob", host: target.host, port: target.port)
        return SubscriberSubscription.Configuration(
            target: bob, from: SIPAddress(uri: SIPURI(scheme: .sip, user: "alice", host: "127.0.0.1")),
            to: SIPAddress(uri: bob), contact: SIPAddress(uri: SIPURI(scheme: .sip, user: "alice", host: "127.0.0.1", port: 5060)),
            expires: expires, supported: supported)
    }

    func publication(target: SIPTarget = serverAddress, expires: UInt32 = 120) -> PublicationClient.Configuration {
        let bob = SIPURI(scheme: .sip, user: "bob", host: target.host, port: target.port)
        return PublicationClient.Configuration(target: bob, from: SIPAddress(uri: bob), to: SIPAddress(uri: bob), expires: expires)
    }

    /// Requests on the wire from `address` (retransmissions included), in order.
    func sent(from address: SIPTarget, _ method: SIPMethod) -> [SIPRequest] {
        network.delivered.filter { $0.from == address }.compactMap { $0.message?.request }.filter { $0.method == method }
    }

    func responses(from address: SIPTarget) -> [SIPResponse] {
        network.delivered.filter { $0.from == address }.compactMap { $0.message?.response }
    }

    var notifications: [SubscriberSubscription.Notification] {
        box.subscriberEvents.compactMap { if case .notification(_, let n) = $0 { return n } else { return nil } }
    }

    var endings: [String] {
        box.subscriberEvents.compactMap { if case .ended(_, let r) = $0 { return r } else { return nil } }
    }

    /// Requests the scripted peer received.
    var peerRequests: [SIPRequest] { box.peerInbox.compactMap { $0.message.request } }

    func peerSends(_ message: SIPMessage, to target: SIPTarget = watcherAddress) {
        _ = peer.send(message, to: target, connection: nil)
        loop.run()
    }
}

func pidf(_ entity: String, _ basic: String) -> [UInt8] {
    Array("""
    <?xml version="1.0" encoding="UTF-8"?>
    <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="\(entity)"><tuple id="t1"><status><basic>\(basic)</basic></status></tuple></presence>
    """.utf8)
}

@Suite struct EventAgentTests {
    @Test func subscribeGetsTheFirstNotifyWithTheCurrentState() throws {
        let h = EventAgentHarness(piggyback: false)
        h.box.state["bob@127.0.0.2"] = pidf("sip:bob@127.0.0.2", "open")
        let handle = try h.subscriber.subscribe(h.configuration())
        h.run()
        #expect(h.notifications.count == 1)
        #expect(h.notifications.first?.body == pidf("sip:bob@127.0.0.2", "open"))
        #expect(h.notifications.first?.state.state == .active)
        #expect(h.notifications.first?.piggybacked == false)
        #expect(h.subscriber.subscription(handle)?.status == .active)
        // RFC 6665 §4.1.3: the subscriber answers the NOTIFY with 200.
        #expect(h.responses(from: EventAgentHarness.watcherAddress).map(\.statusCode) == [200])
        #expect(h.notifier.count == 1)
    }

    @Test func refreshIsSentBeforeExpiryAndKeepsTheNotifierSubscription() throws {
        let h = EventAgentHarness()
        _ = try h.subscriber.subscribe(h.configuration(expires: 600))
        h.run()
        // Refresh due at 0.9 × 600 s with jitter 0 (and at least 5 s before expiry).
        h.advance(to: 539)
        #expect(h.sent(from: EventAgentHarness.watcherAddress, .subscribe).count == 1)
        h.advance(to: 541)
        let subscribes = h.sent(from: EventAgentHarness.watcherAddress, .subscribe)
        #expect(subscribes.count == 2)
        // §4.1.2.2: the refresh is in the dialog (To tag) with the same Call-ID and a higher CSeq.
        #expect((try subscribes.last?.headers.to)?.tag != nil)
        #expect(try subscribes.last?.headers.callID == subscribes.first?.headers.callID)
        #expect((try subscribes.last?.headers.cseq)?.sequence == 2)
        // The notifier moved its expiry: nothing ends at the original 600 s.
        h.advance(to: 700)
        #expect(h.notifier.count == 1)
        #expect(h.endings.isEmpty)
    }

    @Test func notifierEndsAnUnrefreshedSubscriptionWithTimeoutAndTheSubscriberStartsAgain() throws {
        let h = EventAgentHarness()
        let handle = try h.subscriber.subscribe(h.configuration(expires: 600))
        h.run()
        // Every in-dialog SUBSCRIBE is lost (UDP): the refresh never reaches the notifier.
        h.network.dropNext(1000) { r in
            guard let q = r.message?.request, q.method == .subscribe else { return false }
            return (try? q.headers.to)?.tag != nil
        }
        h.advance(to: 599)
        #expect(h.notifier.count == 1)
        h.advance(to: 600.5)
        // RFC 6665 §4.2.2: NOTIFY terminated;reason=timeout; §4.1.3: the subscriber may subscribe
        // again at once, with a new dialog.
        let terminated = h.notifications.first { $0.state.state == .terminated }
        #expect(terminated?.state.state == .terminated)
        #expect(terminated?.state.reason == "timeout")
        #expect(h.box.subscriberEvents.contains { if case .resubscribing(handle, "timeout") = $0 { true } else { false } })
        h.run()
        let initial = h.sent(from: EventAgentHarness.watcherAddress, .subscribe).filter { (try? $0.headers.to)?.tag == nil }
        #expect(initial.count == 2)
        #expect(try initial[0].headers.callID != initial[1].headers.callID)
        #expect(h.notifier.count == 1)
        #expect(h.subscriber.subscription(handle)?.status == .active)
    }

    @Test func notifyBeforeTheOKCreatesTheDialog() throws {
        let h = EventAgentHarness()
        let handle = try h.subscriber.subscribe(h.configuration(target: EventAgentHarness.peerAddress))
        h.run()
        let subscribe = try #require(h.peerRequests.first)
        let from = try #require(subscribe.headers.values(named: .from).first)
        var notifyHeaders = SIPHeaders()
        notifyHeaders.append(.via, "SIP/2.0/UDP 127.0.0.3:5080;branch=z9hG4bKnotify1")
        notifyHeaders.append(.maxForwards, "70")
        notifyHeaders.append(.from, "<sip:bob@127.0.0.3:5080>;tag=notifier-1")
        notifyHeaders.append(.to, from)
        notifyHeaders.append(.callID, try #require(subscribe.headers.callID))
        notifyHeaders.append(.cseq, "1 NOTIFY")
        notifyHeaders.append(.contact, "<sip:bob@127.0.0.3:5080>")
        notifyHeaders.append(.event, "presence")
        notifyHeaders.append(.subscriptionState, "active;expires=600")
        notifyHeaders.append(.contentType, "application/pidf+xml")
        let body = pidf("sip:bob@127.0.0.3", "closed")
        // RFC 6665 §4.1.2.4: the NOTIFY may arrive before the 200; it creates the dialog.
        h.peerSends(.request(SIPRequest(method: .notify, uri: subscribe.uri, headers: notifyHeaders, body: body)))
        #expect(h.notifications.map(\.body) == [body])
        let answer = try #require(h.box.peerInbox.compactMap { $0.message.response }.first)
        #expect(answer.statusCode == 200)
        #expect(h.subscriber.subscription(handle)?.dialog?.id.remoteTag == "notifier-1")
        // The 200 then arrives; the dialog stays the one the NOTIFY made.
        var ok = SIPResponse(replyingTo: subscribe, statusCode: 200, reasonPhrase: "OK", toTag: "notifier-1")
        ok.headers.append(.expires, "600")
        ok.headers.append(.contact, "<sip:bob@127.0.0.3:5080>")
        h.peerSends(.response(ok))
        #expect(h.subscriber.subscription(handle)?.status == .active)
        #expect(h.endings.isEmpty)
    }

    @Test func notifyForAnUnknownDialogGets481() throws {
        let h = EventAgentHarness()
        var headers = SIPHeaders()
        headers.append(.via, "SIP/2.0/UDP 127.0.0.3:5080;branch=z9hG4bKstray")
        headers.append(.from, "<sip:bob@127.0.0.3>;tag=x")
        headers.append(.to, "<sip:alice@127.0.0.1>;tag=nobody")
        headers.append(.callID, "stray@127.0.0.3")
        headers.append(.cseq, "1 NOTIFY")
        headers.append(.event, "presence")
        headers.append(.subscriptionState, "active")
        h.peerSends(.request(SIPRequest(method: .notify, uri: SIPURI(scheme: .sip, host: "127.0.0.1", port: 5060), headers: headers)))
        #expect(h.box.peerInbox.compactMap { $0.message.response }.map(\.statusCode) == [481])
    }

    @Test func benotifyIsSentOnceOutsideTransactionsAndGetsNoResponse() throws {
        let h = EventAgentHarness(piggyback: false)
        _ = try h.subscriber.subscribe(h.configuration(supported: ["ms-benotify"]))
        h.run()
        h.box.state["bob@127.0.0.2"] = pidf("sip:bob@127.0.0.2", "open")
        #expect(h.notifier.publish(resource: "bob@127.0.0.2") == 1)
        h.run()
        h.advance(to: 40)
        // [MS-PRES] §3.4.5.1.4: BENOTIFY takes no response, so it is neither answered nor retransmitted.
        let benotifies = h.sent(from: EventAgentHarness.serverAddress, .benotify)
        #expect(benotifies.count == 2)
        #expect(h.sent(from: EventAgentHarness.serverAddress, .notify).isEmpty)
        #expect(h.responses(from: EventAgentHarness.watcherAddress).isEmpty)
        #expect(h.notifications.last?.body == pidf("sip:bob@127.0.0.2", "open"))
        #expect(h.notifier.count == 1)
    }

    @Test func notifyIsSentInATransactionAndAnswered() throws {
        let h = EventAgentHarness(piggyback: false)
        _ = try h.subscriber.subscribe(h.configuration())
        h.run()
        h.box.state["bob@127.0.0.2"] = pidf("sip:bob@127.0.0.2", "closed")
        h.notifier.publish(resource: "bob@127.0.0.2")
        h.run()
        #expect(h.sent(from: EventAgentHarness.serverAddress, .notify).count == 2)
        #expect(h.responses(from: EventAgentHarness.watcherAddress).map(\.statusCode) == [200, 200])
        #expect(h.notifications.last?.body == pidf("sip:bob@127.0.0.2", "closed"))
    }

    @Test func piggybackedFirstNotificationRidesInTheOK() throws {
        let h = EventAgentHarness(piggyback: true)
        h.box.state["bob@127.0.0.2"] = pidf("sip:bob@127.0.0.2", "open")
        _ = try h.subscriber.subscribe(h.configuration(supported: ["ms-piggyback-first-notify"]))
        h.run()
        // [MS-PRES] §4.4.2: the state is in the 200 OK, and no first NOTIFY follows.
        #expect(h.notifications.count == 1)
        #expect(h.notifications.first?.piggybacked == true)
        #expect(h.notifications.first?.body == pidf("sip:bob@127.0.0.2", "open"))
        #expect(h.sent(from: EventAgentHarness.serverAddress, .notify).isEmpty)
        #expect(h.sent(from: EventAgentHarness.serverAddress, .benotify).isEmpty)
    }

    @Test func unsubscribeEndsBothSidesAfterTheFinalNotify() throws {
        let h = EventAgentHarness()
        let handle = try h.subscriber.subscribe(h.configuration())
        h.run()
        h.subscriber.unsubscribe(handle)
        h.run()
        let last = try #require(h.sent(from: EventAgentHarness.watcherAddress, .subscribe).last)
        #expect(try last.headers.expires == 0)
        #expect(h.notifications.last?.state.state == .terminated)
        #expect(h.endings == ["timeout"])
        #expect(h.subscriber.count == 0)
        #expect(h.notifier.count == 0)
        // No refresh timer is left behind.
        h.advance(to: 1000)
        #expect(h.sent(from: EventAgentHarness.watcherAddress, .subscribe).count == 2)
    }

    @Test func policyRejectionEndsTheSubscriptionWithItsStatus() throws {
        let h = EventAgentHarness()
        h.box.decision = .reject(status: 403, reason: "Forbidden")
        _ = try h.subscriber.subscribe(h.configuration())
        h.run()
        #expect(h.endings == ["403"])
        #expect(h.notifier.count == 0)
        #expect(h.subscriber.count == 0)
    }

    @Test func pendingSubscriptionGetsStateOnlyWhenActivated() throws {
        let h = EventAgentHarness(piggyback: false)
        h.box.decision = .pending
        h.box.state["bob@127.0.0.2"] = pidf("sip:bob@127.0.0.2", "open")
        let handle = try h.subscriber.subscribe(h.configuration())
        h.run()
        #expect(h.notifications.first?.state.state == .pending)
        #expect(h.notifications.first?.body.isEmpty == true)
        #expect(h.subscriber.subscription(handle)?.status == .pending)
        let server = try #require(h.notifier.subscriptions(of: "bob@127.0.0.2").first)
        h.notifier.activate(server)
        h.run()
        #expect(h.notifications.last?.state.state == .active)
        #expect(h.notifications.last?.body == pidf("sip:bob@127.0.0.2", "open"))
        #expect(h.subscriber.subscription(handle)?.status == .active)
    }

    @Test func unreachableNotifierEndsTheSubscriptionAs503() throws {
        let h = EventAgentHarness()
        _ = try h.subscriber.subscribe(h.configuration(target: SIPTarget(.udp, host: "127.0.0.9", port: 5060)))
        h.run()
        // RFC 3261 §8.1.3.1: a transport error is treated as a 503.
        #expect(h.endings == ["503"])
    }

    @Test func publicationChangesWhatSubscribersGet() throws {
        let h = EventAgentHarness(piggyback: false)
        _ = try h.subscriber.subscribe(h.configuration())
        h.run()
        let pub = try h.publisher.publish(h.publication(), body: pidf("sip:bob@127.0.0.2", "open"), contentType: SIPBodyType.pidf)
        h.run()
        #expect(h.box.publisherEvents.contains { if case .published(pub, _, _) = $0 { true } else { false } })
        #expect(h.notifications.last?.body == pidf("sip:bob@127.0.0.2", "open"))
        h.publisher.modify(pub, body: pidf("sip:bob@127.0.0.2", "closed"), contentType: SIPBodyType.pidf)
        h.run()
        #expect(h.notifications.last?.body == pidf("sip:bob@127.0.0.2", "closed"))
        // RFC 3903 §4.4: the modify names the entity-tag the ESC gave.
        let publishes = h.sent(from: EventAgentHarness.watcherAddress, .publish)
        let firstTag = try #require(h.responses(from: EventAgentHarness.serverAddress).compactMap { try? $0.headers.sipETag }.first)
        #expect(try publishes.last?.headers.sipIfMatch == firstTag)
    }

    @Test func publicationIsRefreshedWithItsEntityTagBeforeExpiry() throws {
        let h = EventAgentHarness()
        let pub = try h.publisher.publish(h.publication(expires: 120), body: pidf("sip:bob@127.0.0.2", "open"), contentType: SIPBodyType.pidf)
        h.run()
        h.advance(to: 107)
        #expect(h.sent(from: EventAgentHarness.watcherAddress, .publish).count == 1)
        h.advance(to: 109)
        let publishes = h.sent(from: EventAgentHarness.watcherAddress, .publish)
        try #require(publishes.count == 2, "\(h.box.publisherEvents) \(h.network.log.map { String(decoding: $0.bytes, as: UTF8.self) })")
        // RFC 3903 §4.3: a refresh has SIP-If-Match and no body.
        #expect(try publishes[1].headers.sipIfMatch != nil)
        #expect(publishes[1].body.isEmpty)
        // The ESC kept the state past the first 120 s.
        h.advance(to: 200)
        #expect(h.esc.publications(of: "bob@127.0.0.2").count == 1)
        h.publisher.remove(pub)
        h.run()
        #expect(h.esc.publications(of: "bob@127.0.0.2").isEmpty)
        #expect(h.box.publisherEvents.contains { if case .removed(pub) = $0 { true } else { false } })
    }

    @Test func publicationRecoversFrom412ByPublishingAfresh() throws {
        let h = EventAgentHarness()
        let pub = try h.publisher.publish(h.publication(target: EventAgentHarness.peerAddress),
                                          body: pidf("sip:bob@127.0.0.3", "open"), contentType: SIPBodyType.pidf)
        h.run()
        let initial = try #require(h.peerRequests.last)
        var ok = SIPResponse(replyingTo: initial, statusCode: 200, reasonPhrase: "OK", toTag: "esc")
        ok.headers.append(.sipETag, "tag-1")
        ok.headers.append(.expires, "120")
        h.peerSends(.response(ok))
        h.publisher.modify(pub, body: pidf("sip:bob@127.0.0.3", "closed"), contentType: SIPBodyType.pidf)
        h.run()
        let modify = try #require(h.peerRequests.last)
        #expect(try modify.headers.sipIfMatch == "tag-1")
        // RFC 3903 §4.1: the ESC lost the state (412); the EPA publishes it afresh, without SIP-If-Match.
        h.peerSends(.response(SIPResponse(replyingTo: modify, statusCode: 412, reasonPhrase: "Conditional Request Failed", toTag: "esc")))
        let fresh = try #require(h.peerRequests.last)
        #expect(fresh.method == .publish)
        #expect(try fresh.headers.sipIfMatch == nil)
        #expect(fresh.body == pidf("sip:bob@127.0.0.3", "closed"))
        var ok2 = SIPResponse(replyingTo: fresh, statusCode: 200, reasonPhrase: "OK", toTag: "esc")
        ok2.headers.append(.sipETag, "tag-2")
        ok2.headers.append(.expires, "120")
        h.peerSends(.response(ok2))
        #expect(h.publisher.publication(pub)?.entityTag == "tag-2")
    }
}
