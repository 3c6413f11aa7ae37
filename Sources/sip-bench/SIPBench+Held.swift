import BenchSupport
import Foundation
import NIOCore
import NIOPosix
import SIPMessages
import SIPStack
import SIPTransport

/// `sip-bench held [N]`: the memory one answered request costs while its server transaction
/// holds it. Over UDP a non-INVITE server transaction stays in Completed for Timer J = 64·T1 =
/// 32 s after its final response (RFC 3261 §17.2.2), so a side that relays R requests a second
/// holds 32·R of them (docs/performance.md, "Transactions").
///
/// N NOTIFYs (default 100,000), each as an OMA presence server sends one in an existing dialog
/// (its own branch, Call-ID and CSeq), go into one transaction layer over a transport that
/// discards what is sent, and are answered 200 as the gateway answers a NOTIFY; then the live
/// heap (and resident memory, after trimming) is read again and divided by N. Nothing is
/// timed: the figure is bytes, repeatable on one machine and allocator.
extension SIPBench {
    static func held(_ arguments: [String]) async throws {
        let count = arguments.first.flatMap(Int.init) ?? 100_000
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let transport = DiscardingTransport(eventLoop: loop)
        let template = Array(heldNotify.utf8)
        let layer = try await loop.submit {
            let layer = SIPTransactionLayer(
                transport: transport,
                configuration: .init(limits: .init(maxServerTransactions: count + 1)))
            layer.setRequestHandler(for: [.notify]) { incoming in
                try? layer.respond(SIPResponse(replyingTo: incoming.request, statusCode: 200), to: incoming.transaction)
            }
            layer.start()
            return layer
        }.get()
        ProcessMemory.trimHeap()
        let (heapBefore, residentBefore) = (ProcessMemory.heapInUse(), ProcessMemory.residentBytes())
        try await loop.submit {
            for index in 0..<count {
                var bytes = template
                bytes.replace(Array("IDX".utf8), with: Array(String(index + 1).utf8))
                guard let message = try? SIPMessage(parsing: bytes) else { fatalError("the NOTIFY does not parse") }
                layer.receive(
                    SIPReceivedMessage(
                        message: message, source: SIPTarget(.udp, host: "127.0.0.1", port: 5070),
                        local: transport.local))
            }
        }.get()
        ProcessMemory.trimHeap()
        let (heapAfter, residentAfter) = (ProcessMemory.heapInUse(), ProcessMemory.residentBytes())
        let held = try await loop.submit { layer.serverTransactionCount }.get()
        guard held == count else { fail("\(held) transactions held of \(count)") }
        print("allocator: \(ProcessMemory.allocator); \(count) answered NOTIFYs held (Completed, Timer J)")
        if heapBefore > 0 {
            print("live heap per held transaction: \((heapAfter - heapBefore) / count) bytes")
        }
        print("resident memory per held transaction: \((residentAfter - residentBefore) / count) bytes")
        print("bytes sent per 200: \(transport.sentBytes / count)")
    }

    /// A NOTIFY in an existing dialog as Kamailio's presence module sends it (RFC 3856 §6.7,
    /// RFC 6665 §8.2.1), with a small PIDF body (RFC 3863); `IDX` makes its branch, Call-ID and
    /// CSeq its own.
    static let heldNotify = """
        NOTIFY sip:watcher@127.0.0.1:5060;transport=udp SIP/2.0\r
        Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bK-bench-IDX\r
        To: <sip:watcher@enterprise.example>;tag=gw-watcher-IDX\r
        From: <sip:carol@oma.example>;tag=a6a1c5f60faecf035a1ae5b6e96e979a-IDX\r
        CSeq: IDX NOTIFY\r
        Call-ID: gw-IDX@gateway\r
        Max-Forwards: 70\r
        Content-Length: 205\r
        User-Agent: kamailio (5.6.3 (x86_64/linux))\r
        Event: presence\r
        Contact: <sip:127.0.0.1:5070;transport=udp>\r
        Subscription-State: active;expires=3600\r
        Content-Type: application/pidf+xml\r
        \r
        <?xml version="1.0" encoding="UTF-8"?>
        <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="sip:carol@oma.example">
        <tuple id="t1"><status><basic>open</basic></status><note>Away</note></tuple>
        </presence>
        """
}

/// A transport that sends nothing and counts what it was given, for `sip-bench held`.
private final class DiscardingTransport: SIPTransport, @unchecked Sendable {
    // @unchecked: used on `eventLoop` only, as the transaction layer is.
    let eventLoop: any EventLoop
    let local = SIPTarget(.udp, host: "127.0.0.1", port: 5060)
    private(set) var sentBytes = 0

    init(eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func send(_ message: SIPMessage, to target: SIPTarget, connection: SIPConnectionID?) -> EventLoopFuture<Void> {
        sentBytes += message.serialized().count
        return eventLoop.makeSucceededVoidFuture()
    }

    func setMessageHandler(_ handler: @escaping @Sendable (SIPReceivedMessage) -> Void) {}

    func advertisedAddress(for kind: SIPTransportKind) -> SIPTarget? { kind == .udp ? local : nil }
}
