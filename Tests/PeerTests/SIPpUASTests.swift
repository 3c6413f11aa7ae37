import PeerTestSupport
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// The stack as UAC against a sipp UAS on loopback: requests sent through the
/// transaction layer get sipp's 200 OK over UDP and TCP, and over UDP the stack's retransmission
/// (RFC 3261 §17.1.2.2, Timer E) gets a request through a UAS that dropped its first copy.
@Suite("the stack as UAC against sipp", .serialized)
struct SIPpUASTests {
    /// A non-INVITE request as a UAC core builds it (RFC 3261 §8.1.1); the transaction layer adds
    /// Via and Max-Forwards.
    static func request(_ method: SIPMethod, to target: SIPTarget, callID: String) throws -> SIPRequest {
        var headers = SIPHeaders()
        headers.append(.from, "<sip:gateway@presence.test>;tag=peer\(callID.prefix(8))")
        headers.append(.to, "<sip:sipp@127.0.0.1:\(target.port)>")
        headers.append(.callID, callID)
        headers.append(.cseq, "1 \(method.rawValue)")
        var body: [UInt8] = []
        if method == .message {
            headers.append(.contentType, "text/plain")
            body = Array("Hello from the gateway over \(target.kind.rawValue)".utf8)
        }
        return SIPRequest(method: method, uri: try SIPURI("sip:sipp@127.0.0.1:\(target.port)"), headers: headers, body: body)
    }

    static func callID() -> String { "\(UInt64.random(in: 1...UInt64.max))@presence.test" }

    /// Starts sipp as a UAS on `scenario` (returns once it listens) and the stack, runs `send`
    /// against sipp's port, then lets sipp finish, or stops it when `send` threw. Returns what
    /// `send` returned (nil when it threw), sipp's run, and the (shut down) stack. The bounds are
    /// wide: under a loaded CI run sipp once took 16 s after binding its port to read the first
    /// request, and the stack's retransmissions (Timer E, within Timer F's 32 s) get through then.
    static func againstSippUAS<T>(_ scenario: String, tcp: Bool = false, calls: Int,
                                  _ send: (PeerStack, UInt16) async throws -> T) async throws -> (T?, Sipp.Run, PeerStack) {
        let sipp = try await Sipp.start(scenario: PeerScenarios.path(scenario), remote: nil, tcp: tcp, calls: calls, timeLimit: 45)
        let stack: PeerStack
        do {
            stack = try await PeerStack.start()
        } catch {
            _ = sipp.stop()
            throw error
        }
        let result = try? await send(stack, sipp.port)
        let run = result == nil ? sipp.stop() : await sipp.finish()
        await stack.shutdown()
        return (result, run, stack)
    }

    @Test(arguments: [SIPTransportKind.udp, .tcp])
    func optionsAndMessageSentByTheStackGet200FromSippUAS(_ kind: SIPTransportKind) async throws {
        let callIDs = [SIPMethod.options: Self.callID(), .message: Self.callID()]
        let (sent, run, _) = try await Self.againstSippUAS("uas-200.xml", tcp: kind == .tcp, calls: 2) { stack, port in
            let target = SIPTarget(kind, host: "127.0.0.1", port: port)
            var events: [SIPMethod: SIPClientTransactionEvent] = [:]
            for method in [SIPMethod.options, .message] {
                let request = try Self.request(method, to: target, callID: callIDs[method] ?? Self.callID())
                events[method] = try await stack.sendRequest(request, to: target, seconds: 35).0
            }
            return events
        }
        let events = sent ?? [:]

        #expect(run.succeeded, "\(run)")
        for method in [SIPMethod.options, .message] {
            guard case .response(let response)? = events[method] else {
                Issue.record("\(method.rawValue): no response from sipp, got \(String(describing: events[method]))\n\(run)")
                continue
            }
            #expect(response.statusCode == 200)
            #expect(try response.headers.callID == callIDs[method])
            #expect(try response.headers.cseq == SIPCSeq(1, method))
            #expect(try response.headers.to?.tag?.isEmpty == false)
        }
        #expect(run.received.count { $0.startLine.hasPrefix("OPTIONS sip:sipp@127.0.0.1") } >= 1)
        #expect(run.received.count { $0.startLine.hasPrefix("MESSAGE sip:sipp@127.0.0.1") } >= 1)
    }

    /// uas-lossy.xml leaves the first copy unanswered for 2 s; with T1 = 500 ms the stack sends
    /// copies at 0, 0.5 and 1.5 s (Timer E doubling, RFC 3261 §17.1.2.2), and the one answered
    /// completes the transaction with 200 well before Timer F (32 s).
    @Test
    func messageOverUDPGetsThroughASippUASThatDropsTheFirstCopyByTimerERetransmission() async throws {
        let (outcome, run, stack) = try await Self.againstSippUAS("uas-lossy.xml", calls: 1) { stack, port in
            let target = SIPTarget(.udp, host: "127.0.0.1", port: port)
            return try await stack.sendRequest(Self.request(.message, to: target, callID: Self.callID()), to: target, seconds: 35)
        }

        #expect(run.succeeded, "\(run)")
        guard let (event, key) = outcome, case .response(let response) = event else {
            Issue.record("no response from sipp: \(String(describing: outcome?.0))\n\(run)")
            return
        }
        #expect(response.statusCode == 200)
        let copies = stack.transport.requests(branch: key.branch)
        #expect(copies.count >= 2, "the stack sent \(copies.count) copies; Timer E should have retransmitted")
        #expect(Set(copies).count == 1, "a retransmission is the same request (RFC 3261 §17.1.2.2)")
        #expect(run.received.count { $0.startLine.hasPrefix("MESSAGE sip:sipp@127.0.0.1") } >= 2, "sipp saw the first copy and at least one retransmission")
        #expect(run.sent.count { $0.startLine.hasPrefix("SIP/2.0 200 ") } >= 1)
    }

    /// RFC 3261 §18.1.1: a request larger than 1300 bytes to a UDP target, path MTU unknown, "MUST
    /// be sent using an RFC 2914 congestion controlled transport protocol, such as TCP", and the
    /// top Via then says TCP. sipp listens on TCP only: the MESSAGE addressed to UDP on its port
    /// reaches it over TCP and is answered there.
    @Test
    func messageLargerThan1300BytesToAUDPTargetReachesSippOverTCPWithATCPVia() async throws {
        let (outcome, run, _) = try await Self.againstSippUAS("uas-200.xml", tcp: true, calls: 1) { stack, port in
            let target = SIPTarget(.udp, host: "127.0.0.1", port: port)
            var request = try Self.request(.message, to: target, callID: Self.callID())
            request.body = Array(repeating: UInt8(ascii: "x"), count: 1400)
            return try await stack.sendRequest(request, to: target, seconds: 35)
        }

        #expect(run.succeeded, "\(run)")
        guard let (event, _) = outcome, case .response(let response) = event else {
            Issue.record("no response from sipp: \(String(describing: outcome?.0))\n\(run)")
            return
        }
        #expect(response.statusCode == 200)
        let received = try #require(run.received.first { $0.startLine.hasPrefix("MESSAGE ") })
        #expect(received.text.contains("Via: SIP/2.0/TCP "), "\(received.text.prefix(400))")
    }
}
