import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The SSDP socket's handler: reads a datagram, lets ``SSDPAdvertiser`` answer it, and sends the
/// answers unicast to the sender (UDA 1.1 §1.3.3); spread at random over MX seconds for a
/// multicast search. Anything that is no valid M-SEARCH is dropped; errors are ignored.
final class SSDPHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let advertiser: SSDPAdvertiser
    let limits: SSDPLimits

    init(advertiser: SSDPAdvertiser, limits: SSDPLimits = SSDPLimits()) {
        self.advertiser = advertiser
        self.limits = limits
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let bytes = envelope.data.readableBytesView
        guard let message = SSDPMessage.parse(bytes, limits: limits), let search = SSDPSearchRequest(message) else {
            return
        }
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

/// The current time as an HTTP date (RFC 9110 §5.6.7, IMF-fixdate), for DATE fields.
func httpDate() -> String {
    var now = time(nil)
    var parts = tm()
    gmtime_r(&now, &parts)
    let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    let day = days[Int(parts.tm_wday) % 7]
    let month = months[Int(parts.tm_mon) % 12]
    return "\(day), \(two(parts.tm_mday)) \(month) \(parts.tm_year + 1900) "
        + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
}
