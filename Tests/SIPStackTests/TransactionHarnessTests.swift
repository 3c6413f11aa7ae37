import Foundation
import NIOCore
import NIOEmbedded
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// Collects callbacks (the loop and the test share one thread).
final class Recorder<T>: @unchecked Sendable {
    var items: [T] = []
}

/// Parses a message written with `\n` line ends (converted to CRLF).
func sipMessage(_ text: String) -> SIPMessage {
    let wire = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n")
    do {
        return try SIPMessage(parsing: Array(wire.utf8))
    } catch {
        Issue.record("test message does not parse: \(error)")
        return .response(SIPResponse(statusCode: 500, reasonPhrase: "unparseable test message"))
    }
}

/// A request from the peer (127.0.0.2:5070) to the gateway, with the fields the matching rules
/// read as parameters.
func peerRequest(_ method: String = "MESSAGE", branch: String = "z9hG4bKpeer1", transport: String = "UDP",
                 sentBy: String = "127.0.0.2:5070", callID: String = "call-1@127.0.0.2", cseq: Int = 1,
                 cseqMethod: String? = nil, fromTag: String = "peer-tag", toTag: String? = nil,
                 uri: String = "sip:gw@127.0.0.1", extra: String = "") -> SIPMessage {
    let to = toTag.map { "<sip:gw@example.com>;tag=\($0)" } ?? "<sip:gw@example.com>"
    return sipMessage("""
        \(method) \(uri) SIP/2.0
        Via: SIP/2.0/\(transport) \(sentBy);branch=\(branch)
        Max-Forwards: 70
        From: <sip:alice@example.org>;tag=\(fromTag)
        To: \(to)
        Call-ID: \(callID)
        CSeq: \(cseq) \(cseqMethod ?? method)
        \(extra.isEmpty ? "" : extra + "\n")Content-Length: 0


        """)
}

/// The layer under test on a gateway endpoint, and a scripted peer, on one loopback network
/// driven by an `EmbeddedEventLoop` (whose `advanceTime` is the only clock).
final class TransactionHarness {
    static let gatewayUDP = SIPTarget(.udp, host: "127.0.0.1", port: 5060)
    static let gatewayTCP = SIPTarget(.tcp, host: "127.0.0.1", port: 5060)
    static let peerUDP = SIPTarget(.udp, host: "127.0.0.2", port: 5070)
    static let peerTCP = SIPTarget(.tcp, host: "127.0.0.2", port: 5070)

    let loop = EmbeddedEventLoop()
    let network: SIPLoopbackNetwork
    let gateway: SIPLoopbackNetwork.Endpoint
    let peer: SIPLoopbackNetwork.Endpoint
    let layer: SIPTransactionLayer
    let peerInbox = Recorder<SIPReceivedMessage>()
    let tu = Recorder<SIPTransactionLayer.IncomingRequest>()
    let start: NIODeadline

    init(configuration: SIPTransactionLayer.Configuration = .init(),
         methods: [SIPMethod] = [.message, .subscribe, .notify]) {
        network = SIPLoopbackNetwork(eventLoop: loop)
        gateway = network.endpoint(Self.gatewayUDP, Self.gatewayTCP)
        peer = network.endpoint(Self.peerUDP, Self.peerTCP)
        layer = SIPTransactionLayer(transport: gateway, configuration: configuration)
        layer.start()
        layer.setRequestHandler(for: methods) { [tu] in tu.items.append($0) }
        peer.setMessageHandler { [peerInbox] in peerInbox.items.append($0) }
        start = loop.now
    }

    /// The peer sends `message` to the gateway over `kind`; the loop delivers it.
    func peerSends(_ message: SIPMessage, over kind: SIPTransportKind = .udp) {
        _ = peer.send(message, to: kind == .udp ? Self.gatewayUDP : Self.gatewayTCP, connection: nil)
        loop.run()
    }

    /// Moves the clock to `seconds` after the harness was made.
    func advance(to seconds: Double) {
        loop.advanceTime(to: start + .nanoseconds(Int64(seconds * 1e9)))
    }

    /// Responses the peer received.
    var peerResponses: [SIPResponse] { peerInbox.items.compactMap { $0.message.response } }
    /// Requests the peer received.
    var peerRequests: [SIPRequest] { peerInbox.items.compactMap { $0.message.request } }

    /// When (seconds since start) the gateway put messages matching `match` on the wire.
    func gatewaySendTimes(_ match: (SIPMessage) -> Bool) -> [Double] {
        network.log.filter { ($0.from == Self.gatewayUDP || $0.from == Self.gatewayTCP) && ($0.message.map(match) ?? false) }
            .map { Double($0.time.uptimeNanoseconds - start.uptimeNanoseconds) / 1e9 }
    }

    /// A request from the gateway's TU to the peer.
    static func outgoing(_ method: SIPMethod = .message, callID: String = "gw-call-1") -> SIPRequest {
        var headers = SIPHeaders()
        headers.append(.from, "<sip:gw@example.com>;tag=gw-tag")
        headers.append(.to, "<sip:alice@example.org>")
        headers.append(.callID, callID)
        headers.append(.cseq, "1 \(method.rawValue)")
        return SIPRequest(method: method, uri: SIPURI(scheme: .sip, host: "127.0.0.2", port: 5070), headers: headers)
    }
}

@Suite struct TransactionHarnessTests {
    @Test func peerRequestsParseAndReachTheTUOnce() {
        let h = TransactionHarness()
        h.peerSends(peerRequest())
        #expect(h.tu.items.count == 1)
        #expect(h.tu.items.first?.request.method == .message)
    }
}
