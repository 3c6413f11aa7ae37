import SIPMessages
import SIPStack
import Testing

@Suite struct SIPDialogTests {
    @Test func uasDialogTakesRecordRouteInOrderAndTheRequestsContactAsTarget() throws {
        let dialog = try SIPDialog(uasFor: presenceSubscribe(), localTag: "gw1")
        // RFC 3261 §12.1.1: Record-Route "taken in order", remote target = Contact, remote CSeq = 1.
        #expect(dialog.routeSet.map(\.uri.host) == ["p1.oma.example", "p2.oma.example"])
        #expect(dialog.remoteTarget.host == "192.0.2.10")
        #expect(dialog.remoteSequence == 1)
        #expect(dialog.localSequence == nil)
        #expect(dialog.id == SIPDialog.ID(callID: "sub-call-1@192.0.2.10", localTag: "gw1", remoteTag: "watcher1"))
    }

    @Test func uacDialogReversesTheResponsesRecordRoute() throws {
        let sub = presenceSubscribe()
        let ok = response("""
            SIP/2.0 200 OK
            Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bKsub1
            Record-Route: <sip:p1.oma.example;lr>
            Record-Route: <sip:p2.oma.example;lr>
            From: <sip:alice@oma.example>;tag=watcher1
            To: <sip:bob@contoso.com>;tag=srv9
            Call-ID: sub-call-1@192.0.2.10
            CSeq: 1 SUBSCRIBE
            Contact: <sip:bob@203.0.113.5:5061;transport=tls>
            Content-Length: 0


            """)
        let dialog = try SIPDialog(uacFor: sub, response: ok)
        // RFC 3261 §12.1.2: "taken in reverse order".
        #expect(dialog.routeSet.map(\.uri.host) == ["p2.oma.example", "p1.oma.example"])
        #expect(dialog.localSequence == 1)
        #expect(dialog.remoteSequence == nil)
        #expect(dialog.remoteTarget.host == "203.0.113.5")
        #expect(dialog.id.remoteTag == "srv9")
    }

    @Test func inDialogRequestsCarryTagsRoutesAndIncreasingCSeq() throws {
        var dialog = try SIPDialog(uasFor: presenceSubscribe(), localTag: "gw1")
        let contact = try SIPAddress("<sip:gw@198.51.100.1:5060>")
        let first = dialog.makeRequest(.notify, contact: contact)
        let second = dialog.makeRequest(.notify, contact: contact)
        // §12.2.1.1: the local sequence starts at 1 when empty, then increments.
        #expect(try first.headers.cseq == SIPCSeq(1, .notify))
        #expect(try second.headers.cseq == SIPCSeq(2, .notify))
        #expect(first.uri.host == "192.0.2.10")
        #expect(try first.headers.route.map(\.uri.host) == ["p1.oma.example", "p2.oma.example"])
        #expect(try first.headers.to?.tag == "watcher1")
        #expect(try first.headers.from?.tag == "gw1")
        #expect(first.headers.callID == "sub-call-1@192.0.2.10")
    }

    @Test func strictRouterBecomesTheRequestURIAndTheTargetGoesLast() throws {
        var dialog = try SIPDialog(uasFor: presenceSubscribe(), localTag: "gw1")
        dialog.routeSet = [try SIPAddress("<sip:strict.example>"), try SIPAddress("<sip:p2.oma.example;lr>")]
        let notify = dialog.makeRequest(.notify, contact: nil)
        // RFC 3261 §12.2.1.1, strict routing: Request-URI = first route, remote target appended.
        #expect(notify.uri.host == "strict.example")
        #expect(try notify.headers.route.map(\.uri.host) == ["p2.oma.example", "192.0.2.10"])
    }

    @Test func outOfOrderRequestIsRejectedAndTargetRefreshUpdatesTheTarget() throws {
        var dialog = try SIPDialog(uasFor: presenceSubscribe(cseq: 5), localTag: "gw1")
        #expect(dialog.receive(presenceSubscribe(cseq: 4, toTag: "gw1")) == .rejectOutOfOrder)
        var refresh = presenceSubscribe(cseq: 6, toTag: "gw1")
        refresh.headers.set(.contact, "<sip:alice@192.0.2.99:5070>")
        #expect(dialog.receive(refresh) == .accept)
        #expect(dialog.remoteSequence == 6)
        #expect(dialog.remoteTarget.host == "192.0.2.99")
    }

    @Test func requestWithoutFromTagCannotCreateADialog() {
        var sub = presenceSubscribe()
        sub.headers.set(.from, "<sip:alice@oma.example>")
        #expect(throws: SIPStackError.self) { try SIPDialog(uasFor: sub, localTag: "gw1") }
    }
}
