internal import NIOCore

/// Reads datagrams off a UDP listener and hands each one to the transport as one message
/// (RFC 3261 §18.3: a datagram carries exactly one message).
///
/// The listener's own address and the last sender's address are kept as ``SIPTarget``s, so a
/// datagram from the same peer as the one before costs no address formatting (two strings per
/// datagram otherwise, measured in the gateway's relay benchmark).
final class SIPDatagramChannelHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>

    private let transport: SIPNetworkTransport
    private var local: SIPTarget?
    private var lastSource: (address: SocketAddress, target: SIPTarget)?

    init(transport: SIPNetworkTransport) { self.transport = transport }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let source = sourceTarget(envelope.remoteAddress), let local = localTarget(context) else { return }
        let bytes = Array(envelope.data.readableBytesView)
        transport.receive(bytes, kind: .udp, source: source, local: local, connection: nil, peerCertificateNames: [])
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // ICMP errors and the like surface here; a datagram socket stays open.
        transport.logDatagramError(error)
    }

    private func sourceTarget(_ address: SocketAddress) -> SIPTarget? {
        if let last = lastSource, last.address == address { return last.target }
        guard let target = SIPHostAddress.target(.udp, address) else { return nil }
        lastSource = (address, target)
        return target
    }

    private func localTarget(_ context: ChannelHandlerContext) -> SIPTarget? {
        if let local { return local }
        local = SIPHostAddress.target(.udp, context.channel.localAddress)
        return local
    }
}
