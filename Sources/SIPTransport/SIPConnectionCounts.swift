internal import NIOConcurrencyHelpers

/// The stream connections open on one side, counted against the side's limits
/// (``SIPNetworkTransport/Configuration/maxInboundConnections``,
/// ``SIPNetworkTransport/Configuration/maxInboundConnectionsPerAddress``,
/// ``SIPNetworkTransport/Configuration/maxOutboundConnections``): one instance per transport,
/// or one shared by the shards of a ``SIPShardedTransport``, whose listeners the kernel spreads
/// a peer's connections over; and which connection, of any shard, is open to each remote
/// address (``connection(to:)``). Written when a connection opens or closes; read for a request
/// to a stream target only when the sending shard has no connection there itself.
public final class SIPConnectionCounts: Sendable {
    private struct Counts {
        var inbound = 0
        var byAddress: [String: Int] = [:]
        var outbound = 0
    }

    /// Why an inbound connection was refused.
    enum Refusal { case inboundLimit, addressLimit }

    private let counts = NIOLockedValueBox(Counts())
    /// The open stream connections by remote address (host in canonical form, no server name).
    private let remotes = NIOLockedValueBox<[SIPTarget: SIPConnectionID]>([:])

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

    func opened(_ id: SIPConnectionID, to remote: SIPTarget) {
        remotes.withLockedValue { $0[Self.key(remote)] = id }
    }

    func closed(_ id: SIPConnectionID, to remote: SIPTarget) {
        remotes.withLockedValue { remotes in
            if remotes[Self.key(remote)] == id { remotes[Self.key(remote)] = nil }
        }
    }

    /// A connection open to `target`, on whichever shard holds it; nil when none is.
    func connection(to target: SIPTarget) -> SIPConnectionID? {
        let key = Self.key(target)
        return remotes.withLockedValue { $0[key] }
    }

    private static func key(_ target: SIPTarget) -> SIPTarget {
        var key = SIPHostAddress.normalized(target)
        key.serverName = nil
        return key
    }
}
