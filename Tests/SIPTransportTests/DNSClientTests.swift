import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SIPTransport
import Testing

/// A clock tests advance by hand, for the TTL cache.
final class ManualClock: Sendable {
    private let now = NIOLockedValueBox(NIODeadline.uptimeNanoseconds(1_000_000_000_000))
    func read() -> NIODeadline { now.withLockedValue { $0 } }
    func advance(by amount: TimeAmount) { now.withLockedValue { $0 = $0 + amount } }
}

/// An authoritative-style DNS server on 127.0.0.1 (UDP, port 0) serving a fixed zone, the way a
/// recursive resolver would answer a stub: CNAME chains inside the zone are followed into the
/// answer section, NXDOMAIN when the name owns nothing, an SOA in the authority section of
/// negative answers when the zone has one.
final class FakeDNSServer: Sendable {
    enum Behaviour: Sendable {
        /// Answers every query.
        case answer
        /// Reads queries and never answers.
        case silent
        /// Before the real answer, sends one with the wrong ID and one with another question.
        case decoysFirst
        /// Answers SERVFAIL.
        case serverFailure
        /// Answers FORMERR to queries that carry an EDNS(0) OPT record (a pre-RFC 6891 server).
        case formatErrorOnEDNS
        /// Over UDP sets TC and sends no records; over TCP (same port) answers in full.
        case truncateOverUDP
        /// Answers with the query's ID and a question name that is a pointer to itself.
        case pointerLoop
    }

    let channel: any Channel
    let tcpChannel: (any Channel)?
    let zone: [DNSResourceRecord]
    let behaviour: Behaviour
    private let log = NIOLockedValueBox<[DNSMessage]>([])
    private let tcpLog = NIOLockedValueBox<Int>(0)

    var address: SocketAddress {
        get throws {
            guard let address = channel.localAddress else { throw SIPTransportError(.invalidTarget, "server not bound") }
            return address
        }
    }

    /// Every query received over UDP and TCP, in order.
    var queries: [DNSMessage] { log.withLockedValue { $0 } }
    /// The first question of every query, in order.
    var questions: [DNSQuestion] { queries.compactMap(\.questions.first) }
    /// How many queries came over TCP.
    var tcpQueryCount: Int { tcpLog.withLockedValue { $0 } }

    private init(channel: any Channel, tcpChannel: (any Channel)?, zone: [DNSResourceRecord], behaviour: Behaviour) {
        self.channel = channel
        self.tcpChannel = tcpChannel
        self.zone = zone
        self.behaviour = behaviour
    }

    static func start(zone: [DNSResourceRecord], behaviour: Behaviour = .answer) async throws -> FakeDNSServer {
        let box = NIOLockedValueBox<FakeDNSServer?>(nil)
        let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Handler(server: box))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        var tcpChannel: (any Channel)?
        if behaviour == .truncateOverUDP, let port = channel.localAddress?.port {
            tcpChannel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { child in
                    child.eventLoop.makeCompletedFuture {
                        try child.pipeline.syncOperations.addHandler(ByteToMessageHandler(LengthPrefixDecoder()))
                        try child.pipeline.syncOperations.addHandler(StreamHandler(server: box))
                    }
                }
                .bind(host: "127.0.0.1", port: port).get()
        }
        let server = FakeDNSServer(channel: channel, tcpChannel: tcpChannel, zone: zone, behaviour: behaviour)
        box.withLockedValue { $0 = server }
        return server
    }

    func stop() async throws {
        try await channel.close()
        try await tcpChannel?.close()
    }

    func record(_ query: DNSMessage, overTCP: Bool = false) {
        log.withLockedValue { $0.append(query) }
        if overTCP { tcpLog.withLockedValue { $0 += 1 } }
    }

    /// The responses to send for one query.
    func responses(to query: DNSMessage, overTCP: Bool = false) -> [DNSMessage] {
        guard let question = query.questions.first else { return [] }
        var flags = DNSMessage.Flags(isResponse: true, isAuthoritative: true, recursionDesired: query.flags.recursionDesired,
                                     recursionAvailable: true)
        if behaviour == .serverFailure {
            flags.responseCode = .serverFailure
            return [DNSMessage(id: query.id, flags: flags, questions: [question])]
        }
        if behaviour == .formatErrorOnEDNS, query.additionals.contains(where: { $0.type == .opt }) {
            flags.responseCode = .formatError
            return [DNSMessage(id: query.id, flags: flags, questions: [question])]
        }
        if behaviour == .truncateOverUDP, !overTCP {
            flags.isTruncated = true
            return [DNSMessage(id: query.id, flags: flags, questions: [question])]
        }
        var answers: [DNSResourceRecord] = []
        var current = question.name
        for _ in 0..<10 {
            let matches = zone.filter { $0.name == current && $0.type == question.type }
            if !matches.isEmpty {
                answers += matches
                break
            }
            guard let alias = zone.first(where: { $0.name == current && $0.type == .cname }),
                  case .cname(let target) = alias.data
            else { break }
            answers.append(alias)
            current = target
        }
        var authorities: [DNSResourceRecord] = []
        if answers.isEmpty {
            if !zone.contains(where: { $0.name == question.name }) { flags.responseCode = .nameError }
            authorities = zone.filter { $0.type == .soa }
        }
        let real = DNSMessage(id: query.id, flags: flags, questions: [question], answers: answers, authorities: authorities)
        guard behaviour == .decoysFirst else { return [real] }
        let bogusAddress = DNSResourceRecord(name: question.name, ttl: 60, data: .a(DNSIPv4Address(127, 0, 0, 66)))
        var wrongID = real
        wrongID.id = query.id &+ 1
        wrongID.answers = [bogusAddress]
        var wrongQuestion = real
        wrongQuestion.questions = [DNSQuestion(name: "decoy.invalid", type: question.type)]
        wrongQuestion.answers = [bogusAddress]
        return [wrongID, wrongQuestion, real]
    }

    final class Handler: ChannelInboundHandler {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        typealias OutboundOut = AddressedEnvelope<ByteBuffer>
        let server: NIOLockedValueBox<FakeDNSServer?>

        init(server: NIOLockedValueBox<FakeDNSServer?>) { self.server = server }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let envelope = Self.unwrapInboundIn(data)
            guard let server = server.withLockedValue({ $0 }),
                  let query = try? DNSMessage(parsing: Array(envelope.data.readableBytesView))
            else { return }
            server.record(query)
            guard server.behaviour != .silent else { return }
            if server.behaviour == .pointerLoop {
                let bytes: [UInt8] = [UInt8(query.id >> 8), UInt8(query.id & 0xFF), 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0,
                                      0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01]
                let out = AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: context.channel.allocator.buffer(bytes: bytes))
                context.writeAndFlush(Self.wrapOutboundOut(out), promise: nil)
                return
            }
            for response in server.responses(to: query) {
                guard let bytes = try? response.serialized() else { continue }
                let out = AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: context.channel.allocator.buffer(bytes: bytes))
                context.write(Self.wrapOutboundOut(out), promise: nil)
            }
            context.flush()
        }
    }
}

extension FakeDNSServer {
    /// Two-octet length prefixed messages over TCP (RFC 1035 §4.2.2).
    struct LengthPrefixDecoder: ByteToMessageDecoder {
        typealias InboundOut = ByteBuffer

        mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
            guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self),
                  buffer.readableBytes >= 2 + Int(length)
            else { return .needMoreData }
            buffer.moveReaderIndex(forwardBy: 2)
            guard let frame = buffer.readSlice(length: Int(length)) else { return .needMoreData }
            context.fireChannelRead(Self.wrapInboundOut(frame))
            return .continue
        }

        mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
            .needMoreData
        }
    }

    final class StreamHandler: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        let server: NIOLockedValueBox<FakeDNSServer?>

        init(server: NIOLockedValueBox<FakeDNSServer?>) { self.server = server }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard let server = server.withLockedValue({ $0 }),
                  let query = try? DNSMessage(parsing: Array(Self.unwrapInboundIn(data).readableBytesView))
            else { return }
            server.record(query, overTCP: true)
            for response in server.responses(to: query, overTCP: true) {
                guard let bytes = try? response.serialized() else { continue }
                var out = context.channel.allocator.buffer(capacity: bytes.count + 2)
                out.writeInteger(UInt16(bytes.count))
                out.writeBytes(bytes)
                context.write(Self.wrapOutboundOut(out), promise: nil)
            }
            context.flush()
        }
    }
}

extension DNSClient {
    /// A client that only ever talks to the fake server on 127.0.0.1.
    // Generous by default: the whole suite runs in parallel on 2 cores (30,000-datagram and
    // sipp tests included), and an answer that is late is not what these tests are about.
    static func forTesting(_ server: FakeDNSServer, timeout: TimeAmount = .seconds(5), attempts: Int = 1,
                           clock: ManualClock = ManualClock()) throws -> DNSClient {
        let address = try server.address
        #expect(address.ipAddress == "127.0.0.1")
        return DNSClient(
            configuration: Configuration(nameservers: [address], timeout: timeout, attempts: attempts),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            cache: DNSCache(clock: { clock.read() }))
    }
}

@Suite struct DNSClientTests {
    static let zone: [DNSResourceRecord] = [
        DNSResourceRecord(name: "host.test", ttl: 300, data: .a(DNSIPv4Address(127, 0, 0, 5))),
        DNSResourceRecord(name: "alias.test", ttl: 60, data: .cname("middle.test")),
        DNSResourceRecord(name: "middle.test", ttl: 600, data: .cname("host.test")),
        DNSResourceRecord(name: "loop1.test", ttl: 60, data: .cname("loop2.test")),
        DNSResourceRecord(name: "loop2.test", ttl: 60, data: .cname("loop1.test")),
        DNSResourceRecord(name: "test", ttl: 3600, data: .soa(DNSSOARecord(
            primaryServer: "ns.test", responsibleMailbox: "admin.test", serial: 1, refresh: 3600, retry: 600,
            expire: 86400, minimum: 30))),
    ]

    @Test func answersComeFromTheServerAndThenFromTheCacheUntilTheTTLRunsOut() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone)
        let clock = ManualClock()
        let client = try DNSClient.forTesting(server, clock: clock)
        let first = try await client.lookup("host.test", .a)
        #expect(first.map(\.data) == [.a(DNSIPv4Address(127, 0, 0, 5))])
        _ = try await client.lookup("HOST.test", .a)
        #expect(server.questions.count == 1)
        clock.advance(by: .seconds(299))
        _ = try await client.lookup("host.test", .a)
        #expect(server.questions.count == 1)
        clock.advance(by: .seconds(1))
        _ = try await client.lookup("host.test", .a)
        #expect(server.questions.count == 2)
        try await server.stop()
    }

    @Test func cnameChainsAreFollowedAndCachedForTheShortestTTL() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone)
        let clock = ManualClock()
        let client = try DNSClient.forTesting(server, clock: clock)
        let records = try await client.lookup("alias.test", .a)
        #expect(records.map(\.data) == [.a(DNSIPv4Address(127, 0, 0, 5))])
        #expect(records.map(\.name) == ["host.test"])
        clock.advance(by: .seconds(60))
        _ = try await client.lookup("alias.test", .a)
        #expect(server.questions.count == 2)
        try await server.stop()
    }

    @Test func cnameLoopsFail() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone)
        let client = try DNSClient.forTesting(server)
        let error = await #expect(throws: SIPTransportError.self) { try await client.lookup("loop1.test", .a) }
        #expect(error?.code == .dnsCNAMEChain)
        try await server.stop()
    }

    @Test func nxdomainIsAnEmptyAnswerCachedForTheSOAMinimum() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone)
        let clock = ManualClock()
        let client = try DNSClient.forTesting(server, clock: clock)
        #expect(try await client.lookup("missing.test", .a).isEmpty)
        _ = try await client.lookup("missing.test", .a)
        #expect(server.questions.count == 1)
        clock.advance(by: .seconds(30))  // RFC 2308 §5: min(SOA TTL 3600, MINIMUM 30)
        _ = try await client.lookup("missing.test", .a)
        #expect(server.questions.count == 2)
        try await server.stop()
    }

    @Test func responsesWithTheWrongIDOrQuestionAreIgnored() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone, behaviour: .decoysFirst)
        let client = try DNSClient.forTesting(server, timeout: .seconds(5))
        let records = try await client.lookup("host.test", .a)
        #expect(records.map(\.data) == [.a(DNSIPv4Address(127, 0, 0, 5))])
        try await server.stop()
    }

    @Test func aServerThatNeverAnswersTimesOutAfterTheConfiguredAttempts() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone, behaviour: .silent)
        let client = try DNSClient.forTesting(server, timeout: .milliseconds(200), attempts: 2)
        let error = await #expect(throws: SIPTransportError.self) { try await client.lookup("host.test", .a) }
        #expect(error?.code == .dnsTimeout)
        // The fake server's loop may read the second query after the client gave up: wait for it
        // (bounded), then check that exactly two were sent. Up to 10 s: a machine busy building can hold the loop back for seconds.
        for _ in 0..<1000 where server.questions.count < 2 { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(server.questions.count == 2)
        try await server.stop()
    }

    @Test func aSilentNameserverIsSkippedForTheNextOne() async throws {
        let silent = try await FakeDNSServer.start(zone: Self.zone, behaviour: .silent)
        let good = try await FakeDNSServer.start(zone: Self.zone)
        let servers = [try silent.address, try good.address]
        #expect(servers.allSatisfy { $0.ipAddress == "127.0.0.1" })
        let client = DNSClient(
            configuration: DNSClient.Configuration(nameservers: servers, timeout: .seconds(3), attempts: 1),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        let records = try await client.lookup("host.test", .a)
        #expect(records.map(\.data) == [.a(DNSIPv4Address(127, 0, 0, 5))])
        // The silent server's loop may record its query after the client moved on: wait (bounded).
        for _ in 0..<1000 where silent.questions.isEmpty { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(silent.questions.count == 1)
        #expect(good.questions.count == 1)
        try await silent.stop()
        try await good.stop()
    }

    @Test func queriesAdvertiseTheEDNSPayloadSizeInAnOPTRecord() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone)
        let client = try DNSClient.forTesting(server)
        _ = try await client.lookup("host.test", .a)
        let query = try #require(server.queries.first)
        #expect(!query.flags.isResponse && query.flags.recursionDesired)
        // RFC 6891 §6.1.2: owner root, TYPE 41, CLASS the UDP payload size.
        #expect(query.additionals.map(\.name) == [.root])
        #expect(query.additionals.map(\.type) == [.opt])
        #expect(query.additionals.map(\.dnsClass.rawValue) == [1232])
        try await server.stop()
    }

    @Test func aServerThatRejectsEDNSIsAskedAgainWithoutIt() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone, behaviour: .formatErrorOnEDNS)
        let client = try DNSClient.forTesting(server)
        let records = try await client.lookup("host.test", .a)
        #expect(records.map(\.data) == [.a(DNSIPv4Address(127, 0, 0, 5))])
        #expect(server.queries.map(\.additionals.count) == [1, 0])
        try await server.stop()
    }

    @Test func aTruncatedAnswerIsAskedAgainOverTCP() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone, behaviour: .truncateOverUDP)
        let client = try DNSClient.forTesting(server)
        let records = try await client.lookup("host.test", .a)
        #expect(records.map(\.data) == [.a(DNSIPv4Address(127, 0, 0, 5))])
        #expect(server.tcpQueryCount == 1)
        #expect(server.queries.count == 2)
        try await server.stop()
    }

    @Test func withoutTCPFallbackTheTruncatedAnswerIsUsedAsItIs() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone, behaviour: .truncateOverUDP)
        let client = DNSClient(
            configuration: DNSClient.Configuration(nameservers: [try server.address], timeout: .seconds(5),
                                                   attempts: 1, tcpFallback: false),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        #expect(try await client.lookup("host.test", .a).isEmpty)
        #expect(server.tcpQueryCount == 0)
        try await server.stop()
    }

    @Test func aHostileAnswerFailsTheLookupWithItsParseCode() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone, behaviour: .pointerLoop)
        let client = try DNSClient.forTesting(server)
        let error = await #expect(throws: SIPTransportError.self) { try await client.lookup("host.test", .a) }
        #expect(error?.code == .dnsBadPointer)
        try await server.stop()
    }

    @Test func servfailIsAnError() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone, behaviour: .serverFailure)
        let client = try DNSClient.forTesting(server)
        let error = await #expect(throws: SIPTransportError.self) { try await client.lookup("host.test", .a) }
        #expect(error?.code == .dnsServerFailure)
        try await server.stop()
    }
}
