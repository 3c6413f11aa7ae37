internal import NIOCore
internal import NIOSSL
internal import NIOTLS
internal import SIPMessages

/// One TCP or TLS connection: frames the byte stream with ``SIPMessages/SIPStreamFramer``,
/// answers keep-alive pings, closes the connection when framing is lost, the buffer limit is
/// exceeded, or it has been idle too long, and tells the transport when it is ready (TCP:
/// connected; TLS: handshake done, peer certificate names known) and when it closes.
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

    init(transport: SIPNetworkTransport, id: SIPConnectionID, kind: SIPTransportKind, framer: SIPStreamFramer,
         ready: EventLoopPromise<Void>) {
        self.transport = transport
        self.id = id
        self.kind = kind
        self.framer = framer
        self.ready = ready
    }

    private func completeReady(_ result: Result<Void, any Error>) {
        guard !readyDone else { return }
        readyDone = true
        ready.completeWith(result)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if kind == .tcp, context.channel.isActive { completeReady(.success(())) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if kind == .tcp { completeReady(.success(())) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        completeReady(.failure(SIPTransportError(.connectionClosed, "\(id) closed before it was ready")))
        transport.connectionClosed(id)
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let tls = event as? TLSUserEvent, case .handshakeCompleted = tls {
            if let certificate = try? context.pipeline.syncOperations.nioSSL_peerCertificate() {
                peerCertificateNames = SIPPeerCertificateNames.names(of: certificate)
            }
            transport.connectionReady(id, peerCertificateNames: peerCertificateNames)
            completeReady(.success(()))
        } else if event is IdleStateHandler.IdleStateEvent {
            transport.connectionIdle(id)
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
                    transport.receiveStream(bytes, connection: id, kind: kind, peerCertificateNames: peerCertificateNames)
                case .ping:
                    context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "\r\n")), promise: nil)
                case .pong:
                    break
                }
            }
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
