import NIOCore
import NIOEmbedded
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// Non-INVITE client transactions (RFC 3261 §17.1.2) over the loopback network.
@Suite struct TransactionClientTests {
    private func send(_ h: TransactionHarness, to target: SIPTarget = TransactionHarness.peerUDP,
                      _ events: Recorder<SIPClientTransactionEvent>) throws -> SIPClientTransactionKey {
        try h.layer.send(TransactionHarness.outgoing(), to: target) { [events] in events.items.append($0) }
    }

    /// The peer answers the last request it received with `code`.
    private func peerAnswers(_ h: TransactionHarness, _ code: Int, over kind: SIPTransportKind = .udp) throws {
        let request = try #require(h.peerRequests.last)
        h.peerSends(.response(SIPResponse(replyingTo: request, statusCode: code, toTag: "peer-to")), over: kind)
    }

    @Test func theTopViaCarriesAMagicCookieBranchTheAdvertisedSentByAndRport() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        let key = try send(h, events)
        h.loop.run()
        let via = try #require(try h.peerRequests.first?.headers.via.first)
        // RFC 3261 §8.1.1.7 and RFC 3581 §3 (the peer's transport filled rport in, §18.2.1).
        #expect(via.branch == key.branch)
        #expect(key.branch.hasPrefix("z9hG4bK") && key.branch.count > 7)
        #expect(via.host == "127.0.0.1" && via.port == 5060 && via.transport == "UDP")
        #expect(via.rport == .port(5060))
        #expect(try h.peerRequests.first?.headers.maxForwards == 70)
    }

    /// A client transaction's branch carries the layer's shard, also for a request sent without
    /// a transaction (a BENOTIFY, [MS-PRES] §3.4.5.1.4).
    @Test func theLayerMarksEveryBranchItMakesWithItsShard() throws {
        let h = TransactionHarness(configuration: .init(shard: 41))
        _ = try h.layer.send(TransactionHarness.outgoing(), to: TransactionHarness.peerUDP) { _ in }
        h.layer.sendWithoutTransaction(TransactionHarness.outgoing(.benotify), to: TransactionHarness.peerUDP)
        h.loop.run()
        let branches = try h.peerRequests.map { try #require(try $0.headers.via.first?.branch) }
        #expect(branches.count == 2)
        #expect(branches.allSatisfy { ShardMark.shard(ofBranch: $0) == 41 }, "\(branches)")
    }

    @Test func branchesDifferBetweenTransactions() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        let a = try send(h, events)
        let b = try send(h, events)
        #expect(a.branch != b.branch)
    }

    @Test func timerERetransmitsAtHalfOneTwoFourThenEveryFourSecondsUntilTimerF() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        _ = try send(h, events)
        h.advance(to: 40)
        // §17.1.2.2: E starts at T1 and doubles up to T2; sends at 0, 0.5, 1.5, 3.5, 7.5, then
        // every 4 s until Timer F ends the transaction at 64·T1 = 32 s.
        let times = h.gatewaySendTimes { $0.request?.method == .message }
        #expect(times == [0, 0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5])
        let intervals = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(intervals.prefix(5) == [0.5, 1, 2, 4, 4])
    }

    @Test func timerFReportsA408ToTheTUAtThirtyTwoSeconds() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        let key = try send(h, events)
        h.advance(to: 31.999)
        #expect(events.items.isEmpty)
        #expect(h.layer.clientState(key) == .trying)
        h.advance(to: 32)
        // §8.1.3.1: a timeout is reported as if a 408 had been received.
        guard case .timeout(let response)? = events.items.first else {
            Issue.record("expected a timeout, got \(events.items)")
            return
        }
        #expect(response.statusCode == 408)
        #expect(try response.headers.cseq == SIPCSeq(1, .message))
        #expect(events.items.count == 1)
        #expect(h.layer.clientTransactionCount == 0)
    }

    @Test func reliableTransportsNeverRetransmitButStillTimeOut() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        _ = try send(h, to: TransactionHarness.peerTCP, events)
        h.advance(to: 31.9)
        #expect(h.gatewaySendTimes { $0.request != nil } == [0])
        h.advance(to: 32)
        #expect(events.items.map(\.response.statusCode) == [408])
    }

    @Test func aProvisionalResponseMovesToProceedingWhereTimerEUsesT2() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        let key = try send(h, events)
        h.advance(to: 0.1)
        h.loop.run()
        try peerAnswers(h, 100)
        #expect(h.layer.clientState(key) == .proceeding)
        h.advance(to: 9)
        // §17.1.2.2: in Proceeding, E fires (at 0.5, armed in Trying) and is reset to T2.
        #expect(h.gatewaySendTimes { $0.request != nil } == [0, 0.5, 4.5, 8.5])
        #expect(events.items.map(\.response.statusCode) == [100])
    }

    @Test func aFinalResponseReachesTheTUOnceAndTimerKAbsorbsItsRetransmissions() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        let key = try send(h, events)
        h.loop.run()
        try peerAnswers(h, 200)
        #expect(h.layer.clientState(key) == .completed)
        try peerAnswers(h, 200)  // a retransmission of the 200
        #expect(events.items.map(\.response.statusCode) == [200])
        // Timer K = T4 = 5 s on UDP; no more retransmissions of the request.
        h.advance(to: 4.999)
        #expect(h.layer.clientTransactionCount == 1)
        h.advance(to: 5)
        #expect(h.layer.clientTransactionCount == 0)
        #expect(h.gatewaySendTimes { $0.request != nil } == [0])
    }

    @Test func overTCPTheTransactionEndsWithTheFinalResponse() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        _ = try send(h, to: TransactionHarness.peerTCP, events)
        h.loop.run()
        try peerAnswers(h, 202, over: .tcp)
        // Timer K is zero on reliable transports.
        #expect(h.layer.clientTransactionCount == 0)
        #expect(events.items.map(\.response.statusCode) == [202])
    }

    @Test func aTransportErrorReachesTheTUAsA503() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        _ = try send(h, to: SIPTarget(.udp, host: "127.0.0.9", port: 5060), events)
        h.loop.run()
        // §8.1.3.1 / §17.1.4: treated as a 503.
        guard case .transportError(let response)? = events.items.first else {
            Issue.record("expected a transport error, got \(events.items)")
            return
        }
        #expect(response.statusCode == 503)
        #expect(h.layer.clientTransactionCount == 0)
        h.advance(to: 40)
        #expect(events.items.count == 1)
    }

    @Test func aFailedRetransmissionAlsoEndsTheTransactionWith503() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        _ = try send(h, events)
        h.network.dropNext(failingSend: true) { $0.message?.request?.method == .message }
        h.advance(to: 0.5)
        h.loop.run()
        #expect(events.items.map(\.response.statusCode) == [503])
    }

    @Test func lostRequestsAreRecoveredByRetransmission() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        h.network.dropNext(2) { $0.message?.request?.method == .message }
        _ = try send(h, events)
        h.advance(to: 1.5)
        #expect(h.peerRequests.count == 1)
        try peerAnswers(h, 200)
        #expect(events.items.map(\.response.statusCode) == [200])
    }

    @Test func anUnmatchedResponseIsDroppedAndCounted() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        _ = try send(h, events)
        h.loop.run()
        let request = try #require(h.peerRequests.first)
        var stray = SIPResponse(replyingTo: request, statusCode: 200, toTag: "x")
        stray.headers.set(.via, "SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bKnobody")
        h.peerSends(.response(stray))
        // Same branch, other CSeq method (§17.1.3: both must match).
        var otherMethod = SIPResponse(replyingTo: request, statusCode: 200, toTag: "x")
        otherMethod.headers.set(.cseq, "1 SUBSCRIBE")
        h.peerSends(.response(otherMethod))
        #expect(events.items.isEmpty)
        #expect(h.layer.counters.unmatchedResponses == 2)
    }

    @Test func aResponseWhoseSentByIsNotOursIsDiscarded() throws {
        let h = TransactionHarness()
        let events = Recorder<SIPClientTransactionEvent>()
        let key = try send(h, events)
        h.loop.run()
        let request = try #require(h.peerRequests.first)
        var response = SIPResponse(replyingTo: request, statusCode: 200, toTag: "x")
        response.headers.set(.via, "SIP/2.0/UDP 198.51.100.1:5060;branch=\(key.branch)")
        h.peerSends(.response(response))
        // §18.1.2.
        #expect(events.items.isEmpty)
        #expect(h.layer.counters.misroutedResponses == 1)
    }

    @Test func inviteAndACKCannotBeSentThroughTheNonInviteClient() {
        let h = TransactionHarness()
        #expect(throws: SIPStackError.self) {
            try h.layer.send(TransactionHarness.outgoing(.invite), to: TransactionHarness.peerUDP) { _ in }
        }
    }

    @Test func timersAreConfigurable() throws {
        let h = TransactionHarness(configuration: .init(timers: SIPTimerConfiguration(t1: .milliseconds(100), t2: .milliseconds(400))))
        let events = Recorder<SIPClientTransactionEvent>()
        _ = try send(h, events)
        h.advance(to: 7)
        // 64·T1 = 6.4 s; E: 0.1, 0.2, 0.4, 0.4 ...
        let times = h.gatewaySendTimes { $0.request != nil }
        #expect(Array(times.prefix(5)).map { ($0 * 10).rounded() / 10 } == [0, 0.1, 0.3, 0.7, 1.1])
        #expect(events.items.map(\.response.statusCode) == [408])
    }
}
