import Foundation
import MetricsTestKit
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOPosix
import SIPMessages
import SIPTransport
import Testing

/// HEP v3 capture: the sender's bounded queue and its packets on a real socket, and the
/// transport's copies of what it sends and receives (UDP and TCP), with their real addresses.
@Suite(.serialized) struct HEPCaptureTests {
    /// A HEP v3 packet's generic chunks by type (the test's own reading of the specification).
    static func chunks(_ bytes: [UInt8]) -> [UInt16: [UInt8]]? {
        guard bytes.count >= 6, Array(bytes[0..<4]) == Array("HEP3".utf8) else { return nil }
        let total = Int(bytes[4]) << 8 | Int(bytes[5])
        guard total == bytes.count else { return nil }
        var out: [UInt16: [UInt8]] = [:]
        var i = 6
        while i + 6 <= total {
            let vendor = UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1])
            let type = UInt16(bytes[i + 2]) << 8 | UInt16(bytes[i + 3])
            let length = Int(bytes[i + 4]) << 8 | Int(bytes[i + 5])
            guard length >= 6, i + length <= total, vendor == 0 else { return nil }
            out[type] = Array(bytes[(i + 6)..<(i + length)])
            i += length
        }
        return i == total ? out : nil
    }

    static func message(_ callID: String, from source: SIPTarget, to destination: SIPTarget) -> SIPCapturedMessage {
        let text = "OPTIONS sip:bob@gateway.test SIP/2.0\r\nCall-ID: \(callID)\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
        return SIPCapturedMessage(bytes: Array(text.utf8), transport: source.kind, source: source, destination: destination)
    }

    @Test func packetsReachTheCollectorWithAddressesTransportAgentAndCallID() async throws {
        let collector = try await RawUDPPeer()
        let metrics = TestMetrics()
        let capture = try HEPCapture(configuration: .init(host: "127.0.0.1", port: collector.port, captureID: 77),
                                     eventLoop: MultiThreadedEventLoopGroup.singleton.next(), metricsFactory: metrics)
        try await capture.start()
        let peer = SIPTarget(.udp, host: "127.0.0.2", port: 5070)
        let local = SIPTarget(.udp, host: "127.0.0.1", port: 5060)
        capture.capture(Self.message("one@x", from: peer, to: local))
        capture.capture(Self.message("two@x", from: SIPTarget(.tls, host: "::1", port: 5061), to: SIPTarget(.tls, host: "::1", port: 40_000)))
        let first = try #require(Self.chunks(try await collector.next("the first packet")))
        #expect(first[0x0001] == [2] && first[0x0002] == [17])
        #expect(first[0x0003] == [127, 0, 0, 2] && first[0x0004] == [127, 0, 0, 1])
        #expect(first[0x0007] == [0x13, 0xce] && first[0x0008] == [0x13, 0xc4])
        #expect(first[0x000b] == [1] && first[0x000c] == [0, 0, 0, 77])
        #expect(first[0x0011] == Array("one@x".utf8))
        #expect(first[0x000f] == Self.message("one@x", from: peer, to: local).bytes)
        let seconds = (first[0x0009] ?? []).reduce(0) { $0 << 8 | Int($1) }
        #expect(abs(seconds - Int(Date().timeIntervalSince1970)) < 60)
        let second = try #require(Self.chunks(try await collector.next("the second packet")))
        #expect(second[0x0001] == [10] && second[0x0002] == [6])
        #expect(second[0x0005] == [UInt8](repeating: 0, count: 15) + [1])
        #expect(second[0x0011] == Array("two@x".utf8))
        let sent = try await waitFor("both counted") { capture.statistics.sent == 2 ? true : nil }
        #expect(sent)
        #expect(try metrics.expectCounter("gateway_capture_sent_total").totalValue == 2)
        #expect(try metrics.expectCounter("gateway_capture_dropped_total", [("reason", "queue-full")]).totalValue == 0)
        await capture.shutdown()
        await collector.close()
    }

    @Test func aFullQueueDropsAndCountsInsteadOfWaiting() throws {
        // An embedded loop runs the drain only when told: the queue fills deterministically.
        let loop = EmbeddedEventLoop()
        let metrics = TestMetrics()
        let capture = try HEPCapture(configuration: .init(host: "127.0.0.1", port: 9, captureID: 1, queueCapacity: 3),
                                     eventLoop: loop, metricsFactory: metrics)
        let a = SIPTarget(.udp, host: "127.0.0.1", port: 1)
        for n in 0..<10 { capture.capture(Self.message("q\(n)", from: a, to: a)) }
        #expect(capture.statistics.dropped[.queueFull] == 7)
        #expect(try metrics.expectCounter("gateway_capture_dropped_total", [("reason", "queue-full")]).totalValue == 7)
        // Never started: the drain finds no socket and counts the three queued as not sent.
        loop.run()
        #expect(capture.statistics.dropped[.sendFailed] == 3)
        #expect(capture.statistics.sent == 0)
        // The queue took new messages again once drained.
        capture.capture(Self.message("again", from: a, to: a))
        loop.run()
        #expect(capture.statistics.dropped[.sendFailed] == 4)
        #expect(capture.statistics.dropped[.queueFull] == 7)
    }

    @Test func aCollectorHostThatIsNoIPLiteralIsRefused() {
        #expect(throws: SIPTransportError.self) {
            try HEPCapture(configuration: .init(host: "homer.example", port: 9060, captureID: 1), eventLoop: EmbeddedEventLoop())
        }
    }

    /// Records what a transport copies.
    final class Recorder: SIPMessageCapture, Sendable {
        let box = NIOLockedValueBox<[SIPCapturedMessage]>([])
        func capture(_ message: SIPCapturedMessage) { box.withLockedValue { $0.append(message) } }
        var all: [SIPCapturedMessage] { box.withLockedValue { $0 } }
    }

    @Test(arguments: [SIPTransportKind.udp, .tcp])
    func theTransportCopiesEverySendAndReceiveWithItsRealAddresses(_ kind: SIPTransportKind) async throws {
        let aRecorder = Recorder(), bRecorder = Recorder()
        let a = try SIPNetworkTransport(configuration: .init(listeners: [.init(kind, host: "127.0.0.1", port: 0)]), capture: aRecorder)
        let b = try SIPNetworkTransport(configuration: .init(listeners: [.init(kind, host: "127.0.0.1", port: 0)]), capture: bRecorder)
        let inbox = Inbox()
        inbox.attach(to: b)
        let aBound = try await a.start()[0]
        let bBound = try await b.start()[0]
        let request = try TestMessages.request("SUBSCRIBE", via: aBound, branch: "cap\(kind)", callID: "capture-\(kind)@test")
        try await a.send(.request(request), to: bBound, connection: nil).get()
        let received = try await inbox.next()
        let sent = try #require(aRecorder.all.first)
        let got = try #require(bRecorder.all.first)
        #expect(sent.transport == kind && got.transport == kind)
        #expect(sent.bytes == request.serialized())
        // Received: the bytes as they arrived, before the transport stamped the Via.
        #expect(got.bytes == sent.bytes)
        #expect(sent.destination.port == bBound.port && got.destination.port == bBound.port)
        #expect(got.source == received.source)
        #expect(sent.source.port == got.source.port)
        #expect(sent.source.host == "127.0.0.1" && got.destination.host == "127.0.0.1")
        if kind == .udp { #expect(sent.source.port == aBound.port) }
        await a.shutdown()
        await b.shutdown()
    }
}
