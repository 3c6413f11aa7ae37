import NIOCore
import PresenceDocuments
@testable import PresenceGateway
import SIPMessages
import Testing

/// The core's dialog index holds dialogs by a hash of (Call-ID, local tag) and confirms a match
/// against the owner's state (RFC 3261 §12.2.2: a request is matched to its dialog by Call-ID and
/// tags). A hash that makes every key collide shows that matching never rests on the hash alone.
@Suite struct DialogIndexTests {
    typealias Key = GatewayCore.DialogKey

    @Test func dialogsWhoseKeysHashAlikeAreBothKeptAndRemovedOnlyByTheirOwner() {
        var index = DialogIndex(hash: { _ in 7 })
        let a = Key(callID: "a@gw", localTag: "1")
        let b = Key(callID: "b@gw", localTag: "2")
        index.insert(a, .omaLeg(1))
        index.insert(b, .enterpriseLeg(2))
        #expect(index.count == 2)
        // The later one is held by its full key, the first by the hash (to be confirmed).
        #expect(index.candidate(b)?.context == .enterpriseLeg(2))
        #expect(index.candidate(b)?.exact == true)
        #expect(index.candidate(a)?.context == .omaLeg(1))
        #expect(index.candidate(a)?.exact == false)
        // Removing with a context that does not own the dialog changes nothing.
        index.remove(a, .omaWatch(9))
        index.remove(b, .omaLeg(1))
        #expect(index.count == 2)
        index.remove(b, .enterpriseLeg(2))
        #expect(index.count == 1)
        #expect(index.candidate(b)?.exact == false)
        index.remove(a, .omaLeg(1))
        #expect(index.count == 0)
        #expect(index.candidate(a) == nil)
    }

    @Test func reRegisteringTheSameDialogKeepsOneEntry() {
        var index = DialogIndex()
        let a = Key(callID: "a@gw", localTag: "1")
        index.insert(a, .omaWatch(3))
        index.insert(a, .omaWatch(3))
        #expect(index.count == 1)
        #expect(index.candidate(a)?.context == .omaWatch(3))
    }

    static func subscribe(_ n: Int) throws -> SIPRequest {
        try GatewayCoreTests.request([
            "SUBSCRIBE sip:bob\(n)@contoso.com SIP/2.0",
            "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKd\(n)",
            "Max-Forwards: 69",
            "From: <sip:alice\(n)@oma.example>;tag=oma\(n)",
            "To: <sip:bob\(n)@contoso.com>",
            "Call-ID: oma-call-\(n)",
            "CSeq: 1 SUBSCRIBE",
            "Contact: <sip:alice\(n)@127.0.0.1:5070>",
            "Event: presence",
            "Accept: application/pidf+xml",
            "Expires: 600",
        ])
    }

    @Test func inDialogRequestsReachTheirOwnPairWhenEveryDialogHashesAlike() throws {
        var h = try GatewayCoreTests.Harness()
        h.core.dialogs = DialogIndex(hash: { _ in 0 })
        var legs: [SIPRequest] = []
        var okTags: [String] = []
        for n in 0..<2 {
            let (id, actions) = h.receive(try Self.subscribe(n), from: .oma)
            let (subscribe, context) = try #require(GatewayCoreTests.sent(actions, to: .enterprise).first)
            let answered = h.core.receive(
                GatewayCoreTests.enterpriseOK(subscribe, GatewayCoreTests.categories(availability: 3500, uri: "sip:bob\(n)@contoso.com")),
                to: subscribe, context: context, now: h.now)
            let ok = try #require(GatewayCoreTests.responses(answered, id).first)
            #expect(ok.statusCode == 200)
            legs.append(subscribe)
            okTags.append(try #require(try ok.headers.to?.tag))
        }
        // Each enterprise dialog's BENOTIFY (MS-PRES 3.7.5.4 row 4: 6500 is busy) reaches its
        // own watcher only.
        for n in 0..<2 {
            let busy = try GatewayCoreTests.enterpriseBENOTIFY(legs[n], cseq: 2, GatewayCoreTests.categories(availability: 6500, uri: "sip:bob\(n)@contoso.com"))
            let (_, changed) = h.receive(busy, from: .enterprise)
            let notifies = GatewayCoreTests.sent(changed, to: .oma)
            #expect(notifies.count == 1)
            #expect(notifies.first?.0.headers.callID == "oma-call-\(n)")
            let body = String(decoding: notifies.first?.0.body ?? [], as: UTF8.self)
            #expect(body.contains("busy"))
        }
        // A request with a Call-ID no dialog has (its hash is every dialog's here) is not matched
        // (RFC 3261 §12.2.2: 481).
        let forged = try GatewayCoreTests.request([
            "NOTIFY sip:gw@127.0.0.1:5061;transport=tcp SIP/2.0",
            "Via: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKforged",
            "Max-Forwards: 70",
            "From: <sip:bob0@contoso.com>;tag=ent1",
            "To: <sip:alice0@oma.example>;tag=\(try #require(try legs[0].headers.from?.tag))",
            "Call-ID: not-a-dialog@example",
            "CSeq: 9 NOTIFY",
            "Event: presence",
            "Subscription-State: active;expires=3000",
        ])
        let (forgedID, refused) = h.receive(forged, from: .enterprise)
        #expect(GatewayCoreTests.responses(refused, forgedID).map(\.statusCode) == [481])
        // The first watcher unsubscribes; the second pair is still matched.
        let unsubscribe = try GatewayCoreTests.request([
            "SUBSCRIBE sip:bob0@contoso.com SIP/2.0",
            "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKu0",
            "Max-Forwards: 69",
            "From: <sip:alice0@oma.example>;tag=oma0",
            "To: <sip:bob0@contoso.com>;tag=\(okTags[0])",
            "Call-ID: oma-call-0",
            "CSeq: 2 SUBSCRIBE",
            "Contact: <sip:alice0@127.0.0.1:5070>",
            "Event: presence",
            "Accept: application/pidf+xml",
            "Expires: 0",
        ])
        let (unsubID, unsub) = h.receive(unsubscribe, from: .oma)
        #expect(GatewayCoreTests.responses(unsub, unsubID).first?.statusCode == 200)
        let away = try GatewayCoreTests.enterpriseBENOTIFY(legs[1], cseq: 3, GatewayCoreTests.categories(availability: 15500, uri: "sip:bob1@contoso.com"))
        let (_, changed) = h.receive(away, from: .enterprise)
        #expect(GatewayCoreTests.sent(changed, to: .oma).first?.0.headers.callID == "oma-call-1")
    }
}
