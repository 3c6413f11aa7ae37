import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SIPMessages
import SIPStack
import SIPTransport

/// `sip-bench serve`: the stack's own UDP (and optionally TCP) transport and transaction layer
/// answering 200 OK to OPTIONS, for loopback load runs with sipp
/// (`scripts/bench-udp.py`).
///
/// ```
/// sip-bench serve [--host IP] [--port PORT] [--tcp] [--max-transactions N]
/// ```
///
/// Defaults: `--host 127.0.0.1`, `--port 5060` (0 lets the system choose),
/// `--max-transactions 400000` (live server transactions; beyond, the layer answers 503). The
/// layer's own default of 10,000 is too small for a load run: over UDP a non-INVITE server
/// transaction stays in Completed for Timer J = 64*T1 = 32 s (RFC 3261 §17.2.2), so 10,000
/// transactions sustain only about 310 requests/s. Prints exactly one
/// line, `listening on HOST:PORT`, once the listeners are bound; stops on SIGINT or SIGTERM and
/// then prints what it answered to standard error. The answer is the RFC 3261 §11.2 response to
/// OPTIONS, made by the TU: 200 OK with the request's Via, From, Call-ID and CSeq, a To tag
/// (§8.2.6.2) and Allow. Every OPTIONS goes through a non-INVITE server transaction (§17.2.2),
/// so retransmissions are absorbed and answered from the transaction, as in production.
extension SIPBench {
    struct ServeOptions {
        var host = "127.0.0.1"
        var port: UInt16 = 5060
        var tcp = false
        var maxTransactions = 400_000

        static let usage = "usage: sip-bench serve [--host IP] [--port PORT] [--tcp] [--max-transactions N]"

        init(_ arguments: [String]) throws(UsageError) {
            var rest = arguments[...]
            while let flag = rest.popFirst() {
                switch flag {
                case "--host":
                    guard let value = rest.popFirst() else { throw UsageError("--host needs an IP address") }
                    host = value
                case "--port":
                    guard let value = rest.popFirst(), let port = UInt16(value) else {
                        throw UsageError("--port needs a number from 0 to 65535")
                    }
                    self.port = port
                case "--max-transactions":
                    guard let value = rest.popFirst(), let n = Int(value), n > 0 else {
                        throw UsageError("--max-transactions needs a positive number")
                    }
                    maxTransactions = n
                case "--tcp":
                    tcp = true
                default:
                    throw UsageError("unknown argument \(flag)")
                }
            }
        }
    }

    struct UsageError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    static func serve(_ arguments: [String]) async {
        let options: ServeOptions
        do {
            options = try ServeOptions(arguments)
        } catch {
            printError("sip-bench serve: \(error)\n\(ServeOptions.usage)")
            exit(2)
        }

        // Signals are taken by a dispatch source, not by the default action, so the run ends
        // with an orderly shutdown and a summary.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let stopped = AsyncStream<Int32> { continuation in
            let sources = [SIGINT, SIGTERM].map { number in
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { continuation.yield(number) }
                source.resume()
                return source
            }
            let held = SignalSources(sources)
            continuation.onTermination = { _ in held.cancel() }
        }

        var logger = Logger(label: "sip-bench.serve")
        logger.logLevel = .warning
        do {
            let udp = try SIPNetworkTransport(
                configuration: .init(listeners: [.init(.udp, host: options.host, port: options.port)]), logger: logger)
            let bound = try await udp.start()
            guard let local = bound.first else {
                printError("sip-bench serve: nothing bound")
                exit(1)
            }
            var transports: [SIPNetworkTransport] = [udp]
            if options.tcp {
                // TCP on the same port as UDP (RFC 3261 §18: a server listens on both); its own
                // transaction layer, since a layer drives one transport.
                let tcp = try SIPNetworkTransport(
                    configuration: .init(listeners: [.init(.tcp, host: options.host, port: local.port)]),
                    eventLoop: udp.eventLoop, logger: logger)
                _ = try await tcp.start()
                transports.append(tcp)
            }
            let answered = NIOLockedValueBox(0)
            var layers: [SIPTransactionLayer] = []
            for transport in transports {
                let layer = SIPTransactionLayer(
                    transport: transport,
                    configuration: .init(
                        answersOptions: false,
                        limits: .init(maxServerTransactions: options.maxTransactions)))
                try await transport.eventLoop.submit {
                    layer.setRequestHandler(for: [.options]) { incoming in
                        var response = SIPResponse(replyingTo: incoming.request, statusCode: 200, toTag: incoming.toTag)
                        response.headers.append(.allow, "OPTIONS")
                        if (try? layer.respond(response, to: incoming.transaction)) != nil {
                            answered.withLockedValue { $0 += 1 }
                        }
                    }
                    layer.start()
                }.get()
                layers.append(layer)
            }
            // Written straight to the descriptor: a pipe reader sees it at once.
            FileHandle.standardOutput.write(Data("listening on \(local.hostPort)\n".utf8))

            var signals = stopped.makeAsyncIterator()
            _ = await signals.next()

            let running = layers
            let retransmissions = try await udp.eventLoop.submit {
                running.reduce(0) { $0 + $1.counters.requestRetransmissions }
            }.get()
            for transport in transports { await transport.shutdown() }
            printError(
                "sip-bench serve: answered \(answered.withLockedValue { $0 }) OPTIONS, absorbed \(retransmissions) retransmissions"
            )
        } catch {
            printError("sip-bench serve: \(error)")
            exit(1)
        }
    }

    /// Keeps the signal sources alive for the stream's lifetime (they are only cancelled).
    final class SignalSources: @unchecked Sendable {
        private let sources: [any DispatchSourceSignal]
        init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }
        func cancel() { for source in sources { source.cancel() } }
    }

    static func printError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
