import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SIPMessages
import SIPStack
import SIPTransport

/// The stack under test, in process: a ``SIPNetworkTransport`` listening on 127.0.0.1 (UDP and
/// TCP, ports chosen by the system) under a ``SIPTransactionLayer`` whose TU answers 200 OK to
/// OPTIONS, SUBSCRIBE, NOTIFY and MESSAGE, and records every exchange.
///
/// The TU answers as RFC 3261 §8.2.6.2 asks (Via, From, Call-ID and CSeq copied, a To tag added);
/// a SUBSCRIBE's 200 also carries Expires (RFC 6665 §4.2.1.1: "200-class responses to SUBSCRIBE
/// requests also MUST contain an 'Expires' header field") and a Contact (RFC 6665 §4.1.2.1, the
/// response establishes a dialog).
final class PeerStack: Sendable {
    /// One request the TU was handed and the final response it sent.
    struct Exchange: Sendable {
        var request: SIPRequest
        var response: SIPResponse
        var source: SIPTarget
    }

    /// The longest subscription the TU grants (RFC 6665 §4.2.1.1 lets the notifier shorten it).
    static let maxExpires: UInt32 = 3600

    let transport: CountingTransport
    let network: SIPNetworkTransport
    let layer: SIPTransactionLayer
    let udp: SIPTarget
    let tcp: SIPTarget
    private let log = NIOLockedValueBox<[Exchange]>([])

    private init(network: SIPNetworkTransport, transport: CountingTransport, layer: SIPTransactionLayer,
                 udp: SIPTarget, tcp: SIPTarget) {
        self.network = network
        self.transport = transport
        self.layer = layer
        self.udp = udp
        self.tcp = tcp
    }

    /// Starts a stack on 127.0.0.1 with UDP and TCP listeners on free ports. Over UDP a
    /// non-INVITE server transaction lives 32 s after its answer (Timer J, RFC 3261 §17.2.2), so a
    /// load run needs `maxServerTransactions` above rate × 32 s.
    static func start(maxServerTransactions: Int = 10_000) async throws -> PeerStack {
        let configuration = SIPNetworkTransport.Configuration(listeners: [
            .init(.udp, host: "127.0.0.1", port: 0),
            .init(.tcp, host: "127.0.0.1", port: 0),
        ])
        var logger = Logger(label: "peer-tests.stack")
        logger.logLevel = .warning
        let network = try SIPNetworkTransport(configuration: configuration, logger: logger)
        let bound = try await network.start()
        guard let udp = bound.first(where: { $0.kind == .udp }), let tcp = bound.first(where: { $0.kind == .tcp }) else {
            await network.shutdown()
            throw PeerTestFailure("the transport bound no UDP or TCP listener: \(bound)")
        }
        let transport = CountingTransport(network)
        let layerConfiguration = SIPTransactionLayer.Configuration(
            uas: SIPUASCoreConfiguration(
                allowedMethods: [],
                bodyTypes: [.message: ["text/plain"], .notify: ["application/pidf+xml"]]),
            answersOptions: false,
            limits: .init(maxServerTransactions: maxServerTransactions))
        let layer = SIPTransactionLayer(transport: transport, configuration: layerConfiguration)
        let stack = PeerStack(network: network, transport: transport, layer: layer, udp: udp, tcp: tcp)
        try await network.eventLoop.submit {
            layer.setRequestHandler(for: [.options, .subscribe, .notify, .message]) { [stack] incoming in
                stack.answer(incoming)
            }
            layer.start()
        }.get()
        return stack
    }

    /// The TU: 200 OK to everything it is handed (runs on the transport's loop).
    private func answer(_ incoming: SIPTransactionLayer.IncomingRequest) {
        let request = incoming.request
        var response = SIPResponse(replyingTo: request, statusCode: 200, toTag: incoming.toTag)
        if request.method == .subscribe {
            let requested = (try? request.headers.expires) ?? Self.maxExpires
            response.headers.append(.expires, String(min(requested, Self.maxExpires)))
            let local = incoming.received.local
            response.headers.append(.contact, "<sip:gateway@\(local.hostPort);transport=\(local.kind.rawValue.lowercased())>")
        }
        do {
            try layer.respond(response, to: incoming.transaction)
            log.withLockedValue { $0.append(Exchange(request: request, response: response, source: incoming.received.source)) }
        } catch {
            // Recorded as missing: the test fails on the count.
        }
    }

    /// Every exchange so far.
    var exchanges: [Exchange] { log.withLockedValue { $0 } }

    /// Sends `request` in a client transaction and waits (at most `seconds`) for its final
    /// outcome: a final response, or the 408/503 the layer makes on Timer F or a transport error.
    func sendRequest(_ request: SIPRequest, to target: SIPTarget, seconds: Double = 40) async throws -> (SIPClientTransactionEvent, SIPClientTransactionKey) {
        let outcome = NIOLockedValueBox<SIPClientTransactionEvent?>(nil)
        let layer = self.layer
        let key = try await network.eventLoop.submit {
            try layer.send(request, to: target) { event in
                if event.response.statusCode >= 200 { outcome.withLockedValue { $0 = event } }
            }
        }.get()
        let event = try await waitFor("a final response to \(request.method)", seconds: seconds) {
            outcome.withLockedValue { $0 }
        }
        return (event, key)
    }

    func shutdown() async {
        await network.shutdown()
    }
}

/// A ``SIPTransport`` that forwards to a real one and counts what it sends, so a test can see the
/// stack's retransmissions (RFC 3261 §17.1.2.2, Timer E) without reading the wire.
final class CountingTransport: SIPTransport {
    let inner: SIPNetworkTransport
    private let sent = NIOLockedValueBox<[SIPMessage]>([])

    init(_ inner: SIPNetworkTransport) { self.inner = inner }

    var eventLoop: any EventLoop { inner.eventLoop }

    func send(_ message: SIPMessage, to target: SIPTarget, connection: SIPConnectionID?) -> EventLoopFuture<Void> {
        sent.withLockedValue { $0.append(message) }
        return inner.send(message, to: target, connection: connection)
    }

    func setMessageHandler(_ handler: @escaping @Sendable (SIPReceivedMessage) -> Void) {
        inner.setMessageHandler(handler)
    }

    func advertisedAddress(for kind: SIPTransportKind) -> SIPTarget? {
        inner.advertisedAddress(for: kind)
    }

    /// Every request sent so far whose top Via branch is `branch` (the copies of one client
    /// transaction's request).
    func requests(branch: String) -> [SIPRequest] {
        sent.withLockedValue { messages in
            messages.compactMap { message -> SIPRequest? in
                guard case .request(let request) = message,
                      let via = try? request.headers.via.first, via.branch == branch
                else { return nil }
                return request
            }
        }
    }
}

/// A test precondition that did not hold, with what was found.
struct PeerTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Polls `probe` every 10 ms for at most `seconds` (a bound against hanging, not a timing check).
func waitFor<T>(_ what: String, seconds: Double = 10, _ probe: () -> T?) async throws -> T {
    let rounds = Int(seconds * 100)
    for _ in 0..<rounds {
        if let value = probe() { return value }
        try await Task.sleep(for: .milliseconds(10))
    }
    throw PeerTestFailure("timed out after \(seconds) s waiting for \(what)")
}
