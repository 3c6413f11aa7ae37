import NIOCore

/// The SSDP socket's handler: reads a datagram, lets ``SSDPAdvertiser`` answer it, and sends the
/// answers unicast to the sender (UDA 1.1 §1.3.3); spread at random over MX seconds for a
/// multicast search. Anything that is no valid M-SEARCH is dropped, and so are searches beyond
/// ``SSDPSearchLimiter``'s allowance for their source; errors are ignored.
final class SSDPHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let advertiser: SSDPAdvertiser
    let limits: SSDPLimits
    /// Used on the channel's event loop only.
    var limiter: SSDPSearchLimiter

    init(
        advertiser: SSDPAdvertiser, limits: SSDPLimits = SSDPLimits(), limiter: SSDPSearchLimiter = SSDPSearchLimiter()
    ) {
        self.advertiser = advertiser
        self.limits = limits
        self.limiter = limiter
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let bytes = envelope.data.readableBytesView
        guard let message = SSDPMessage.parse(bytes, limits: limits), let search = SSDPSearchRequest(message),
            limiter.allows(envelope.remoteAddress.ipAddress ?? "", now: .now())
        else { return }
        let channel = context.channel
        for response in advertiser.responses(to: search, date: httpDate()) {
            let reply = AddressedEnvelope(
                remoteAddress: envelope.remoteAddress, data: ByteBuffer(bytes: response.bytes))
            if let maxWait = search.maxWait {
                let delay = TimeAmount.milliseconds(Int64.random(in: 0..<Int64(maxWait * 1000)))
                channel.eventLoop.scheduleTask(in: delay) { channel.writeAndFlush(reply, promise: nil) }
            } else {
                channel.writeAndFlush(reply, promise: nil)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A datagram socket reports ICMP errors of earlier sends here: nothing to do.
    }
}
