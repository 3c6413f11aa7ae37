import Foundation
import PeerTestSupport
import PresenceDocuments
import SIPMessages
import Testing

/// An enterprise watcher on a UDP socket of the test (an Office Communicator-like client behind
/// the edge): one batched category SUBSCRIBE ([MS-PRES] §4.5 headers and batchSub body,
/// §3.4.5.1.1) for its resources through the gateway's enterprise listener, then every state the
/// gateway sends for it, read as they come: from the 200 (a piggybacked first notification,
/// §3.4.5.1.3), BENOTIFYs (§3.4.5.1.4, no response) and NOTIFYs (answered 200, RFC 6665 §4.1.3).
/// Unlike a sipp scenario it can be asked, step by step, what the watcher sees now.
final class EnterpriseWatcher: @unchecked Sendable {
    let socket: RawSIPSocket
    let watcher: String
    let resources: [String]
    /// The first resource, the one ``sees(_:after:within:)`` and ``availabilities`` speak of.
    var resource: String { resources[0] }
    /// The aggregate states ([MS-PRES] §2.2.2.9) received for each resource, in order.
    private(set) var received: [String: [(availability: UInt32, token: String?)]] = [:]
    /// Notifications received (NOTIFYs and BENOTIFYs), in order.
    private(set) var notifications: [SIPRequest] = []
    /// Every message received, start line and body, for failure messages.
    private(set) var transcript: [String] = []
    private(set) var subscribeStatus: Int?

    /// Sends the SUBSCRIBE to the gateway's enterprise listener at 127.0.0.1:`gatewayPort`
    /// (retransmitted every 500 ms until a final response, RFC 3261 §17.1.2.2) and waits at most
    /// `seconds` for that final response.
    convenience init(watcher: String, resource: String, gatewayPort: UInt16, within seconds: Double = 10) async throws {
        try await self.init(watcher: watcher, resources: [resource], gatewayPort: gatewayPort, within: seconds)
    }

    init(watcher: String, resources: [String], gatewayPort: UInt16, within seconds: Double = 10) async throws {
        socket = try RawSIPSocket.udp()
        self.watcher = watcher
        self.resources = resources
        let port = socket.port
        let list = resources.map { "<resource uri=\"\($0)\"/>" }.joined()
        let body = """
            <batchSub xmlns="http://schemas.microsoft.com/2006/01/sip/batch-subscribe" uri="\(watcher)" name=""><action name="subscribe" id="1">\
            <adhocList>\(list)</adhocList><categoryList xmlns="http://schemas.microsoft.com/2006/09/sip/categorylist">\
            <category name="contactCard"/><category name="note"/><category name="state"/></categoryList></action></batchSub>
            """
        let head = "SUBSCRIBE \(watcher) SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:\(port);branch=z9hG4bKew\(port)s1\r\n"
            + "Max-Forwards: 70\r\nFrom: <\(watcher)>;tag=ew\(port);epid=5e434f57d3\r\nTo: <\(watcher)>\r\n"
            + "Call-ID: enterprise-watcher-\(port)-\(UInt32.random(in: 0...UInt32.max))@127.0.0.1\r\nCSeq: 1 SUBSCRIBE\r\n"
            + "Contact: <sip:watcher@127.0.0.1:\(port);transport=udp>\r\nUser-Agent: enterprise-watcher-test\r\nEvent: presence\r\n"
            + "Accept: application/msrtc-event-categories+xml, application/rlmi+xml, multipart/related\r\n"
            + "Supported: ms-benotify, ms-piggyback-first-notify, eventlist\r\nProxy-Require: ms-benotify\r\n"
            + "Require: adhoclist, categoryList\r\nExpires: 600\r\nContent-Type: application/msrtc-adrl-categorylist+xml\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n"
        let subscribe = Array(head.utf8) + Array(body.utf8)
        let deadline = Date().addingTimeInterval(seconds)
        while subscribeStatus == nil, deadline.timeIntervalSinceNow > 0 {
            socket.send(subscribe, to: gatewayPort)
            let resend = Date().addingTimeInterval(0.5)
            while subscribeStatus == nil, let message = await socket.receive(within: min(resend, deadline).timeIntervalSinceNow) {
                take(message)
            }
        }
    }

    deinit { socket.close() }

    /// Reads what arrives for at most `seconds`, and returns as soon as a state received after
    /// the first `mark` ones has availability `expected` and is the latest: the watcher sees it.
    func sees(_ expected: UInt32, after mark: Int, within seconds: Double) async -> Bool {
        await sees(expected, for: resource, after: mark, within: seconds)
    }

    /// The same for `resource`.
    func sees(_ expected: UInt32, for resource: String, after mark: Int = 0, within seconds: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let states = received[resource] ?? []
            if states.count > mark, states.last?.availability == expected { return true }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return false }
            if let message = await socket.receive(within: left) { take(message) }
        }
    }

    /// Reads what arrives until `condition` holds (true), or `seconds` passed (false).
    func waits(within seconds: Double, until condition: (EnterpriseWatcher) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition(self) {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return false }
            if let message = await socket.receive(within: left) { take(message) }
        }
        return true
    }

    /// Reads what arrives until nothing has for `quiet` seconds (at most `seconds` in all).
    func settle(quiet: Double = 1, within seconds: Double = 10) async {
        let deadline = Date().addingTimeInterval(seconds)
        while deadline.timeIntervalSinceNow > 0, let message = await socket.receive(within: min(quiet, deadline.timeIntervalSinceNow)) {
            take(message)
        }
    }

    /// The availabilities received so far for the first resource, in order.
    var availabilities: [UInt32] { (received[resource] ?? []).map(\.availability) }

    private func take(_ message: SIPMessage) {
        let start = message.request.map { "\($0.method) \($0.uri)" } ?? message.response.map { "SIP/2.0 \($0.statusCode)" } ?? "?"
        transcript.append(start + "\n" + String(decoding: message.body, as: UTF8.self))
        if let response = message.response, (try? response.headers.cseq)?.method == .subscribe, response.statusCode >= 200 {
            if subscribeStatus == nil { subscribeStatus = response.statusCode }
        }
        if let request = message.request, request.method.description == "NOTIFY", let via = try? request.headers.via.first {
            let ok = SIPResponse(replyingTo: request, statusCode: 200)
            socket.send(SIPMessage.response(ok).serialized(), to: via.port ?? 5060)
        }
        if let request = message.request, ["NOTIFY", "BENOTIFY"].contains(request.method.description) {
            notifications.append(request)
        }
        let documents = categoriesDocuments(message)
        for resource in resources {
            if let state = aggregateState(documents, of: resource) { received[resource, default: []].append(state) }
        }
    }
}
