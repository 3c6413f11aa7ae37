import Foundation
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing
import XMLBridge

/// Partial notifications (RFC 5263) over real sockets: the gateway in process, the OMA proxy
/// and the enterprise edge as UDP sockets of the test. An OMA watcher that accepts
/// `application/pidf-diff+xml` is sent `pidf-full`, then the enterprise's changes as documents
/// of the next versions, which applied in turn give the states of [MS-PRES] §3.7.5.4.
@Suite(.serialized) struct PartialNotificationPeerTests {
    typealias Gateway = AdminAPITests.Gateway

    /// John's full state at the OMA presence server (away), version 7.
    static let full = """
        <p:pidf-full xmlns="urn:ietf:params:xml:ns:pidf" xmlns:p="urn:ietf:params:xml:ns:pidf-diff" \
        xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" \
        entity="sip:john@oma.example" version="7"><tuple id="t1"><status><basic>open</basic></status></tuple>\
        <dm:person id="p1"><rpid:activities><rpid:away/></rpid:activities></dm:person></p:pidf-full>
        """

    /// A diff of `version` that sets John's activity.
    static func diff(_ version: Int, activity: String) -> String {
        """
        <p:pidf-diff xmlns="urn:ietf:params:xml:ns:pidf" xmlns:p="urn:ietf:params:xml:ns:pidf-diff" \
        xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" \
        entity="sip:john@oma.example" version="\(version)"><p:replace sel="*/dm:person[@id='p1']/rpid:activities">\
        <rpid:activities><rpid:\(activity)/></rpid:activities></p:replace></p:pidf-diff>
        """
    }

    @Test func anOMAWatcherFollowsTheEnterpriseThroughDiffs() async throws {
        let gw = try await Gateway()
        let (_, leg) = try await gw.bridgeOMAWatcher(accept: "application/pidf+xml, application/pidf-diff+xml")
        let first = try #require(gw.bridgedNotifies.first)
        #expect(try first.headers.contentType?.mediaType == "application/pidf-diff+xml")
        guard case .full(let version, var held) = try PIDFDiff(bytes: first.body) else {
            Issue.record("the first NOTIFY is not pidf-full")
            await gw.stop()
            return
        }
        #expect(version == 0)
        var current = try #require(version)
        let enterprise = UInt16(gw.server.bound[.enterprise]?.first?.port ?? 0)
        for (cseq, (availability, activity)) in [(15500, "away"), (6500, "busy"), (15500, "away")].enumerated() {
            let (benotify, body) = try AdminAPITests.benotify(gw, in: leg, cseq: cseq + 2, availability: UInt32(availability))
            gw.edge.send(benotify, body: body, to: enterprise)
            let notify = try #require(await gw.kamailio.request(.notify, within: 5))
            gw.kamailio.answer(notify, to: gw.oma)
            switch try PIDFDiff(bytes: notify.body) {
            case .full(let version, let presence):
                #expect((version ?? 0) > current)
                held = presence
                current = version ?? current
            case .diff(let version, let operations):
                #expect(version == current + 1)
                try PIDFDiff.apply(operations, to: &held)
                current = version ?? current
            }
            let text = XMLWriter(indent: nil).string(held)
            #expect(text.contains(activity), "after \(availability): \(text)")
        }
        #expect(current == 3)
        await gw.stop()
    }

    /// With `oma.partial-notifications`, the gateway's SUBSCRIBE accepts partial PIDF; the OMA
    /// presence server's `pidf-full`, then a diff, reach the enterprise watcher as the §3.7.5.4
    /// availabilities of the states they make; a diff out of sequence brings a refresh in the
    /// dialog, and the full state it asks for is relayed.
    @Test func diffsFromTheOMASideReachTheEnterpriseWatcher() async throws {
        let gw = try await Gateway()
        let text = Gateway.yaml(kamailio: gw.kamailio.port, edge: gw.edge.port, token: nil)
            .replacingOccurrences(of: "transport=udp\" }\npeers", with: "transport=udp\", partial-notifications: true }\npeers")
        #expect(text.contains("partial-notifications: true"))
        try text.write(to: gw.file, atomically: true, encoding: .utf8)
        #expect(try await gw.http("POST", "/reload").0 == 200)

        gw.carolSubscribes(to: "sip:john@oma.example", callID: "carol-partial")
        let subscribe = try #require(await gw.kamailio.request(.subscribe, within: 5))
        #expect(subscribe.headers[.accept]?.contains("application/pidf-diff+xml") == true)
        let from = try #require(try subscribe.headers.from)
        func toOMA(_ head: String, _ body: String = "") {
            gw.kamailio.send(head, body: Array(body.utf8), to: gw.oma)
        }
        gw.kamailio.answer(subscribe, to: gw.oma, toTag: "ps1", extra: "Expires: 600\n")
        var cseq = 1
        func notify(_ body: String) {
            cseq += 1
            toOMA("""
                NOTIFY sip:gw@127.0.0.1:\(gw.oma) SIP/2.0
                Via: SIP/2.0/UDP \(gw.kamailio.hostPort);branch=z9hG4bKpsn\(cseq);rport
                Max-Forwards: 70
                From: <sip:john@oma.example>;tag=ps1
                To: <\(from.uri)>;tag=\(from.tag ?? "")
                Call-ID: \(subscribe.headers.callID ?? "")
                CSeq: \(cseq) NOTIFY
                Contact: <sip:\(gw.kamailio.hostPort)>
                Event: presence
                Subscription-State: active;expires=600
                Content-Type: application/pidf-diff+xml

                """, body)
        }
        /// The availability the enterprise watcher is sent next (from the 200's piggybacked
        /// part or a NOTIFY/BENOTIFY, answered as a client would).
        func nextAvailability() async -> UInt32? {
            // Polled for up to 5 s: a loaded test machine may delay the gateway past a fixed window.
            let end = Date().addingTimeInterval(5)
            while end.timeIntervalSinceNow > 0 {
                for message in await gw.edge.receive(for: 0.2) {
                    if let request = message.request, request.method == .notify { gw.edge.answer(request, to: UInt16(gw.server.bound[.enterprise]?.first?.port ?? 0)) }
                    let documents = categoriesDocuments(message)
                    if let state = aggregateState(documents, of: "sip:john@oma.example") { return state.availability }
                }
            }
            return nil
        }
        notify(Self.full)
        #expect(await nextAvailability() == 15500)  // away
        notify(Self.diff(8, activity: "busy"))
        #expect(await nextAvailability() == 6500)
        // A gap: the gateway refreshes in the dialog; the full state it then gets is relayed.
        notify(Self.diff(12, activity: "away"))
        let refresh = try #require(await gw.kamailio.request(.subscribe, within: 5))
        #expect(try refresh.headers.callID == subscribe.headers.callID && refresh.headers.to?.tag == "ps1")
        notify(Self.full.replacingOccurrences(of: "version=\"7\"", with: "version=\"30\""))
        #expect(await nextAvailability() == 15500)
        await gw.stop()
    }
}
