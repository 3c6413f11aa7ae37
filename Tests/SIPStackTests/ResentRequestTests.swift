import NIOCore
import SIPMessages
import SIPStack
import Testing

/// A request sent again with credentials and CSeq one higher (RFC 3261 §22.2, §8.1.3.5): the
/// subscription or publication takes it as outstanding, and every later request of the same
/// dialog or Call-ID numbers on from it (§12.2.1.1: CSeq increases within a dialog).
@Suite struct ResentRequestTests {
    let t0 = NIODeadline.uptimeNanoseconds(5_000_000_000_000)

    func subscription() throws -> (SubscriberSubscription, SIPRequest) {
        let configuration = SubscriberSubscription.Configuration(
            target: try SIPURI("sip:bob@oma.example"), from: try SIPAddress("<sip:alice@contoso.com>"),
            to: try SIPAddress("<sip:bob@oma.example>"), contact: try SIPAddress("<sip:gw@198.51.100.1:5060>"),
            accept: ["application/pidf+xml"], expires: 3600)
        let (sub, actions) = SubscriberSubscription.start(configuration, callID: "c1@gw", localTag: "w1")
        let first = try #require(actions.compactMap { if case .send(let r) = $0 { r } else { nil } }.first)
        return (sub, first)
    }

    static func again(_ request: SIPRequest) throws -> SIPRequest {
        var again = request
        let cseq = try #require(try request.headers.cseq)
        again.headers.set(.cseq, "\(cseq.sequence + 1) \(cseq.method.rawValue)")
        again.headers.append("Authorization", "Digest username=\"gw\"")
        return again
    }

    static func cseq(_ actions: [SubscriberSubscription.Action]) throws -> UInt32 {
        let request = try #require(actions.compactMap { if case .send(let r) = $0 { r } else { nil } }.first)
        return try #require(try request.headers.cseq).sequence
    }

    /// The 200 answers the resent SUBSCRIBE (CSeq 2): the refresh is CSeq 3, the un-SUBSCRIBE 4.
    @Test func theDialogOfAResentSubscribeNumbersOnFromIt() throws {
        var (sub, first) = try subscription()
        let again = try Self.again(first)
        let taken = sub.resent(again)
        #expect(taken)
        var ok = SIPResponse(replyingTo: again, statusCode: 200, toTag: "srv1")
        ok.headers.append(.contact, "<sip:bob@203.0.113.7:5060>")
        ok.headers.append(.expires, "600")
        _ = sub.receive(ok, now: t0, jitter: 0)
        #expect(sub.dialog?.localSequence == 2)
        #expect(try Self.cseq(sub.refresh(now: t0)) == 3)
        var refreshed = SIPResponse(replyingTo: try #require(sub.outstanding), statusCode: 200, toTag: "srv1")
        refreshed.headers.append(.expires, "600")
        _ = sub.receive(refreshed, now: t0, jitter: 0)
        #expect(try Self.cseq(sub.unsubscribe()) == 4)
    }

    /// The NOTIFY comes before the 200 (RFC 6665 §4.1.2.4): the dialog it makes starts from the
    /// resent SUBSCRIBE's CSeq too.
    @Test func aDialogMadeByTheFirstNotifyStartsFromTheResentCSeq() throws {
        var (sub, first) = try subscription()
        let again = try Self.again(first)
        let taken = sub.resent(again)
        #expect(taken)
        var headers = SIPHeaders()
        headers.append(.via, "SIP/2.0/UDP 203.0.113.7:5060;branch=z9hG4bKn1")
        headers.append(.from, "<sip:bob@oma.example>;tag=srv1")
        headers.append(.to, "<sip:alice@contoso.com>;tag=w1")
        headers.append(.callID, "c1@gw")
        headers.append(.cseq, "1 NOTIFY")
        headers.append(.contact, "<sip:bob@203.0.113.7:5060>")
        headers.append(.event, "presence")
        headers.append(.subscriptionState, "active;expires=600")
        let notify = SIPRequest(method: .notify, uri: try SIPURI("sip:gw@198.51.100.1:5060"), headers: headers)
        _ = sub.receive(notify: notify, now: t0, jitter: 0)
        #expect(sub.dialog?.localSequence == 2)
        #expect(try Self.cseq(sub.refresh(now: t0)) == 3)
    }

    /// Nothing outstanding: nothing to take.
    @Test func withoutAnOutstandingRequestNothingIsTaken() throws {
        var (sub, first) = try subscription()
        _ = sub.receive(SIPResponse(replyingTo: first, statusCode: 404), now: t0, jitter: 0)
        let taken = sub.resent(try Self.again(first))
        #expect(!taken)
    }

    /// RFC 3903 §4: the 200 to the resent PUBLISH is matched by its CSeq (2); the refresh is 3.
    @Test func aResentPublishIsMatchedAndItsRefreshNumbersOn() throws {
        let configuration = PublicationClient.Configuration(
            target: try SIPURI("sip:alice@oma.example"), from: try SIPAddress("<sip:alice@oma.example>"),
            to: try SIPAddress("<sip:alice@oma.example>"), expires: 600)
        var (client, actions) = PublicationClient.start(
            configuration, body: Array("<presence/>".utf8), contentType: "application/pidf+xml", callID: "p1@gw",
            localTag: "t1")
        let first = try #require(actions.compactMap { if case .send(let r) = $0 { r } else { nil } }.first)
        let again = try Self.again(first)
        let taken = client.resent(again)
        #expect(taken)
        var ok = SIPResponse(replyingTo: again, statusCode: 200, toTag: "esc")
        ok.headers.append(.sipETag, "e1")
        ok.headers.append(.expires, "600")
        _ = client.receive(ok, now: t0, jitter: 0)
        #expect(client.status == .published)
        let refresh = try #require(
            client.refresh(now: t0).compactMap { if case .send(let r) = $0 { r } else { nil } }.first)
        #expect(try refresh.headers.cseq?.sequence == 3)
    }
}
