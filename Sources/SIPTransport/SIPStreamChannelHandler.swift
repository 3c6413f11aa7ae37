internal import NIOCore
internal import NIOSSL
internal import NIOTLS
internal import SIPMessages

/// One TCP or TLS connection: frames the byte stream with ``SIPMessages/SIPStreamFramer``,
/// answers keep-alive pings, closes the connection when framing is lost, the buffer limit is
/// exceeded, it has been idle too long, its TLS handshake or a message takes too long, or (for a
/// connection the transport opened) the server's certificate names none of the expected names;
/// and tells the transport when it is ready (TCP: connected; TLS: handshake done, names checked,
/// peer certificate names known) and when it closes.
///
/// RFC 3261 §18.3: "In the case of stream-oriented transports such as TCP, the Content-Length
/// header field indicates the size of the body." A stream whose framing is lost cannot be
/// resynchronised, so it is closed (a message refused for its size is answered with 413 or 513
/// first, RFC 3261 §21.4.11, §21.5.14). RFC 5626 §3.5.1: a double-CRLF ping is answered with a
/// single CRLF pong.
final class SIPStreamChannelHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let transport: SIPNetworkTransport
    private let id: SIPConnectionID
    private let kind: SIPTransportKind
    private var framer: SIPStreamFramer
    private let ready: EventLoopPromise<Void>
    private var readyDone = false
    private var failed = false
    private var peerCertificateNames: [String] = []
    /// For TLS connections the transport opens: the names the server's certificate must match
    /// (RFC 5922 §4); nil: not checked (inbound connections, or name checks turned off).
    private let expectedServerNames: [String]?
    private let tlsHandshakeTimeout: TimeAmount
    private let headerTimeout: TimeAmount
    private var handshakeTimer: Scheduled<Void>?
    /// Runs from the first byte of a message until the message is whole.
    private var messageTimer: Scheduled<Void>?

    init(
        transport: SIPNetworkTransport, id: SIPConnectionID, kind: SIPTransportKind, framer: SIPStreamFramer,
        ready: EventLoopPromise<Void>, expectedServerNames: [String]? = nil,
        tlsHandshakeTimeout: TimeAmount = .seconds(10), headerTimeout: TimeAmount = .seconds(10)
    ) {
        self.transport = transport
        self.id = id
        self.kind = kind
        self.framer = framer
        self.ready = ready
        self.expectedServerNames = expectedServerNames
        self.tlsHandshakeTimeout = tlsHandshakeTimeout
        self.headerTimeout = headerTimeout
    }

    private func completeReady(_ result: Result<Void, any Error>) {
        guard !readyDone else { return }
        readyDone = true
        ready.completeWith(result)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if kind == .tcp, context.channel.isActive { completeReady(.success(())) }
        if kind == .tls {
            // Without it, a peer that connects and never finishes its handshake would hold a
            // connection slot until the idle timeout (300 s by default).
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            handshakeTimer = context.eventLoop.assumeIsolated().scheduleTask(in: tlsHandshakeTimeout) {
                let (handler, context) = bound.value
                handler.handshakeTimedOut(context: context)
            }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimers()
    }

    private func cancelTimers() {
        handshakeTimer?.cancel()
        handshakeTimer = nil
        messageTimer?.cancel()
        messageTimer = nil
    }

    private func handshakeTimedOut(context: ChannelHandlerContext) {
        handshakeTimer = nil
        guard !readyDone else { return }
        transport.connectionTimedOut(id, kind: kind, .tlsHandshake)
        completeReady(.failure(SIPTransportError(.tlsFailed, "\(id): TLS handshake not done in time")))
        context.close(promise: nil)
    }

    private func messageTimedOut(context: ChannelHandlerContext) {
        messageTimer = nil
        guard !failed else { return }
        failed = true
        transport.connectionTimedOut(id, kind: kind, .header)
        context.close(promise: nil)
    }

    /// Starts the message clock when bytes of a message wait in the framer and it is not
    /// running; stops it when nothing waits. `read` is the latest read: bytes held between
    /// messages may be the first half of a CRLF ping (RFC 5626 §3.5.1), which is no message, so
    /// the clock starts only when a waiting byte is something else; such a byte can only be
    /// among the read's last `bufferedByteCount` bytes (an earlier one would have started it).
    private func updateMessageTimer(context: ChannelHandlerContext, read: ByteBuffer) {
        let waiting = framer.bufferedByteCount
        guard waiting > 0 else {
            messageTimer?.cancel()
            messageTimer = nil
            return
        }
        guard messageTimer == nil,
            read.readableBytesView.suffix(waiting).contains(where: { $0 != 0x0D && $0 != 0x0A })
        else { return }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        messageTimer = context.eventLoop.assumeIsolated().scheduleTask(in: headerTimeout) {
            let (handler, context) = bound.value
            handler.messageTimedOut(context: context)
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        if kind == .tcp { completeReady(.success(())) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimers()
        completeReady(.failure(SIPTransportError(.connectionClosed, "\(id) closed before it was ready")))
        transport.connectionClosed(id)
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let tls = event as? TLSUserEvent, case .handshakeCompleted = tls {
            handshakeTimer?.cancel()
            handshakeTimer = nil
            let certificate = try? context.pipeline.syncOperations.nioSSL_peerCertificate()
            if let certificate {
                peerCertificateNames = SIPPeerCertificateNames.names(of: certificate)
            }
            if let expected = expectedServerNames {
                // RFC 5922 §4: the chain is verified; now the server must be the one we meant.
                let presented = certificate.map(SIPServerIdentity.presentedNames(of:)) ?? []
                guard SIPServerIdentity.matches(presented: presented, anyOf: expected) else {
                    transport.serverNameRefused(id, expected: expected, presented: presented)
                    failed = true
                    completeReady(
                        .failure(
                            SIPTransportError(
                                .tlsFailed,
                                "\(id): the server's certificate names \(presented) match none of \(expected) (RFC 5922 §4)"
                            )))
                    context.close(promise: nil)
                    return
                }
            }
            transport.connectionReady(id, peerCertificateNames: peerCertificateNames)
            completeReady(.success(()))
        } else if event is IdleStateHandler.IdleStateEvent {
            transport.connectionTimedOut(id, kind: kind, .idle)
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        transport.connectionError(id, kind: kind, error)
        completeReady(.failure(error))
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let buffer = unwrapInboundIn(data)
        do {
            try framer.append(buffer.readableBytesView)
            while !failed, let event = try framer.next() {
                switch event {
                case .message(let bytes):
                    messageTimer?.cancel()
                    messageTimer = nil
                    transport.receiveStream(
                        bytes, connection: id, kind: kind, peerCertificateNames: peerCertificateNames)
                case .ping:
                    context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "\r\n")), promise: nil)
                case .pong:
                    break
                }
            }
            if !failed { updateMessageTimer(context: context, read: buffer) }
        } catch {
            failed = true
            // A message refused for its size is answered before the connection closes.
            let channel = context.channel
            transport.framingLost(id, kind: kind, error, refused: framer.refusedHeaderSection).whenComplete { _ in
                channel.close(promise: nil)
            }
        }
    }
}
