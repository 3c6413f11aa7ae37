#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
public import NIOCore
import NIOPosix

/// A stub resolver over UDP (RFC 1035 §4.2.1, §7): sends recursive queries to the configured
/// nameservers, matches answers by ID, source address and question, retries, caches by TTL.
///
/// Each query uses a fresh socket on an ephemeral port and a random ID (RFC 5452 §9.2). Each
/// round tries every nameserver in order, waiting ``Configuration/timeout`` for each; there are
/// ``Configuration/attempts`` rounds. NOERROR and NXDOMAIN end the query; SERVFAIL, REFUSED and
/// the like move on to the next server.
///
/// Not implemented: retrying over TCP when a response has TC set (RFC 1035 §4.2.1, RFC 7766 §5).
/// A truncated response is used as it is, which may lose records beyond the first 512 octets.
/// EDNS(0) is not sent.
public final class DNSClient: DNSLookup {
    public struct Configuration: Sendable {
        /// Where queries go, in order.
        public var nameservers: [SocketAddress]
        /// How long to wait for one server's answer. Default 2 s.
        public var timeout: TimeAmount
        /// Rounds over all nameservers, at least 1. Default 2 (resolv.conf's `attempts`).
        public var attempts: Int
        /// The most CNAMEs followed for one lookup. Default 8.
        public var maxCNAMEHops: Int
        /// Limits for parsing responses.
        public var parseLimits: DNSMessage.ParseLimits

        public init(
            nameservers: [SocketAddress], timeout: TimeAmount = .seconds(2), attempts: Int = 2,
            maxCNAMEHops: Int = 8, parseLimits: DNSMessage.ParseLimits = DNSMessage.ParseLimits()
        ) {
            self.nameservers = nameservers
            self.timeout = timeout
            self.attempts = max(1, attempts)
            self.maxCNAMEHops = max(0, maxCNAMEHops)
            self.parseLimits = parseLimits
        }

        /// The nameservers of a resolv.conf file (default `/etc/resolv.conf`), port 53. Fails
        /// with `dns-configuration` when the file cannot be read and `dns-no-nameservers` when it
        /// names none.
        public static func system(resolvConfPath: String = "/etc/resolv.conf") throws(SIPTransportError) -> Configuration {
            let text: String
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: resolvConfPath))
                text = String(decoding: data, as: UTF8.self)
            } catch {
                throw SIPTransportError(.dnsConfiguration, "cannot read \(resolvConfPath): \(error)")
            }
            return try Configuration(resolvConf: DNSResolvConf(parsing: text))
        }

        /// The nameservers of parsed resolv.conf text, port 53.
        public init(resolvConf: DNSResolvConf) throws(SIPTransportError) {
            var servers: [SocketAddress] = []
            for address in resolvConf.nameservers {
                if let server = try? SocketAddress(ipAddress: address, port: 53) { servers.append(server) }
            }
            guard !servers.isEmpty else { throw SIPTransportError(.dnsNoNameservers, "no usable nameserver line") }
            self.init(nameservers: servers)
        }
    }

    public let configuration: Configuration
    public let cache: DNSCache
    let group: any EventLoopGroup
    let queryID: @Sendable () -> UInt16

    /// - Parameters:
    ///   - cache: the TTL cache; pass one with an injected clock in tests.
    ///   - queryID: the source of query IDs; random by default (RFC 5452 §9.2).
    public init(
        configuration: Configuration, eventLoopGroup: any EventLoopGroup, cache: DNSCache = DNSCache(),
        queryID: @escaping @Sendable () -> UInt16 = { UInt16.random(in: 0...UInt16.max) }
    ) {
        self.configuration = configuration
        self.group = eventLoopGroup
        self.cache = cache
        self.queryID = queryID
    }

    /// Sends one question to the nameservers (no cache, no CNAME following) and returns the first
    /// matching response whose RCODE is NOERROR or NXDOMAIN.
    public func query(_ question: DNSQuestion) async throws(SIPTransportError) -> DNSMessage {
        guard !configuration.nameservers.isEmpty else {
            throw SIPTransportError(.dnsNoNameservers, "no nameserver configured")
        }
        var lastError = SIPTransportError(.dnsTimeout, "no answer for \(question)")
        for _ in 0..<configuration.attempts {
            for server in configuration.nameservers {
                do {
                    let response = try await exchange(question, with: server)
                    switch response.flags.responseCode {
                    case .noError, .nameError:
                        return response
                    default:
                        lastError = SIPTransportError(
                            .dnsServerFailure, "\(server) answered \(response.flags.responseCode) for \(question)")
                    }
                } catch {
                    lastError = error
                }
            }
        }
        throw lastError
    }

    public func lookup(_ name: DNSName, _ type: DNSRecordType) async throws(SIPTransportError) -> [DNSResourceRecord] {
        if let cached = cache.records(for: name, type) { return cached }
        var current = name
        var seen: Set<DNSName> = [name]
        var hops = 0
        var chainTTL = UInt32.max
        while true {
            let response = try await query(DNSQuestion(name: current, type: type))
            let asked = current
            // Follow the chain as far as this response carries it.
            while true {
                let matches = response.answers.filter {
                    $0.name == current && $0.type == type && $0.dnsClass == .internet
                }
                if !matches.isEmpty {
                    let ttl = matches.reduce(chainTTL) { min($0, $1.ttl) }
                    cache.store(matches, for: name, type, ttl: ttl)
                    return matches
                }
                guard type != .cname,
                      let alias = response.answers.first(where: { $0.name == current && $0.type == .cname }),
                      case .cname(let target) = alias.data
                else { break }
                hops += 1
                guard hops <= configuration.maxCNAMEHops else {
                    throw SIPTransportError(.dnsCNAMEChain, "more than \(configuration.maxCNAMEHops) CNAMEs from \(name)")
                }
                guard seen.insert(target).inserted else {
                    throw SIPTransportError(.dnsCNAMEChain, "CNAME loop from \(name) at \(target)")
                }
                chainTTL = min(chainTTL, alias.ttl)
                current = target
            }
            if current != asked && response.flags.responseCode == .noError {
                continue  // the response ended at an alias: ask for its target (RFC 1034 §5.3.3 step 3c)
            }
            // NXDOMAIN or NODATA (RFC 2308 §2.1, §2.2).
            if let soa = response.authorities.first(where: { $0.type == .soa }), case .soa(let data) = soa.data {
                cache.store([], for: name, type, ttl: min(soa.ttl, data.minimum, chainTTL))
            }
            return []
        }
    }

    /// One question to one server: a fresh UDP socket, one datagram, the first matching answer
    /// or a timeout.
    private func exchange(_ question: DNSQuestion, with server: SocketAddress) async throws(SIPTransportError) -> DNSMessage {
        let id = queryID()
        let bytes = try DNSMessage.query(id: id, name: question.name, type: question.type).serialized()
        let loop = group.next()
        let promise = loop.makePromise(of: DNSMessage.self)
        let limits = configuration.parseLimits
        let local: SocketAddress
        do {
            local = try Self.localAddress(for: server)
        } catch {
            promise.fail(error)
            throw SIPTransportError(.dnsConfiguration, "no local address for \(server): \(error)")
        }
        let channel: any Channel
        do {
            // Room for the largest message the limits admit: NIO's default for datagrams is 2 KiB,
            // and a longer datagram would arrive cut short.
            let capacity = min(max(limits.maxMessageSize, 512), 65_535)
            channel = try await DatagramBootstrap(group: loop)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: capacity))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            DNSResponseHandler(server: server, id: id, question: question, limits: limits, promise: promise))
                    }
                }
                .bind(to: local).get()
        } catch {
            let failure = SIPTransportError(.dnsConfiguration, "cannot open a UDP socket on \(local): \(error)")
            promise.fail(failure)
            throw failure
        }
        let timeout = configuration.timeout
        let timer = loop.scheduleTask(in: timeout) {
            promise.fail(SIPTransportError(.dnsTimeout, "no answer from \(server) for \(question) within \(timeout)"))
        }
        let envelope = AddressedEnvelope(remoteAddress: server, data: channel.allocator.buffer(bytes: bytes))
        channel.writeAndFlush(envelope).whenFailure { error in
            promise.fail(SIPTransportError(.dnsServerFailure, "cannot send to \(server): \(error)"))
        }
        let result = await promise.futureResult.outcome()
        timer.cancel()
        channel.close(promise: nil)
        switch result {
        case .success(let message): return message
        case .failure(let error as SIPTransportError): throw error
        case .failure(let error): throw SIPTransportError(.dnsServerFailure, "\(error)")
        }
    }

    /// The wildcard address of the server's family, or the loopback address when the server is
    /// on loopback (so that tests never bind beyond it).
    static func localAddress(for server: SocketAddress) throws -> SocketAddress {
        let isLoopback = server.ipAddress.map { $0 == "::1" || $0.hasPrefix("127.") } ?? false
        switch server {
        case .v6: return try SocketAddress(ipAddress: isLoopback ? "::1" : "::", port: 0)
        default: return try SocketAddress(ipAddress: isLoopback ? "127.0.0.1" : "0.0.0.0", port: 0)
        }
    }
}

extension EventLoopFuture where Value: Sendable {
    /// The outcome as a `Result`, without throwing.
    fileprivate func outcome() async -> Result<Value, any Error> {
        do { return .success(try await get()) } catch { return .failure(error) }
    }
}

/// Completes the query's promise with the first datagram from the server that carries the
/// query's ID, the QR bit and the same question (RFC 5452 §9.1). Others are ignored.
final class DNSResponseHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    let server: SocketAddress
    let id: UInt16
    let question: DNSQuestion
    let limits: DNSMessage.ParseLimits
    let promise: EventLoopPromise<DNSMessage>

    init(server: SocketAddress, id: UInt16, question: DNSQuestion, limits: DNSMessage.ParseLimits,
         promise: EventLoopPromise<DNSMessage>) {
        self.server = server
        self.id = id
        self.question = question
        self.limits = limits
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = Self.unwrapInboundIn(data)
        guard envelope.remoteAddress == server else { return }
        let bytes = Array(envelope.data.readableBytesView)
        guard bytes.count >= 2, UInt16(bytes[0]) << 8 | UInt16(bytes[1]) == id else { return }
        do {
            let message = try DNSMessage(parsing: bytes, limits: limits)
            guard message.flags.isResponse, message.questions.count == 1,
                  message.questions[0].name == question.name, message.questions[0].type == question.type,
                  message.questions[0].dnsClass == question.dnsClass
            else { return }
            promise.succeed(message)
        } catch {
            promise.fail(error)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP errors and the like: keep waiting; the timeout ends the attempt.
    }
}
