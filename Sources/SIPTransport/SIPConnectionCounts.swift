internal import NIOConcurrencyHelpers

/// The stream connections open on one side, counted against the side's limits
/// (``SIPNetworkTransport/Configuration/maxInboundConnections``,
/// ``SIPNetworkTransport/Configuration/maxInboundConnectionsPerAddress``,
/// ``SIPNetworkTransport/Configuration/maxOutboundConnections``): one instance per transport,
/// or one shared by the shards of a ``SIPShardedTransport``, whose listeners the kernel spreads
/// a peer's connections over. Touched when a connection opens or closes, never per message.
public final class SIPConnectionCounts: Sendable {
    private struct Counts {
        var inbound = 0
        var byAddress: [String: Int] = [:]
        var outbound = 0
    }

    /// Why an inbound connection was refused.
    enum Refusal { case inboundLimit, addressLimit }

    private let counts = NIOLockedValueBox(Counts())

    public init() {}

    /// Takes a slot for a connection accepted from `host` (`counted`: against the limit in all
    /// too, for an address that is not a configured peer's), or says which limit refuses it.
    func admitInbound(from host: String, counted: Bool, limits: SIPNetworkTransport.Configuration) -> Refusal? {
        counts.withLockedValue { counts in
            if counted, counts.inbound >= limits.maxInboundConnections { return .inboundLimit }
            if counts.byAddress[host, default: 0] >= limits.maxInboundConnectionsPerAddress { return .addressLimit }
            if counted { counts.inbound += 1 }
            counts.byAddress[host, default: 0] += 1
            return nil
        }
    }

    /// Gives back the slot of an inbound connection from `host`.
    func releaseInbound(from host: String, counted: Bool) {
        counts.withLockedValue { counts in
            if counted { counts.inbound -= 1 }
            let left = counts.byAddress[host, default: 1] - 1
            counts.byAddress[host] = left > 0 ? left : nil
        }
    }

    /// Whether another counted outbound connection fits with `pending` more being opened.
    func outboundFits(pending: Int, limit: Int) -> Bool {
        counts.withLockedValue { $0.outbound + pending < limit }
    }

    func openedOutbound() { counts.withLockedValue { $0.outbound += 1 } }
    func closedOutbound() { counts.withLockedValue { $0.outbound -= 1 } }
}
