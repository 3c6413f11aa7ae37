import NIOCore
import SIPMessages
import SIPStack
import Testing

/// The transaction state machines as values: inputs in, actions out, no loop, no clock.
@Suite struct TransactionStateMachineTests {
    static let request: SIPRequest = peerRequest().request ?? SIPRequest(method: .message, uri: SIPURI(host: "x"))

    @Test func clientStartsWithSendEAndFOnUDPButOnlyFOnTCP() {
        var udp = NonInviteClientTransaction(request: Self.request, reliable: false)
        #expect(udp.start() == [.send(.request(Self.request)), .startTimer(.e, .milliseconds(500)), .startTimer(.f, .seconds(32))])
        var tcp = NonInviteClientTransaction(request: Self.request, reliable: true)
        #expect(tcp.start() == [.send(.request(Self.request)), .startTimer(.f, .seconds(32))])
    }

    @Test func clientTimerEDoublesUpToT2() {
        var m = NonInviteClientTransaction(request: Self.request, reliable: false)
        _ = m.start()
        var intervals: [TimeAmount] = []
        for _ in 0..<5 {
            for case .startTimer(.e, let d) in m.timerFired(.e) { intervals.append(d) }
        }
        #expect(intervals == [.seconds(1), .seconds(2), .seconds(4), .seconds(4), .seconds(4)])
    }

    @Test func clientIgnoresResponsesOnceCompleted() {
        var m = NonInviteClientTransaction(request: Self.request, reliable: false)
        _ = m.start()
        let ok = SIPResponse(replyingTo: Self.request, statusCode: 200, toTag: "x")
        #expect(m.receive(ok).contains(.deliverResponse(ok)))
        #expect(m.state == .completed)
        #expect(m.receive(ok).isEmpty)
        #expect(m.timerFired(.e).isEmpty)
        #expect(m.timerFired(.f).isEmpty)
        #expect(m.timerFired(.k) == [.terminate(.completed)])
    }

    @Test func serverDiscardsFinalResponsesAfterTheFirst() {
        var m = NonInviteServerTransaction(reliable: false)
        let ok = SIPResponse(replyingTo: Self.request, statusCode: 200, toTag: "x")
        #expect(m.send(ok) == [.send(.response(ok)), .startTimer(.j, .seconds(32))])
        #expect(m.send(SIPResponse(replyingTo: Self.request, statusCode: 500, toTag: "x")).isEmpty)
        // §17.2.2: the final response is passed to the transport again: the same bytes on the
        // wire (it is held as those bytes, not as the response value built by the TU).
        let resent = m.receiveRetransmission()
        guard resent.count == 1, case .send(let message) = resent[0] else {
            Issue.record("expected one send, got \(resent)")
            return
        }
        #expect(message.serialized() == SIPMessage.response(ok).serialized())
    }

    @Test func inviteServerRetransmitsItsFinalResponseOnGAndStopsOnACK() {
        var m = InviteServerTransaction(request: Self.request, reliable: false)
        let nope = SIPResponse(replyingTo: Self.request, statusCode: 405, toTag: "x")
        #expect(m.send(nope) == [.send(.response(nope)), .startTimer(.g, .milliseconds(500)), .startTimer(.h, .seconds(32))])
        #expect(m.timerFired(.g) == [.send(.response(nope)), .startTimer(.g, .seconds(1))])
        #expect(m.receiveACK() == [.cancelTimer(.g), .cancelTimer(.h), .startTimer(.i, .seconds(5))])
        #expect(m.state == .confirmed)
        #expect(m.receiveACK().isEmpty)
        #expect(m.timerFired(.g).isEmpty)
        #expect(m.timerFired(.i) == [.terminate(.completed)])
    }

    @Test func inviteServerTimerHReportsAFailure() {
        var m = InviteServerTransaction(request: Self.request, reliable: true)
        let nope = SIPResponse(replyingTo: Self.request, statusCode: 405, toTag: "x")
        #expect(m.send(nope) == [.send(.response(nope)), .startTimer(.h, .seconds(32))])
        #expect(m.timerFired(.h) == [.cancelTimer(.g), .terminate(.timeout)])
    }
}
