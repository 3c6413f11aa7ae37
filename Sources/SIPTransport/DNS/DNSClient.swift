public import NIOCore
import NIOPosix

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A stub resolver (RFC 1035 §4.2, §7): sends recursive queries over UDP to the configured
/// nameservers, matches answers by ID, source address and question, retries, asks again over
/// TCP when an answer is truncated, caches by TTL.
///
/// Each query uses a fresh socket on an ephemeral port and a random ID (RFC 5452 §9.2). Each
/// round tries every nameserver in order, waiting ``Configuration/timeout`` for each; there are
/// ``Configuration/attempts`` rounds. NOERROR and NXDOMAIN end the query; SERVFAIL, REFUSED and
/// the like move on to the next server.
///
/// Queries carry an EDNS(0) OPT record (RFC 6891) advertising ``Configuration/ednsPayloadSize``;
/// a server that answers FORMERR is asked again without it. A truncated answer (TC) is asked
/// again over TCP (RFC 7766 §5); when that fails, the truncated answer is used as it is. The TCP
/// query has the same timeout and is not retried on its own. No DNSSEC, no DNS over TLS.
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
        /// The UDP payload size advertised with EDNS(0) (RFC 6891 §6.2.5), nil to send plain
        /// RFC 1035 queries (answers then stop at 512 octets). Default 1 232, the size that
        /// avoids IP fragmentation on common paths (DNS Flag Day 2020).
        public var ednsPayloadSize: UInt16?
        /// Whether a truncated UDP answer (TC) is asked again over TCP. Default true.
        public var tcpFallback: Bool

        public init(
            nameservers: [SocketAddress], timeout: TimeAmount = .seconds(2), attempts: Int = 2,
            maxCNAMEHops: Int = 8, parseLimits: DNSMessage.ParseLimits = DNSMessage.ParseLimits(),
            ednsPayloadSize: UInt16? = 1_232, tcpFallback: Bool = true
        ) {
            self.nameservers = nameservers
            self.timeout = timeout
            self.attempts = max(1, attempts)
            self.maxCNAMEHops = max(0, maxCNAMEHops)
            self.parseLimits = parseLimits
            self.ednsPayloadSize = ednsPayloadSize.map { max($0, 512) }
            self.tcpFallback = tcpFallback
        }

        /// The nameservers of a resolv.conf file (default `/etc/resolv.conf`), port 53. Fails
        /// with `dns-configuration` when the file cannot be read and `dns-no-nameservers` when it
        /// names none.
        public static func system(resolvConfPath: String = "/etc/resolv.conf") throws(SIPTransportError)
            -> Configuration
        {
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
                    throw SIPTransportError(
                        .dnsCNAMEChain, "more than \(configuration.maxCNAMEHops) CNAMEs from \(name)")
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

    /// One question to one server over UDP, with EDNS(0) when configured; again without it after
    /// FORMERR (RFC 6891 §7); over TCP when the answer is truncated (RFC 1035 §4.2.1, RFC 7766
    /// §5). When the TCP attempt fails, the truncated UDP answer is used as it is.
    private func exchange(_ question: DNSQuestion, with server: SocketAddress) async throws(SIPTransportError)
        -> DNSMessage
    {
        var edns = configuration.ednsPayloadSize
        var response = try await exchangeUDP(question, with: server, edns: edns)
        if response.flags.responseCode == .formatError, edns != nil {
            edns = nil
            response = try await exchangeUDP(question, with: server, edns: nil)
        }
        if response.flags.isTruncated, configuration.tcpFallback,
            let full = try? await exchangeTCP(question, with: server)
        {
            return full
        }
        return response
    }

    /// The query in wire form, with an OPT pseudo-record when `edns` is set (RFC 6891 §6.1.2:
    /// owner root, CLASS the requestor's UDP payload size, TTL extended RCODE and flags, 0 here).
    static func queryBytes(id: UInt16, _ question: DNSQuestion, edns: UInt16?) throws(SIPTransportError) -> [UInt8] {
        var message = DNSMessage.query(id: id, name: question.name, type: question.type)
        if let size = edns {
            message.additionals = [
                DNSResourceRecord(
                    name: .root, dnsClass: DNSClass(rawValue: size), ttl: 0,
                    data: .other(type: .opt, rdata: []))
            ]
        }
        return try message.serialized()
    }

    /// A fresh UDP socket, one datagram, the first matching answer or a timeout.
    private func exchangeUDP(_ question: DNSQuestion, with server: SocketAddress, edns: UInt16?)
        async throws(SIPTransportError)
        -> DNSMessage
    {
        let id = queryID()
        let bytes = try Self.queryBytes(id: id, question, edns: edns)
        let loop = group.next()
        let promise = loop.makePromise(of: DNSMessage.self)
        let matcher = DNSResponseMatcher(id: id, question: question, limits: configuration.parseLimits)
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
            let capacity = min(max(configuration.parseLimits.maxMessageSize, 512), 65_535)
            channel = try await DatagramBootstrap(group: loop)
                .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: capacity))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            DNSDatagramResponseHandler(server: server, matcher: matcher, promise: promise))
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
        return try await Self.finish(promise, timer: timer, channel: channel)
    }

    /// One TCP connection, one length-prefixed query, the first matching answer or a timeout
    /// (RFC 1035 §4.2.2, RFC 7766 §8).
    private func exchangeTCP(_ question: DNSQuestion, with server: SocketAddress) async throws(SIPTransportError)
        -> DNSMessage
    {
        let id = queryID()
        let bytes = try Self.queryBytes(id: id, question, edns: nil)
        let loop = group.next()
        let promise = loop.makePromise(of: DNSMessage.self)
        let matcher = DNSResponseMatcher(id: id, question: question, limits: configuration.parseLimits)
        let timeout = configuration.timeout
        let timer = loop.scheduleTask(in: timeout) {
            promise.fail(
                SIPTransportError(.dnsTimeout, "no TCP answer from \(server) for \(question) within \(timeout)"))
        }
        let maxLength = configuration.parseLimits.maxMessageSize
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .connectTimeout(timeout)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(DNSLengthPrefixDecoder(maxLength: maxLength)))
                        try channel.pipeline.syncOperations.addHandler(
                            DNSStreamResponseHandler(matcher: matcher, promise: promise))
                    }
                }
                .connect(to: server).get()
        } catch {
            timer.cancel()
            let failure = SIPTransportError(.dnsServerFailure, "cannot connect to \(server) over TCP: \(error)")
            promise.fail(failure)
            throw failure
        }
        guard bytes.count <= Int(UInt16.max) else {
            timer.cancel()
            channel.close(promise: nil)
            let failure = SIPTransportError(.dnsLimitExceeded, "query of \(bytes.count) octets")
            promise.fail(failure)
            throw failure
        }
        var buffer = channel.allocator.buffer(capacity: bytes.count + 2)
        buffer.writeInteger(UInt16(bytes.count))
        buffer.writeBytes(bytes)
        channel.writeAndFlush(buffer).whenFailure { error in
            promise.fail(SIPTransportError(.dnsServerFailure, "cannot send to \(server) over TCP: \(error)"))
        }
        return try await Self.finish(promise, timer: timer, channel: channel)
    }

    /// Waits for the promise, then cancels the timer and closes the channel.
    private static func finish(_ promise: EventLoopPromise<DNSMessage>, timer: Scheduled<Void>, channel: any Channel)
        async throws(SIPTransportError) -> DNSMessage
    {
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
