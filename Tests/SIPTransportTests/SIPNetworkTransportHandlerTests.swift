import NIOConcurrencyHelpers
import NIOCore
import SIPMessages
@testable import SIPTransport
import Testing

/// The message handler survives any number of deliveries.
@Suite struct SIPNetworkTransportHandlerTests {
    /// Regression: the handler was kept as a bare closure in a generic lock box, and reading it
    /// with an `inout` access wrapped it in one more reabstraction thunk per received message;
    /// after about 12,000 messages the event loop thread overflowed its stack (found with
    /// `sip-bench serve` under sipp load, scripts/bench-udp.py). 30,000 datagrams are handed to
    /// the transport's receive path directly (as its datagram handler does) and all must arrive.
    @Test
    func thirtyThousandReceivedDatagramsAreAllDeliveredToTheHandler() async throws {
        let harness = try await Harness.start(.init(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
        let transport = harness.transport
        let count = NIOLockedValueBox(0)
        transport.setMessageHandler { _ in count.withLockedValue { $0 += 1 } }
        guard let local = harness.bound.first else {
            Issue.record("no UDP listener bound")
            return
        }
        let source = SIPTarget(.udp, host: "127.0.0.1", port: 5099)
        let datagram = Array(TestMessages.raw(viaHost: "127.0.0.1", viaPort: 5099, branch: "load", callID: "load@test").utf8)
        let total = 30_000
        // In chunks, so that the shared event loop also serves the tests running beside this one.
        for _ in 0..<(total / 1000) {
            try await transport.eventLoop.submit {
                for _ in 0..<1000 {
                    transport.receive(datagram, kind: .udp, source: source, local: local, connection: nil, peerCertificateNames: [])
                }
            }.get()
        }
        await transport.shutdown()
        #expect(count.withLockedValue { $0 } == total)
    }
}
