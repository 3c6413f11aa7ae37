import NIOCore

/// Decides whether a response answers the query: same ID, QR set, one question equal to the
/// query's (RFC 5452 §9.1).
struct DNSResponseMatcher: Sendable {
    let id: UInt16
    let question: DNSQuestion
    let limits: DNSMessage.ParseLimits

    /// The message when it answers the query; nil when it is someone else's; a failure when it
    /// carries the query's ID but cannot be parsed.
    func match(_ buffer: ByteBuffer) -> Result<DNSMessage, SIPTransportError>? {
        let bytes = Array(buffer.readableBytesView)
        guard bytes.count >= 2, UInt16(bytes[0]) << 8 | UInt16(bytes[1]) == id else { return nil }
        let message: DNSMessage
        do {
            message = try DNSMessage(parsing: bytes, limits: limits)
        } catch {
            return .failure(error)
        }
        guard message.flags.isResponse, message.questions.count == 1,
            message.questions[0].name == question.name, message.questions[0].type == question.type,
            message.questions[0].dnsClass == question.dnsClass
        else { return nil }
        return .success(message)
    }
}

/// Completes the query's promise with the first datagram from the server that answers it.
/// Datagrams from elsewhere or for another query are ignored.
final class DNSDatagramResponseHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    let server: SocketAddress
    let matcher: DNSResponseMatcher
    let promise: EventLoopPromise<DNSMessage>

    init(server: SocketAddress, matcher: DNSResponseMatcher, promise: EventLoopPromise<DNSMessage>) {
        self.server = server
        self.matcher = matcher
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = Self.unwrapInboundIn(data)
        guard envelope.remoteAddress == server, let result = matcher.match(envelope.data) else { return }
        promise.completeWith(result.mapError { $0 as any Error })
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP errors and the like: keep waiting; the timeout ends the attempt.
    }
}

/// Completes the query's promise with the first length-delimited message on a TCP connection
/// that answers it; fails it when the connection closes or errs first.
final class DNSStreamResponseHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    let matcher: DNSResponseMatcher
    let promise: EventLoopPromise<DNSMessage>

    init(matcher: DNSResponseMatcher, promise: EventLoopPromise<DNSMessage>) {
        self.matcher = matcher
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let result = matcher.match(Self.unwrapInboundIn(data)) else { return }
        promise.completeWith(result.mapError { $0 as any Error })
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(SIPTransportError(.dnsServerFailure, "the TCP connection closed before an answer"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error as? SIPTransportError ?? SIPTransportError(.dnsServerFailure, "TCP: \(error)"))
        context.close(promise: nil)
    }
}

/// Splits a TCP stream into DNS messages, each preceded by a two-octet length
/// (RFC 1035 §4.2.2). A length above `maxLength` fails the connection.
struct DNSLengthPrefixDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer
    let maxLength: Int

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self) else { return .needMoreData }
        guard Int(length) <= maxLength else {
            throw SIPTransportError(
                .dnsLimitExceeded, "TCP message of \(length) octets exceeds the limit of \(maxLength)")
        }
        guard buffer.readableBytes >= 2 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 2)
        guard let frame = buffer.readSlice(length: Int(length)) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(frame))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws
        -> DecodingState
    {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}
