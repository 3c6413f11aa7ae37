import NIOCore
import SIPMessages
import SIPStack
import Testing
import _GatewayInternals

/// The dialog keeps its addresses, target and route set as wire text; these check that what is
/// read back and the in-dialog requests built from it are what RFC 3261 §12 requires.
@Suite struct SIPDialogStorageTests {
    @Test func recordRouteSetAndChangedTargetStillMakeTheRequestOf12_2_1_1() throws {
        var dialog = try SIPDialog(uasFor: presenceSubscribe(), localTag: "gw1")
        // A target refresh (RFC 6665 §4.1.2.4 via a SUBSCRIBE refresh) moves the remote target.
        var refresh = presenceSubscribe(cseq: 2, toTag: "gw1")
        refresh.headers.set(.contact, "\"Alice\" <sip:alice@192.0.2.77:5070;transport=tcp>;expires=600")
        #expect(dialog.receive(refresh) == .accept)
        let contact = try SIPAddress("<sip:gw@198.51.100.1:5060>")
        let notify = dialog.makeRequest(.notify, contact: contact, body: Array("x".utf8), contentType: "text/plain")
        // §12.2.1.1: Request-URI = remote target (loose routing), Route = route set in order,
        // To = remote URI + remote tag, From = local URI + local tag, Call-ID, CSeq from 1.
        #expect(notify.uri == (try SIPURI("sip:alice@192.0.2.77:5070;transport=tcp")))
        #expect(notify.headers.values(named: .route) == ["<sip:p1.oma.example;lr>", "<sip:p2.oma.example;lr>"])
        #expect(try notify.headers.to == (try SIPAddress("<sip:alice@oma.example>;tag=watcher1")))
        #expect(try notify.headers.from == (try SIPAddress("<sip:bob@contoso.com>;tag=gw1")))
        #expect(notify.headers.callID == "sub-call-1@192.0.2.10")
        #expect(try notify.headers.cseq == SIPCSeq(1, .notify))
        #expect(try notify.headers.contact.first?.address == contact)
        #expect(notify.headers[.contentType] == "text/plain")
        #expect(dialog.remoteTarget.port == 5070)
    }

    /// Sequence numbers and the TLS flag are packed; absent and present values read back and
    /// compare as the optionals they stand for.
    @Test func packedSequencesReadBackAndCompare() throws {
        var dialog = try SIPDialog(uasFor: presenceSubscribe(), localTag: "gw1")
        #expect(MemoryLayout<SIPDialog>.stride <= 80)
        let original = dialog
        #expect(dialog.localSequence == nil && dialog.isSecure == false)
        dialog.localSequence = 0
        #expect(dialog.localSequence == 0 && dialog != original)
        dialog.localSequence = 7
        dialog.remoteSequence = .max
        dialog.isSecure = true
        #expect(dialog.localSequence == 7 && dialog.remoteSequence == .max && dialog.isSecure)
        dialog.localSequence = nil
        dialog.remoteSequence = original.remoteSequence
        dialog.isSecure = false
        #expect(dialog == original)
    }

    @Test func storedValuesReadBackAsTheyWereGiven() throws {
        let local = try SIPAddress("\"Bob \\\"B\\\" Smith\" <sip:bob@contoso.com;user=phone>;tag=l1;epid=abc")
        let remote = try SIPAddress("<sips:alice@oma.example>;tag=r1")
        let target = try SIPURI("sip:alice@[2001:db8::1]:5061;transport=tls;ob")
        let routes = [try SIPAddress("<sip:p1.example;lr;transport=tcp>"), try SIPAddress("<sip:p2.example;lr>")]
        let dialog = SIPDialog(id: SIPDialog.ID(callID: "c@h", localTag: "l1", remoteTag: "r1"), localSequence: 4,
                               remoteSequence: nil, localURI: local, remoteURI: remote, remoteTarget: target,
                               routeSet: routes, isSecure: true)
        #expect(dialog.localURI == local)
        #expect(dialog.remoteURI == remote)
        #expect(dialog.remoteTarget == target)
        #expect(dialog.routeSet == routes)
        #expect(dialog.localSequence == 4)
        #expect(dialog.isSecure)
        var copy = dialog
        copy.routeSet = routes
        #expect(copy == dialog)
    }

    @Test func valueThatDoesNotReadBackFromItsTextIsKeptAsGiven() throws {
        // A host built in code with a line feed cannot be written and read back; it is kept parsed.
        let odd = SIPURI(host: "odd\nhost")
        var dialog = SIPDialog(id: SIPDialog.ID(callID: "c@h", localTag: "l1", remoteTag: "r1"), localSequence: nil,
                               remoteSequence: nil, localURI: try SIPAddress("<sip:a@b>"),
                               remoteURI: try SIPAddress("<sip:c@d>"), remoteTarget: odd, routeSet: [])
        #expect(dialog.remoteTarget == odd)
        #expect(dialog.makeRequest(.notify, contact: nil).uri == odd)
        #expect(dialog.localURI.tag == "l1")
    }

    /// A record reads back as the dialog that wrote it; a record written by hand (other tags than
    /// its identifiers', text not as the writer writes it) reads back as the dialog made from its
    /// parsed values, with the identifiers' tags; a field that does not parse is an error naming it.
    @Test func recordsReadBackAsWrittenOrAsParsed() throws {
        var dialog = try SIPDialog(uasFor: presenceSubscribe(), localTag: "gw1")
        dialog.localSequence = 12
        #expect(try SIPDialog(record: dialog.record) == dialog)

        var edited = dialog.record
        edited.localURI = "<SIP:bob@contoso.com>;tag=other"
        edited.remoteURI = "sip:alice@oma.example ; tag=watcher1"
        edited.routeSet = ["<sip:p1.oma.example;lr>", "  <sip:p2.oma.example;lr>"]
        let read = try SIPDialog(record: edited)
        let parsed = SIPDialog(
            id: dialog.id, localSequence: 12, remoteSequence: dialog.remoteSequence, localURI: try SIPAddress(edited.localURI),
            remoteURI: try SIPAddress(edited.remoteURI), remoteTarget: try SIPURI(edited.remoteTarget),
            routeSet: try edited.routeSet.map { try SIPAddress($0) }, isSecure: false)
        #expect(read == parsed)
        #expect(read.localURI.tag == "gw1" && read.remoteURI.tag == "watcher1")
        #expect(read.routeSet == dialog.routeSet && read.remoteTarget == dialog.remoteTarget)

        var broken = dialog.record
        broken.remoteTarget = "not a uri"
        #expect {
            _ = try SIPDialog(record: broken)
        } throws: { error in
            "\(error)".contains("remote target")
        }
    }

    @Test func newTagsInTheIDGoIntoFromAndTo() throws {
        var dialog = try SIPDialog(uasFor: presenceSubscribe(), localTag: "gw1")
        dialog.id = SIPDialog.ID(callID: dialog.id.callID, localTag: "gw2", remoteTag: "watcher2")
        let notify = dialog.makeRequest(.notify, contact: nil)
        #expect(try notify.headers.from?.tag == "gw2")
        #expect(try notify.headers.to?.tag == "watcher2")
    }

    @Test func strictRouteSetStoredAsTextStillPutsTheTargetLast() throws {
        var dialog = try SIPDialog(uasFor: presenceSubscribe(), localTag: "gw1")
        dialog.routeSet = [try SIPAddress("<sip:strict.example>")]
        let notify = dialog.makeRequest(.notify, contact: nil)
        // RFC 3261 §12.2.1.1: strict router → Request-URI, remote target → last Route.
        #expect(notify.uri.host == "strict.example")
        #expect(try notify.headers.route.map(\.uri) == [try SIPURI("sip:alice@192.0.2.10:5060")])
    }
}

@Suite struct DenseTableTests {
    @Test func behavesAsADictionaryAndReusesFreedSlots() {
        var table = DenseTable<Int, String>()
        for key in 0..<10 { table[key] = "v\(key)" }
        #expect(table.count == 10)
        table[3] = nil
        #expect(table.removeValue(forKey: 4) == "v4")
        #expect(table.removeValue(forKey: 4) == nil)
        #expect(table[3] == nil)
        #expect(table.count == 8)
        table[20] = "v20"
        table[5] = "five"
        #expect(table[20] == "v20")
        #expect(table[5] == "five")
        #expect(Set(table.keys) == Set([0, 1, 2, 5, 6, 7, 8, 9, 20]))
        #expect(table.values.count == 9)
        #expect(table.first { $0.value == "five" }?.key == 5)
        table[5]? += "!"
        #expect(table[5] == "five!")
        for key in Array(table.keys) { table[key] = nil }
        #expect(table.isEmpty)
        table[1] = "again"
        #expect(table[1] == "again")
    }

    /// `modify` changes a value where it lies: its storage is not copied on write, as it would be
    /// for a value copied out and written back while the table still held it.
    @Test func modifyChangesAValueInPlace() throws {
        var table = DenseTable<Int, [Int]>()
        table[1] = Array(0..<100)
        func address() -> UInt? { table[1]?.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }
        let before = try #require(address())
        #expect(table.modify(1) { values -> Int in
            values[0] = -1
            return values.count
        } == 100)
        #expect(address() == before)
        #expect(table[1]?.first == -1)
        #expect(table.modify(2) { _ in 0 } == nil)
        #expect(table.count == 1)
    }

    @Test func valuesAcrossSeveralChunksStayReachable() {
        // Over three chunks of 1,024 slots: positions past the first chunk map to later ones.
        var table = DenseTable<Int, Int>()
        for key in 0..<3_000 { table[key] = key * 10 }
        #expect(table.count == 3_000)
        #expect((0..<3_000).allSatisfy { table[$0] == $0 * 10 })
        for key in stride(from: 0, to: 3_000, by: 3) { table[key] = nil }
        #expect(table.count == 2_000)
        // Freed slots in any chunk are reused before a new one is opened.
        for key in 5_000..<6_000 { table[key] = -key }
        #expect(table.count == 3_000)
        #expect(table[5_999] == -5_999)
        #expect(table[2_999] == 29_990)
        #expect(table[2_997] == nil)
        #expect(Set(table.values).count == 3_000)
        #expect(table.first { $0.value == -5_500 }?.key == 5_500)
    }
}

@Suite struct SubscriberSubscriptionStorageTests {
    let t0 = NIODeadline.uptimeNanoseconds(5_000_000_000_000)

    private func configuration(bodyGivenPerRequest: Bool = false) throws -> SubscriberSubscription.Configuration {
        SubscriberSubscription.Configuration(
            target: try SIPURI("sip:pool1@contoso.com;gruu;opaque=app:x"), from: try SIPAddress("\"W\" <sip:w@oma.example>"),
            to: try SIPAddress("<sip:w@oma.example>"), contact: try SIPAddress("<sip:gw@198.51.100.1:5061;transport=tcp>"),
            eventID: "e7", accept: ["application/msrtc-event-categories+xml", "multipart/related"], expires: 3600,
            supported: ["eventlist"], extraHeaders: [(.require, "adhoclist, categoryList")],
            body: Array("<batchSub/>".utf8), bodyType: "application/msrtc-adrl-categorylist+xml",
            bodyGivenPerRequest: bodyGivenPerRequest)
    }

    private func sent(_ actions: [SubscriberSubscription.Action]) -> [SIPRequest] {
        actions.compactMap { if case .send(let r) = $0 { return r } else { return nil } }
    }

    @Test func configurationReadsBackAsStarted() throws {
        let given = try configuration()
        let (sub, actions) = SubscriberSubscription.start(given, callID: "c1@gw", localTag: "w1")
        #expect(sub.configuration == given)
        let subscribe = try #require(sent(actions).first)
        // RFC 6665 §4.1.2.1 / §8.2.1: the request carries what was configured.
        #expect(subscribe.uri == given.target)
        #expect(try subscribe.headers.from == (try SIPAddress("\"W\" <sip:w@oma.example>;tag=w1")))
        #expect(subscribe.headers[.event] == "presence;id=e7")
        #expect(subscribe.headers[.require] == "adhoclist, categoryList")
        #expect(subscribe.body == Array("<batchSub/>".utf8))
    }

    @Test func refreshCarriesTheProfileHeadersInTheDialog() throws {
        var (sub, actions) = SubscriberSubscription.start(try configuration(), callID: "c1@gw", localTag: "w1")
        let subscribe = try #require(sent(actions).first)
        var ok = SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "srv1")
        ok.headers.append(.contact, "<sip:pool1@203.0.113.7:5061;transport=tcp>")
        ok.headers.append(.recordRoute, "<sip:edge.contoso.com;lr>")
        ok.headers.append(.expires, "3600")
        _ = sub.receive(ok, now: t0, jitter: 0)
        let refresh = try #require(sent(sub.refresh(now: t0)).first)
        // RFC 6665 §4.1.2.2: an in-dialog SUBSCRIBE; RFC 3261 §12.2.1.1: target and route set.
        #expect(refresh.uri == (try SIPURI("sip:pool1@203.0.113.7:5061;transport=tcp")))
        #expect(refresh.headers.values(named: .route) == ["<sip:edge.contoso.com;lr>"])
        #expect(try refresh.headers.to?.tag == "srv1")
        #expect(try refresh.headers.cseq == SIPCSeq(2, .subscribe))
        #expect(refresh.headers[.event] == "presence;id=e7")
        #expect(refresh.headers[.accept] == "application/msrtc-event-categories+xml, multipart/related")
        #expect(refresh.headers[.supported] == "eventlist")
        #expect(refresh.headers[.expires] == "3600")
        #expect(refresh.body == Array("<batchSub/>".utf8))
    }

    @Test func bodyGivenPerRequestIsKeptForA423RetryAndDroppedOnceAnswered() throws {
        var (sub, actions) = SubscriberSubscription.start(try configuration(bodyGivenPerRequest: true), callID: "c1@gw", localTag: "w1")
        let first = try #require(sent(actions).first)
        var brief = SIPResponse(replyingTo: first, statusCode: 423)
        brief.headers.append(.minExpires, "7200")
        let retry = try #require(sent(sub.receive(brief, now: t0, jitter: 0)).first)
        // RFC 6665 §4.1.2.1: the retry is the same request with the longer Expires.
        #expect(retry.body == Array("<batchSub/>".utf8))
        #expect(retry.headers[.expires] == "7200")
        var ok = SIPResponse(replyingTo: retry, statusCode: 200, toTag: "srv1")
        ok.headers.append(.contact, "<sip:pool1@203.0.113.7:5061>")
        _ = sub.receive(ok, now: t0, jitter: 0)
        #expect(sub.outstanding == nil)
        #expect(sub.configuration.body.isEmpty)
        let next = try #require(sent(sub.resubscribe(body: Array("<b2/>".utf8), now: t0)).first)
        #expect(next.body == Array("<b2/>".utf8))
    }
}
