import Foundation
import Multipart
import NIOCore
import SIPEventAgents
import NIOEmbedded
import PresenceDocuments
import MSPresenceEvents
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// A ``PresenceServer`` on 127.0.0.2:5070 and a scripted Microsoft client on 127.0.0.1:5060, on
/// one loopback network driven by an `EmbeddedEventLoop`.
final class PresenceServerHarness {
    static let serverAddress = SIPTarget(.udp, host: "127.0.0.2", port: 5070)
    static let clientAddress = SIPTarget(.udp, host: "127.0.0.1", port: 5060)

    final class Inbox: @unchecked Sendable { var messages: [SIPMessage] = [] }

    let loop = EmbeddedEventLoop()
    let network: SIPLoopbackNetwork
    let client: SIPLoopbackNetwork.Endpoint
    let server: PresenceServer
    let inbox = Inbox()

    init() {
        network = SIPLoopbackNetwork(eventLoop: loop)
        let layer = SIPTransactionLayer(transport: network.endpoint(Self.serverAddress), configuration: .presenceEvents)
        server = PresenceServer(layer: layer, configuration: .init(contact: SIPAddress(uri: SIPURI(scheme: .sip, host: "127.0.0.2", port: 5070))),
                                utcSeconds: { 1_700_000_000 })
        layer.start()
        server.installAsRequestHandler()
        client = network.endpoint(Self.clientAddress)
        let inbox = self.inbox
        client.setMessageHandler { inbox.messages.append($0.message) }
    }

    func send(_ text: String, body: [UInt8] = []) throws {
        let head = text.replacingOccurrences(of: "\n", with: "\r\n") + "Content-Length: \(body.count)\r\n\r\n"
        let message = try SIPMessage(parsing: Array(head.utf8) + body)
        _ = client.send(message, to: Self.serverAddress, connection: nil)
        loop.run()
    }

    var responses: [SIPResponse] { inbox.messages.compactMap(\.response) }
    var requests: [SIPRequest] { inbox.messages.compactMap(\.request) }

    /// A publish SERVICE from bob ([MS-PRES] §4.2.1 headers) with a note in container 400.
    func publishNote(_ text: String, version: Int, cseq: Int) throws {
        let body = Array("""
        <publish xmlns="http://schemas.microsoft.com/2006/09/sip/rich-presence"><publications uri="sip:bob@contoso.com">\
        <publication categoryName="note" instance="0" container="400" version="\(version)" expireType="static">\
        <note xmlns="http://schemas.microsoft.com/2006/09/sip/note"><body type="personal" uri="">\(text)</body></note>\
        </publication></publications></publish>
        """.utf8)
        try send("""
            SERVICE sip:bob@contoso.com SIP/2.0
            Via: SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bKsvc\(cseq)
            Max-Forwards: 70
            From: <sip:bob@contoso.com>;tag=b5410171e2;epid=84d3db8c23
            To: <sip:bob@contoso.com>
            Call-ID: service-call@127.0.0.1
            CSeq: \(cseq) SERVICE
            Contact: <sip:bob@127.0.0.1:5060>
            Content-Type: application/msrtc-category-publish+xml

            """, body: body)
    }

    /// alice's batch category SUBSCRIBE for bob's note ([MS-PRES] §4.5 headers).
    func batchSubscribe(cseq: Int = 1, toTag: String? = nil, action: BatchSubscribe.Action.Kind = .subscribe, expires: Int = 3600) throws {
        let body = BatchSubscribe(uri: "sip:alice@contoso.com", actions: [
            BatchSubscribe.Action(kind: action, resources: [.init(uri: "sip:bob@contoso.com")], categories: [.note, .state]),
        ]).serialized()
        try send("""
            SUBSCRIBE sip:alice@contoso.com SIP/2.0
            Via: SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bKbatch\(cseq)
            Max-Forwards: 70
            From: <sip:alice@contoso.com>;tag=09fedac5c9;epid=5e434f57d3
            To: <sip:alice@contoso.com>\(toTag.map { ";tag=\($0)" } ?? "")
            Call-ID: batch-call@127.0.0.1
            CSeq: \(cseq) SUBSCRIBE
            Contact: <sip:alice@127.0.0.1:5060>
            Event: presence
            Accept: application/msrtc-event-categories+xml, application/rlmi+xml, multipart/related
            Supported: ms-benotify, ms-piggyback-first-notify, eventlist
            Require: adhoclist, categoryList
            Expires: \(expires)
            Content-Type: application/msrtc-adrl-categorylist+xml

            """, body: body)
    }
}

@Suite struct PresenceServerTests {
    static func noteText(_ document: CategoriesDocument) -> String? {
        guard !document.categories(named: .note).isEmpty else { return nil }
        return String(decoding: document.serialized(), as: UTF8.self)
    }

    @Test func batchSubscribeGetsThePublishedCategoriesInThe200AndLaterChangesAsBENOTIFY() throws {
        let h = PresenceServerHarness()
        try h.publishNote("Working until 5pm today", version: 0, cseq: 1)
        #expect(h.responses.map(\.statusCode) == [200])
        try h.batchSubscribe()
        let ok = try #require(h.responses.last)
        #expect(ok.statusCode == 200)
        // [MS-PRES] §2.2.2.4.2: multipart/related with the RLMI list and bob's categories,
        // piggybacked (§4.4.2) with Require: eventlist (§4.5).
        #expect(try ok.headers.msPiggybackCSeq != nil)
        #expect(ok.headers.values(named: .require).contains { $0.contains("eventlist") })
        let parts = try #require(try SIPMessage.response(ok).multipartBody())
        let answer = try BatchSubscribeResponse(multipart: parts)
        let bob = try #require(answer.categories.first { $0.uri == "sip:bob@contoso.com" })
        #expect(Self.noteText(bob)?.contains("Working until 5pm today") == true)
        #expect(h.server.batchDialogCount == 1)

        // A new version of the note: the watcher gets a BENOTIFY ([MS-PRES] §3.4.5.2), not answered.
        try h.publishNote("In a meeting", version: 1, cseq: 2)
        #expect(h.responses.last?.statusCode == 200)
        let benotify = try #require(h.requests.last)
        #expect(benotify.method == .benotify)
        let changed = try CategoriesDocument(bytes: benotify.body)
        #expect(Self.noteText(changed)?.contains("In a meeting") == true)
        #expect(try benotify.headers.to?.tag == "09fedac5c9")
    }

    @Test func staleVersionGets409AndChangesNothing() throws {
        let h = PresenceServerHarness()
        try h.publishNote("first", version: 0, cseq: 1)
        try h.publishNote("second", version: 1, cseq: 2)
        // §3.2.5.1.2: a publication whose version is not the current one is refused with 409.
        try h.publishNote("stale", version: 1, cseq: 3)
        #expect(h.responses.map(\.statusCode) == [200, 200, 409])
        #expect(Self.noteText(h.server.categories(of: "sip:bob@contoso.com"))?.contains("second") == true)
    }

    @Test func pollingBatchSubscribeIsAnsweredOnceAndKeepsNoDialog() throws {
        let h = PresenceServerHarness()
        try h.publishNote("polled", version: 0, cseq: 1)
        // [MS-PRES] §3.4.5.1.2: Expires 0 without To tag is a poll.
        try h.batchSubscribe(expires: 0)
        let ok = try #require(h.responses.last)
        #expect(ok.statusCode == 200)
        #expect(h.server.batchDialogCount == 0)
        let answer = try BatchSubscribeResponse(multipart: try #require(try SIPMessage.response(ok).multipartBody()))
        #expect(answer.categories.first.flatMap(Self.noteText)?.contains("polled") == true)
    }

    @Test func batchDialogExpiresWithoutRefresh() throws {
        let h = PresenceServerHarness()
        try h.batchSubscribe(expires: 600)
        #expect(h.server.batchDialogCount == 1)
        h.loop.advanceTime(by: .seconds(601))
        // RFC 6665 §4.2.2: the final NOTIFY says terminated;reason=timeout.
        let final = try #require(h.requests.last)
        #expect(final.method == .notify)
        #expect(try final.headers.subscriptionState?.reason == "timeout")
        #expect(h.server.batchDialogCount == 0)
    }
}
