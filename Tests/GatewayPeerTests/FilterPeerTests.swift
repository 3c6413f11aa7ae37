import Foundation
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing

/// Event notification filters (RFC 4660, RFC 4661) over real sockets: the gateway in process,
/// the OMA proxy and the enterprise edge as UDP sockets of the test. An OMA watcher's filter of
/// the basic status and the note makes the gateway ask the enterprise for `state` and `note`
/// alone, and the watcher hears only of changes to those.
@Suite(.serialized) struct FilterPeerTests {
    typealias Gateway = AdminAPITests.Gateway

    static let filter = """
        <filter-set xmlns="urn:ietf:params:xml:ns:simple-filter" package="presence"><ns-bindings>\
        <ns-binding prefix="pidf" urn="urn:ietf:params:xml:ns:pidf"/>\
        <ns-binding prefix="dm" urn="urn:ietf:params:xml:ns:pidf:data-model"/></ns-bindings>\
        <filter id="f1"><what><include>/pidf:presence/pidf:tuple/pidf:status/pidf:basic</include>\
        <include>/pidf:presence/dm:person/dm:note</include></what></filter></filter-set>
        """

    static func categories(_ availability: UInt32, note: String) -> [UInt8] {
        Array("""
            <categories xmlns="http://schemas.microsoft.com/2006/09/sip/categories" uri="sip:bob@contoso.com">\
            <category name="state" instance="1" publishTime="2026-11-25T10:00:0\(availability % 7).000">\
            <state xmlns="http://schemas.microsoft.com/2006/09/sip/state" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
            xsi:type="aggregateState"><availability>\(availability)</availability></state></category>\
            <category name="note" instance="0" publishTime="2026-11-25T10:00:00.000">\
            <note xmlns="http://schemas.microsoft.com/2006/09/sip/note"><body type="personal" uri="">\(note)</body></note></category>\
            </categories>
            """.utf8)
    }

    @Test func aFilteredWatcherHearsOnlyOfWhatItSelected() async throws {
        let gw = try await Gateway()
        gw.kamailio.send("""
            SUBSCRIBE sip:bob@contoso.com SIP/2.0
            Via: SIP/2.0/UDP \(gw.kamailio.hostPort);branch=z9hG4bKfl1;rport
            Max-Forwards: 70
            From: <sip:dave@oma.example>;tag=fl1
            To: <sip:bob@contoso.com>
            Call-ID: fl1@oma
            CSeq: 1 SUBSCRIBE
            Contact: <sip:dave@\(gw.kamailio.hostPort)>
            Event: presence
            Accept: application/pidf+xml
            Expires: 600
            Content-Type: application/simple-filter+xml

            """, body: Array(Self.filter.utf8), to: gw.oma)
        guard let leg = await gw.edge.request(.subscribe, within: 5) else {
            let answers = await gw.kamailio.receive(for: 0.2).compactMap(\.response).map { "\($0.statusCode) \($0.reasonPhrase)" }
            Issue.record("no SUBSCRIBE reached the edge; the watcher got \(answers)")
            await gw.stop()
            return
        }
        // A single category SUBSCRIBE ([MS-PRES] §4.6) for state and note alone.
        #expect(leg.headers[.require] == nil)
        let asked = try BatchSubscribe(bytes: leg.body)
        #expect(Set(asked.actions.flatMap(\.categories)) == [.state, .note])
        let enterprise = UInt16(gw.server.bound[.enterprise]?.first?.port ?? 0)
        gw.edge.answer(leg, to: enterprise, toTag: "edge7", extra: """
            Expires: 600
            Event: presence
            Subscription-State: active;expires=600
            ms-piggyback-cseq: 1
            Content-Type: application/msrtc-event-categories+xml

            """, body: Self.categories(3500, note: "lunch"))
        func notifies() async -> [SIPRequest] {
            let requests = await gw.kamailio.receive(for: 1).compactMap(\.request).filter { $0.method == .notify }
            for notify in requests { gw.kamailio.answer(notify, to: gw.oma) }
            return requests
        }
        /// The next NOTIFY, waited for up to 5 s (a loaded CI machine relays slower).
        func nextNotify() async -> SIPRequest? {
            for _ in 0..<5 { if let notify = await notifies().first { return notify } }
            return nil
        }
        let first = try #require(await nextNotify())
        let body = String(decoding: first.body, as: UTF8.self)
        #expect(body.contains("<basic>open</basic>") && body.contains("lunch") && !body.contains("<contact>"), "\(body)")

        func benotify(_ cseq: Int, _ availability: UInt32, note: String) throws {
            let (text, body) = try AdminAPITests.benotify(
                gw, in: leg, cseq: cseq, body: Self.categories(availability, note: note))
            gw.edge.send(text, body: body, to: enterprise)
        }
        // Busy: only the activities change, which the filter leaves out.
        try benotify(2, 6500, note: "lunch")
        #expect(await notifies().isEmpty)
        // A new note: sent.
        try benotify(3, 6500, note: "back at two")
        let changed = try #require(await nextNotify())
        #expect(String(decoding: changed.body, as: UTF8.self).contains("back at two"))
        await gw.stop()
    }
}
