import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SIPMessages
import SIPTransport

/// `sip-bench capture [SECONDS]`: what HEP v3 capture costs (``HEPCapture``), in three figures.
///
/// 1. relay thread: one ``HEPCapture/capture(_:)`` call (time stamp, queue append under the
///    lock, at most one hand-off to the capture loop per batch), the only work capture adds to the
///    relay; the capture loop drains meanwhile to a local port nothing listens on.
/// 2. capture loop: Call-ID scan and HEP encoding of one message (``HEPPacket``).
/// 3. end to end: OPTIONS from one ``SIPNetworkTransport`` to another over loopback UDP, with
///    capture off and on (both transports copying), alternating rounds; messages per second.
///    With capture off the transports' only extra work is a nil check.
extension SIPBench {
    static func captureBench(_ arguments: [String]) async throws {
        let seconds = arguments.first.flatMap(Double.init) ?? 2.0
        let message = Array(typicalSubscribe.utf8)
        let peer = SIPTarget(.udp, host: "192.0.2.10", port: 50_926)
        let local = SIPTarget(.udp, host: "192.0.2.1", port: 5060)
        let group = MultiThreadedEventLoopGroup.singleton
        let captureLoop = group.next()
        let nobody = try await DatagramBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let deadPort = UInt16(nobody.localAddress?.port ?? 9)
        try await nobody.close()
        print("sip-bench capture: \(seconds) s per measurement; SUBSCRIBE \(message.count) bytes")

        let capture = try HEPCapture(
            configuration: .init(host: "127.0.0.1", port: deadPort, captureID: 1, queueCapacity: 100_000),
            eventLoop: captureLoop)
        try await capture.start()
        let copy = SIPCapturedMessage(bytes: message, transport: .udp, source: peer, destination: local)
        let enqueue = rate(seconds) {
            capture.capture(copy)
            return 1
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        let stats = capture.statistics
        await capture.shutdown()
        print(
            "relay thread, capture() per message:       \(String(format: "%7.0f", 1e9 / enqueue)) ns  (\(pad(enqueue)) msg/s; "
                + "capture loop sent \(stats.sent), dropped \(stats.droppedTotal) when the queue was full)")

        guard let source = HEPPacket.Address(bytes: [192, 0, 2, 10]),
            let destination = HEPPacket.Address(bytes: [192, 0, 2, 1])
        else {
            throw CaptureBenchError("IPv4 addresses must be 4 bytes")
        }
        let encode = rate(seconds) {
            let packet = HEPPacket(
                transport: .udp, source: source, sourcePort: 50_926, destination: destination, destinationPort: 5060,
                seconds: 1, microseconds: 2, captureID: 1, correlationID: HEPPacket.callID(in: message),
                payload: message)
            return packet.encoded()?.count ?? 0
        }
        print(
            "capture loop, Call-ID + HEP encode:        \(String(format: "%7.0f", 1e9 / encode)) ns  (\(pad(encode)) msg/s)"
        )

        var off: [Double] = []
        var on: [Double] = []
        for round in 0..<6 {
            let withCapture = round % 2 == 1
            let figure = try await transportRate(seconds: seconds, capture: withCapture ? deadPort : nil, group: group)
            if withCapture { on.append(figure) } else { off.append(figure) }
        }
        func median(_ xs: [Double]) -> Double { xs.sorted()[xs.count / 2] }
        print(
            "UDP transport to transport, capture off:   \(pad(median(off))) msg/s  (rounds: \(off.map { pad($0) }.joined(separator: ",")))"
        )
        print(
            "UDP transport to transport, capture on:    \(pad(median(on))) msg/s  (rounds: \(on.map { pad($0) }.joined(separator: ",")))"
        )
    }

    /// OPTIONS sent from one transport to another in windows of 256 outstanding, for `seconds`.
    static func transportRate(seconds: Double, capture port: UInt16?, group: MultiThreadedEventLoopGroup) async throws
        -> Double
    {
        let loops = Array(group.makeIterator())
        func sink() throws -> HEPCapture? {
            guard let port else { return nil }
            return try HEPCapture(
                configuration: .init(host: "127.0.0.1", port: port, captureID: 1, queueCapacity: 100_000),
                eventLoop: loops.last ?? group.next())
        }
        let captureA = try sink()
        let captureB = try sink()
        try await captureA?.start()
        try await captureB?.start()
        let relayLoop = loops.first ?? group.next()
        let a = try SIPNetworkTransport(
            configuration: .init(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]),
            eventLoop: relayLoop, capture: captureA)
        let b = try SIPNetworkTransport(
            configuration: .init(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]),
            eventLoop: relayLoop, capture: captureB)
        let received = NIOLockedValueBox(0)
        b.setMessageHandler { _ in received.withLockedValue { $0 += 1 } }
        let aBound = try await a.start()[0]
        let bBound = try await b.start()[0]
        let text =
            "OPTIONS sip:bench@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP \(aBound.hostPort);branch=z9hG4bKbench\r\n"
            + "Max-Forwards: 70\r\nFrom: <sip:a@bench>;tag=1\r\nTo: <sip:b@bench>\r\nCall-ID: bench-capture\r\nCSeq: 1 OPTIONS\r\n"
            + "Content-Length: 0\r\n\r\n"
        let options = try SIPMessage(parsing: Array(text.utf8))
        var sent = 0
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start + .milliseconds(Int(seconds * 1000))
        while clock.now < deadline {
            // Keep at most 256 in flight, so a full socket buffer never drops (and skews) the count.
            while sent - received.withLockedValue({ $0 }) > 256 { await Task.yield() }
            let batch = (0..<64).map { _ in a.send(options, to: bBound, connection: nil) }
            for future in batch { try await future.get() }
            sent += 64
        }
        var waited = 0
        while received.withLockedValue({ $0 }) < sent, waited < 200 {
            try await Task.sleep(nanoseconds: 5_000_000)
            waited += 1
        }
        let elapsed = start.duration(to: clock.now)
        let got = received.withLockedValue { $0 }
        await a.shutdown()
        await b.shutdown()
        await captureA?.shutdown()
        await captureB?.shutdown()
        return Double(got) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}

struct CaptureBenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
