internal import NIOCore

/// Reads datagrams off a UDP listener and hands each one to the transport as one message
/// (RFC 3261 §18.3: a datagram carries exactly one message).
final class SIPDatagramChannelHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let transport: SIPNetworkTransport

    init(transport: SIPNetworkTransport) { self.transport = transport }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let source = SIPHostAddress.target(.udp, envelope.remoteAddress),
            let local = SIPHostAddress.target(.udp, context.channel.localAddress)
        else { return }
        let bytes = Array(envelope.data.readableBytesView)
        transport.receive(bytes, kind: .udp, source: source, local: local, connection: nil, peerCertificateNames: [])
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP errors and the like surface here; a datagram socket stays open.
        transport.logDatagramError(error)
    }
}
