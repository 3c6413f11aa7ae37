import Foundation
import NIOCore

extension GatewayConfiguration {
    /// The most shards a gateway runs: one per event loop, each marked with two capital letters
    /// (`ShardMark`, docs/shards.md), of which there are more; 64 is past any machine it is
    /// built for.
    public static let threadsLimit = 64

    /// Reads `threads:`: a number from 1 to ``threadsLimit``, or `auto` for one per core the
    /// process may use (``usableCores()``), which is also what no `threads:` runs
    /// (docs/shards.md).
    static func threads(_ node: ConfigurationNode?) throws(ConfigurationError) -> Int {
        guard let node, try node.string() != "auto" else { return usableCores() }
        return try node.integer(in: 1...threadsLimit)
    }

    /// The cores this process may use, at most ``threadsLimit``: those of its cgroup's CPU set
    /// and quota (`System.coreCount`) and of its CPU affinity (`Cpus_allowed` in proc(5)'s
    /// /proc/self/status: `taskset`, systemd's `CPUAffinity=`), whichever are fewer.
    static func usableCores() -> Int {
        var cores = System.coreCount
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let mask = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed:") })
        {
            let allowed = mask.dropFirst("Cpus_allowed:".count).compactMap(\.hexDigitValue)
                .reduce(0) { $0 + $1.nonzeroBitCount }
            if allowed > 0 { cores = min(cores, allowed) }
        }
        return min(max(1, cores), threadsLimit)
    }

    /// Whether the gateway serves watcher information for any presentity
    /// (``servesWatcherInfo(of:)``): with several shards, they share their watchers.
    var servesAnyWatcherInfo: Bool {
        !policies.isEmpty || linkedIdentities.contains(where: \.publishToEnterprise)
    }

    /// This configuration as one of `count` shards runs it: what is counted for the whole
    /// gateway or per sender that is no configured peer (the table of dialogs, an unconfigured
    /// sender's subscriptions and request rate, each presentity's watchers) is divided among the
    /// shards, each taking its share (docs/shards.md, "What is shared"). Those requests and a
    /// presentity's watchers are spread over the shards by the watchers' addresses of record, so
    /// each shard sees about its share of them. A configured peer's `rate-limit` and
    /// `max-subscriptions` stay whole: the shards count them together on a ``PeerBoard``. What
    /// is counted per watcher or per request (a watcher's subscriptions, a batch's size, a
    /// sender's fan-out) is whole on its shard and stays; so do the transaction tables, which are
    /// each shard's own.
    public func share(of count: Int) -> GatewayConfiguration {
        guard count > 1 else { return self }
        func part(_ whole: Int) -> Int { max(1, (whole + count - 1) / count) }
        var shared = self
        shared.limits.dialogs = part(limits.dialogs)
        shared.limits.subscriptionsPerPeer = part(limits.subscriptionsPerPeer)
        shared.limits.subscriptionsPerPresentity = part(limits.subscriptionsPerPresentity)
        shared.limits.unconfiguredPeerRate = limits.unconfiguredPeerRate / Double(count)
        return shared
    }
}
