import NIOCore
import NIOEmbedded
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// Server transactions (RFC 3261 §17.2), the INVITE answer, CANCEL, and §17.2.3 matching, over
/// the loopback network.
@Suite struct TransactionServerTests {
    private func answer(_ h: TransactionHarness, _ code: Int, index: Int = 0) throws {
        let incoming = try #require(h.tu.items.dropFirst(index).first)
        try h.layer.respond(SIPResponse(replyingTo: incoming.request, statusCode: code, toTag: incoming.toTag),
                            to: incoming.transaction)
        h.loop.run()
    }

    // MARK: Non-INVITE server transaction (§17.2.2)

    @Test func retransmissionsInTryingAreAbsorbedAndTheTUSeesTheRequestOnce() {
        let h = TransactionHarness()
        h.peerSends(peerRequest())
        h.peerSends(peerRequest())
        #expect(h.tu.items.count == 1)
        #expect(h.peerInbox.items.isEmpty)
        #expect(h.layer.counters.requestRetransmissions == 1)
    }

    @Test func retransmissionsInProceedingGetTheLastProvisionalResponse() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest())
        try answer(h, 100)
        h.peerSends(peerRequest())
        #expect(h.peerResponses.map(\.statusCode) == [100, 100])
    }

    @Test func retransmissionsInCompletedGetTheFinalResponseAgain() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest())
        try answer(h, 200)
        h.peerSends(peerRequest())
        h.peerSends(peerRequest())
        #expect(h.peerResponses.map(\.statusCode) == [200, 200, 200])
        #expect(h.tu.items.count == 1)
        // All three are the same response (same To tag).
        #expect(Set(h.peerResponses.map { (try? $0.headers.to)?.tag }).count == 1)
    }

    @Test func theTUCannotSendASecondFinalResponse() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest())
        try answer(h, 200)
        try answer(h, 500)
        #expect(h.peerResponses.map(\.statusCode) == [200])
    }

    @Test func timerJKeepsTheTransactionForSixtyFourT1ThenRemovesIt() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest())
        try answer(h, 200)
        h.advance(to: 31.9)
        h.peerSends(peerRequest())
        #expect(h.layer.serverTransactionCount == 1)
        #expect(h.peerResponses.count == 2)
        h.advance(to: 32)
        #expect(h.layer.serverTransactionCount == 0)
        // After Timer J the same request is new to the layer and reaches the TU again.
        h.peerSends(peerRequest())
        #expect(h.tu.items.count == 2)
    }

    @Test func overTCPTimerJIsZero() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest(transport: "TCP"), over: .tcp)
        try answer(h, 200)
        #expect(h.layer.serverTransactionCount == 0)
        #expect(h.peerInbox.items.first?.local == TransactionHarness.peerTCP)
    }

    @Test func withoutRportTheResponseGoesToReceivedAtTheSentByPort() throws {
        let h = TransactionHarness()
        let other = h.network.endpoint(SIPTarget(.udp, host: "127.0.0.2", port: 5999))
        let otherInbox = Recorder<SIPReceivedMessage>()
        other.setMessageHandler { [otherInbox] in otherInbox.items.append($0) }
        // §18.2.2: received (the source address) with the sent-by port.
        h.peerSends(peerRequest(branch: "z9hG4bKnat", sentBy: "10.0.0.5:5999"))
        let via = try #require(try h.tu.items.first?.request.headers.via.first)
        #expect(via.received == "127.0.0.2")
        try answer(h, 200)
        #expect(h.peerResponses.isEmpty)
        #expect(otherInbox.items.compactMap { $0.message.response?.statusCode } == [200])
    }

    @Test func aResponseThatCannotBeSentEndsTheServerTransaction() throws {
        let h = TransactionHarness()
        let failures = Recorder<SIPTransactionEnd>()
        h.layer.setServerFailureHandler { [failures] _, end in failures.items.append(end) }
        // Nobody listens at 127.0.0.2:5999: the send fails (§17.2.4).
        h.peerSends(peerRequest(branch: "z9hG4bKgone", sentBy: "10.0.0.5:5999"))
        try answer(h, 200)
        h.loop.run()
        #expect(h.layer.serverTransactionCount == 0)
        #expect(h.layer.counters.failedServerTransactions == 1)
        #expect(failures.items == [.transportError])
    }

    @Test func withRportTheResponseGoesToTheSourceAddressAndPort() throws {
        let h = TransactionHarness()
        h.peerSends(sipMessage("""
            MESSAGE sip:gw@127.0.0.1 SIP/2.0
            Via: SIP/2.0/UDP 10.0.0.5:5999;branch=z9hG4bKrp;rport
            Max-Forwards: 70
            From: <sip:alice@example.org>;tag=t
            To: <sip:gw@example.com>
            Call-ID: rport-1
            CSeq: 1 MESSAGE
            Content-Length: 0


            """))
        let via = try #require(try h.tu.items.first?.request.headers.via.first)
        #expect(via.rport == .port(5070))
        try answer(h, 200)
        // RFC 3581 §4: received:rport.
        #expect(h.peerResponses.map(\.statusCode) == [200])
    }

    @Test func aRequestTheTUNeverAnswersIsAbandonedAfterSixtyFourT1WithoutA408() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest())
        h.advance(to: 31.9)
        #expect(h.layer.serverTransactionCount == 1)
        h.advance(to: 32)
        // The client's Timer F has fired; RFC 4320 §4.2 forbids a 408 to a non-INVITE request.
        #expect(h.layer.serverTransactionCount == 0)
        #expect(h.layer.counters.abandonedServerTransactions == 1)
        #expect(h.peerInbox.items.isEmpty)
        let incoming = try #require(h.tu.items.first)
        #expect(throws: SIPStackError.self) {
            try h.layer.respond(SIPResponse(replyingTo: incoming.request, statusCode: 200), to: incoming.transaction)
        }
    }

    @Test func anAnsweredRequestIsNotAbandoned() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest())
        try answer(h, 100)
        h.advance(to: 20)
        try answer(h, 200)
        h.advance(to: 40)
        #expect(h.layer.counters.abandonedServerTransactions == 0)
        #expect(h.peerResponses.map(\.statusCode) == [100, 200])
    }

    // MARK: INVITE answered by the layer (§17.2.1)

    @Test func inviteGets405WithTheTUsMethodsInAllow() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest("INVITE"))
        let response = try #require(h.peerResponses.first)
        #expect(response.statusCode == 405)
        #expect(response.headers[.allow] == "MESSAGE, SUBSCRIBE, NOTIFY, OPTIONS")
        #expect(try response.headers.to?.tag != nil)
        #expect(h.tu.items.isEmpty)
    }

    @Test func inviteCanBeAnswered501InsteadWithoutAllow() throws {
        let h = TransactionHarness(configuration: .init(inviteStatus: 501))
        h.peerSends(peerRequest("INVITE"))
        #expect(h.peerResponses.map(\.statusCode) == [501])
        #expect(h.peerResponses.first?.headers[.allow] == nil)
    }

    @Test func timerGRetransmitsThe405UntilTimerHGivesUpAtThirtyTwoSeconds() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest("INVITE"))
        h.advance(to: 31.9)
        // §17.2.1: G starts at T1 and doubles up to T2.
        let times = h.gatewaySendTimes { $0.response?.statusCode == 405 }
        #expect(times == [0, 0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5])
        #expect(h.layer.serverTransactionCount == 1)
        let failures = Recorder<SIPTransactionEnd>()
        h.layer.setServerFailureHandler { [failures] _, end in failures.items.append(end) }
        h.advance(to: 32)
        #expect(failures.items == [.timeout])
        // Timer H: no ACK came; the transaction fails.
        #expect(h.layer.serverTransactionCount == 0)
        #expect(h.layer.counters.failedServerTransactions == 1)
        h.advance(to: 40)
        #expect(h.gatewaySendTimes { $0.response != nil }.count == 11)
    }

    @Test func anInviteRetransmissionGetsThe405Again() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest("INVITE"))
        h.peerSends(peerRequest("INVITE"))
        #expect(h.peerResponses.map(\.statusCode) == [405, 405])
        #expect(h.layer.serverTransactionCount == 1)
    }

    @Test func ackStopsTimerGAndTimerIAbsorbsAckRetransmissionsForT4() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest("INVITE"))
        let toTag = try #require(try h.peerResponses.first?.headers.to?.tag)
        let ack = peerRequest("ACK", toTag: toTag)
        h.advance(to: 0.2)
        h.peerSends(ack)
        let key = try #require(h.layer.serverTransactionKeys.first)
        #expect(h.layer.serverState(key) == "confirmed")
        h.peerSends(ack)
        h.advance(to: 4.9)
        // No retransmission of the 405 after the ACK; the ACKs got no response.
        #expect(h.gatewaySendTimes { $0.response != nil } == [0])
        #expect(h.layer.serverTransactionCount == 1)
        h.advance(to: 5.2)
        #expect(h.layer.serverTransactionCount == 0)
        #expect(h.layer.counters.failedServerTransactions == 0)
        #expect(h.tu.items.isEmpty)
    }

    @Test func overTCPTheInviteTransactionNeitherRetransmitsNorWaitsAfterTheAck() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest("INVITE", transport: "TCP"), over: .tcp)
        h.advance(to: 10)
        #expect(h.gatewaySendTimes { $0.response != nil } == [0])
        let toTag = try #require(try h.peerResponses.first?.headers.to?.tag)
        h.peerSends(peerRequest("ACK", transport: "TCP", toTag: toTag), over: .tcp)
        // Timer I is zero on reliable transports.
        #expect(h.layer.serverTransactionCount == 0)
    }

    @Test func cancelMatchingTheInviteGets200AndNothingElse() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest("INVITE"))
        h.peerSends(peerRequest("CANCEL"))
        // §9.2: the INVITE was already answered, so no 487; the CANCEL gets 200.
        #expect(h.peerResponses.map(\.statusCode) == [405, 200])
        #expect(try h.peerResponses.last?.headers.cseq == SIPCSeq(1, .cancel))
        // §9.2: the 200 to the CANCEL carries the To tag of the INVITE's response.
        #expect(try h.peerResponses.first?.headers.to?.tag == h.peerResponses.last?.headers.to?.tag)
        h.peerSends(peerRequest("CANCEL"))
        #expect(h.peerResponses.map(\.statusCode) == [405, 200, 200])
    }

    @Test func cancelMatchingNothingGets481() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest("CANCEL", branch: "z9hG4bKnothing"))
        #expect(h.peerResponses.map(\.statusCode) == [481])
        #expect(h.tu.items.isEmpty)
    }

    @Test func anAckMatchingNothingIsDroppedAndCounted() {
        let h = TransactionHarness()
        h.peerSends(peerRequest("ACK", branch: "z9hG4bKstray", toTag: "x"))
        #expect(h.peerInbox.items.isEmpty)
        #expect(h.layer.counters.unmatchedACKs == 1)
        #expect(h.tu.items.isEmpty)
    }

    // MARK: Matching (§17.2.3, §8.2.2.2)

    @Test func aMergedRequestOnAnotherBranchGets482() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest(branch: "z9hG4bKpathA"))
        // The same request forked back to us along another path: same From tag, Call-ID, CSeq,
        // no To tag, other branch (§8.2.2.2).
        h.peerSends(peerRequest(branch: "z9hG4bKpathB", sentBy: "127.0.0.2:5070"))
        #expect(h.tu.items.count == 1)
        #expect(h.peerResponses.map(\.statusCode) == [482])
        #expect(try h.peerResponses.first?.headers.via.first?.branch == "z9hG4bKpathB")
    }

    @Test func aRequestWithAToTagIsNeverTreatedAsMerged() {
        let h = TransactionHarness()
        h.peerSends(peerRequest(branch: "z9hG4bKd1", toTag: "dlg"))
        h.peerSends(peerRequest(branch: "z9hG4bKd2", toTag: "dlg"))
        #expect(h.tu.items.count == 2)
    }

    @Test func theSameBranchFromAnotherSentByIsAnotherTransaction() {
        let h = TransactionHarness()
        h.peerSends(peerRequest(branch: "z9hG4bKsame", callID: "c-a"))
        h.peerSends(peerRequest(branch: "z9hG4bKsame", sentBy: "127.0.0.2:5071", callID: "c-b"))
        #expect(h.tu.items.count == 2)
    }

    @Test func theSameBranchWithAnotherMethodIsAnotherTransaction() {
        let h = TransactionHarness()
        h.peerSends(peerRequest("MESSAGE", branch: "z9hG4bKm", callID: "c-a"))
        h.peerSends(peerRequest("NOTIFY", branch: "z9hG4bKm", callID: "c-b", toTag: "t"))
        #expect(h.tu.items.map(\.request.method) == [.message, .notify])
    }

    @Test func rfc2543RequestsMatchByRequestURITagsCallIDCSeqAndTopVia() throws {
        let h = TransactionHarness()
        let old = peerRequest(branch: "2543-branch")
        h.peerSends(old)
        h.peerSends(old)
        #expect(h.tu.items.count == 1)
        #expect(h.tu.items.first?.transaction.isRFC3261 == false)
        // Another CSeq is another transaction.
        h.peerSends(peerRequest(branch: "2543-branch", cseq: 2))
        #expect(h.tu.items.count == 2)
        // Another Request-URI is another transaction: not absorbed as a retransmission but, with
        // the same From tag, Call-ID and CSeq and no To tag, a merged request (482).
        h.peerSends(peerRequest(branch: "2543-branch", uri: "sip:other@127.0.0.1"))
        #expect(h.tu.items.count == 2)
        #expect(h.peerResponses.map(\.statusCode) == [482])
        try answer(h, 200)
        h.peerSends(old)
        #expect(h.peerResponses.map(\.statusCode) == [482, 200, 200])
    }

    @Test func rfc2543ViaWithoutBranchMatchesToo() {
        let h = TransactionHarness()
        let noBranch = sipMessage("""
            MESSAGE sip:gw@127.0.0.1 SIP/2.0
            Via: SIP/2.0/UDP 127.0.0.2:5070
            From: <sip:alice@example.org>;tag=old
            To: <sip:gw@example.com>
            Call-ID: 2543-nobranch
            CSeq: 7 MESSAGE
            Content-Length: 0


            """)
        h.peerSends(noBranch)
        h.peerSends(noBranch)
        #expect(h.tu.items.count == 1)
    }

    @Test func rfc2543AckMatchesTheInviteThroughTheToTagOfThe405() throws {
        let h = TransactionHarness()
        h.peerSends(peerRequest("INVITE", branch: "old-invite"))
        let toTag = try #require(try h.peerResponses.first?.headers.to?.tag)
        // An ACK with another To tag does not match.
        h.peerSends(peerRequest("ACK", branch: "old-invite", toTag: "wrong"))
        #expect(h.layer.counters.unmatchedACKs == 1)
        h.peerSends(peerRequest("ACK", branch: "old-invite", toTag: toTag))
        let key = try #require(h.layer.serverTransactionKeys.first)
        #expect(h.layer.serverState(key) == "confirmed")
    }

    @Test func rfc2543CancelFindsTheInvite() {
        let h = TransactionHarness()
        h.peerSends(peerRequest("INVITE", branch: "old-inv"))
        h.peerSends(peerRequest("CANCEL", branch: "old-inv"))
        #expect(h.peerResponses.map(\.statusCode) == [405, 200])
    }

    @Test func statelessResponsesCreateNoTransaction() throws {
        let h = TransactionHarness()
        let request = try #require(peerRequest().request)
        let received = SIPReceivedMessage(message: .request(request), source: TransactionHarness.peerUDP,
                                          local: TransactionHarness.gatewayUDP)
        h.layer.respondStatelessly(SIPResponse(replyingTo: request, statusCode: 403, toTag: "s"),
                                   to: request, receivedOver: received)
        h.loop.run()
        #expect(h.peerResponses.map(\.statusCode) == [403])
        #expect(h.layer.counters.statelessResponses == 1)
        #expect(h.layer.serverTransactionCount == 0)
    }

    @Test func theServerTableIsBounded() {
        let h = TransactionHarness(configuration: .init(limits: .init(maxServerTransactions: 1)))
        h.peerSends(peerRequest(branch: "z9hG4bKone", callID: "a"))
        h.peerSends(peerRequest(branch: "z9hG4bKtwo", callID: "b"))
        #expect(h.tu.items.count == 1)
        #expect(h.peerResponses.map(\.statusCode) == [503])
        #expect(h.layer.counters.refusedWhileFull == 1)
        // A retransmission of the request that holds the one entry is absorbed, not refused.
        h.peerSends(peerRequest(branch: "z9hG4bKone", callID: "a"))
        #expect(h.layer.counters.refusedWhileFull == 1)
    }
}
