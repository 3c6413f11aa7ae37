import PeerTestSupport
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// sipp as UAC on loopback sends OPTIONS, SUBSCRIBE, NOTIFY and MESSAGE over UDP and TCP to the
/// stack, which answers each with 200 OK through its transaction layer.
///
/// Serialized: each case has its own stack and ports, but sipp and the stack share two cores, and
/// one run at a time keeps every run far from its time bounds.
@Suite("sipp as UAC against the stack", .serialized)
struct SIPpUACTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var method: SIPMethod
        var scenario: String
        /// sipp's `-t`: `u1` (one UDP socket) or `t1` (one TCP connection).
        var sippTransport: String
        var kind: SIPTransportKind { sippTransport == "t1" ? .tcp : .udp }
        var testDescription: String { "\(method.rawValue) over \(kind.rawValue)" }
    }

    static let cases: [Case] = ["u1", "t1"].flatMap { transport in
        [
            Case(method: .options, scenario: "uac-options.xml", sippTransport: transport),
            Case(method: .subscribe, scenario: "uac-subscribe.xml", sippTransport: transport),
            Case(method: .notify, scenario: "uac-notify.xml", sippTransport: transport),
            Case(method: .message, scenario: "uac-message.xml", sippTransport: transport),
        ]
    }

    /// Calls per case: sipp's `-m`, launched at 100 calls/s.
    static let calls = 20

    /// RFC 3261 §8.2.6.2: the response copies From, Call-ID and CSeq and the Via (whose branch
    /// names the transaction, §17.2.3), and the UAS adds a To tag; RFC 6665 §4.2.1.1: a 200 to
    /// SUBSCRIBE carries Expires, no longer than requested. The scenarios make sipp check the To
    /// tag and CSeq itself, so sipp's exit status says every call got its 200.
    @Test(arguments: cases)
    func everyRequestFromSippIsAnsweredOnceWith200CopyingItsIdentifiersAndAddingAToTag(_ c: Case) async throws {
        let stack = try await PeerStack.start()
        let target = c.kind == .tcp ? stack.tcp : stack.udp
        let run = try await withCleanup {
            try await Sipp.run(scenario: PeerScenarios.path(c.scenario), remote: "127.0.0.1:\(target.port)",
                               tcp: c.kind == .tcp, calls: Self.calls, timeLimit: 18, extra: ["-r", "100"])
        } cleanup: {
            await stack.shutdown()
        }

        #expect(run.succeeded, "\(run)")
        #expect(run.received.count { $0.startLine.hasPrefix("SIP/2.0 200 ") } >= Self.calls, "\(run)")
        let exchanges = stack.exchanges
        #expect(exchanges.count == Self.calls)
        #expect(exchanges.allSatisfy { $0.request.method == c.method })
        #expect(Set(exchanges.compactMap { try? $0.request.headers.callID }).count == Self.calls)
        for exchange in exchanges {
            let request = exchange.request
            let response = exchange.response
            #expect(exchange.source.kind == c.kind)
            #expect(response.statusCode == 200)
            #expect(try response.headers.callID == request.headers.callID)
            #expect(try response.headers.cseq == request.headers.cseq)
            #expect(try response.headers.cseq?.method == c.method)
            #expect(try response.headers.from?.tag == request.headers.from?.tag)
            #expect(try response.headers.via.first?.branch == request.headers.via.first?.branch)
            #expect(try request.headers.to?.tag == nil)
            let toTag = try response.headers.to?.tag
            #expect(toTag != nil && toTag?.isEmpty == false)
            if c.method == .subscribe {
                // uac-subscribe.xml asks for 600 s; the TU grants it unchanged (≤ 3,600).
                #expect(try response.headers.expires == 600)
                #expect(response.headers.contains(.contact))
            }
        }
    }
}
