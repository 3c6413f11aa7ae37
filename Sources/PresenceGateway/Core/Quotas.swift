import _GatewayInternals

/// The counts behind the core's limits (docs/security.md), kept by the coordinator alone: the
/// subscriptions each watcher holds through the gateway, the enterprise watchers' legs of each
/// OMA presentity, the dialogs each peer holds, the senders fan-outs are charged to, what was
/// refused, and the peers an operator drained. Components never touch it: the coordinator takes
/// a quota when it admits a request and releases it from the ``DialogChange``s and leg removals
/// the components report (docs/architecture.md, "Lifecycle and quotas").
///
/// The limits themselves are the configuration's; each call is given the one it checks, so that
/// a reload applies to the next request without this holding a copy.
struct Quotas: Sendable {
    /// Subscriptions each watcher holds (OMA legs of an enterprise watcher, watches of an OMA
    /// watcher), by the hash of the watcher's URI: a ``PackedTable`` bucket (12 bytes, 1.14 to 2
    /// per watcher) where a dictionary by URI held 24 bytes in 1.33 to 2.67 buckets, about 40
    /// bytes per bridged pair more (every OMA watcher of the memory benchmark is another). Two
    /// watchers whose URIs hash alike (64 bits, seeded per process) would share one quota.
    private var watchers = PackedTable<Int, Int32>(filler: 0)
    /// OMA legs each OMA presentity has (one per enterprise watcher), by the hash of its URI.
    private var presentities = PackedTable<Int, Int32>(filler: 0)
    /// Subscription dialogs each peer holds, by load key (a configured peer's name or an address).
    private var peers: [String: Int] = [:]
    /// The senders charged for OMA legs, by number (``GatewayCore/Charge``) and back.
    private var senderNumbers: [String: GatewayCore.Charge] = [:]
    private var senderKeys: [GatewayCore.Charge: String] = [:]
    private var lastCharge: GatewayCore.Charge = 0
    /// What the core refused to protect the edge, by reason, for metrics.
    var refusals = GatewayCore.Refusals()
    /// The peers an operator drained, by load key (GatewayCore+Draining.swift).
    var drained: Set<String> = []
    /// With several shards: the configured peers' dialogs held by every shard, to which this
    /// one, `shard`, publishes its own counts (docs/shards.md, "What is shared").
    private var board: PeerBoard?
    private var shard = 0

    // MARK: Watchers

    /// Takes one of `watcher`'s subscriptions; false (nothing taken) when `limit` are held.
    mutating func takeWatcher(_ watcher: String, limit: Int) -> Bool {
        let key = watcher.hashValue
        let held = watchers[key] ?? 0
        guard Int(held) < limit else { return false }
        watchers[key] = held + 1
        return true
    }

    /// Counts a restored subscription of `watcher`, whatever the limit is now.
    mutating func countWatcher(_ watcher: String) { Self.count(watcher, in: &watchers) }

    mutating func releaseWatcher(_ watcher: String) { Self.release(watcher, in: &watchers) }

    // MARK: Presentities

    func presentityHasRoom(_ presentity: String, limit: Int) -> Bool {
        Int(presentities[presentity.hashValue] ?? 0) < limit
    }

    mutating func countPresentityLeg(_ presentity: String) { Self.count(presentity, in: &presentities) }

    mutating func releasePresentityLeg(_ presentity: String) { Self.release(presentity, in: &presentities) }

    private static func count(_ uri: String, in table: inout PackedTable<Int, Int32>) {
        table[uri.hashValue] = (table[uri.hashValue] ?? 0) + 1
    }

    /// One less under `uri`; a count that reaches 0 leaves the table.
    private static func release(_ uri: String, in table: inout PackedTable<Int, Int32>) {
        let key = uri.hashValue
        guard let held = table[key] else { return }
        table[key] = held > 1 ? held - 1 : nil
    }

    // MARK: Peers and senders

    /// Takes one of the dialogs of the peer counted under `key`; false when `limit` are held,
    /// on every shard when the board counts the peer (counted as a refusal).
    mutating func takePeer(_ key: String, limit: Int?) -> Bool {
        let held = peers[key, default: 0]
        if let limit, held + (board?.held(key, besides: shard) ?? 0) >= limit {
            refusals.peerQuota += 1
            return false
        }
        peers[key] = held + 1
        board?.publish(key, held: held + 1, by: shard)
        return true
    }

    /// Counts a dialog of the peer under `key` that is held already (restored or recounted).
    mutating func countPeer(_ key: String) {
        peers[key, default: 0] += 1
        board?.publish(key, held: peers[key, default: 0], by: shard)
    }

    /// One dialog less held by the peer under `key`; a sender that holds nothing more is
    /// forgotten, and its charge number with it.
    mutating func releasePeer(_ key: String) {
        guard let held = peers[key] else { return }
        board?.publish(key, held: held - 1, by: shard)
        if held > 1 {
            peers[key] = held - 1
            return
        }
        peers[key] = nil
        if let charge = senderNumbers.removeValue(forKey: key) { senderKeys[charge] = nil }
    }

    /// Forgets every peer's count, before they are counted again from the dialogs held (a reload
    /// that moved configured peers).
    mutating func resetPeers() {
        for key in peers.keys { board?.publish(key, held: 0, by: shard) }
        peers = [:]
    }

    /// Counts the configured peers' dialogs on `board` from now on, as shard `shard`: the
    /// counts held now are published to it.
    mutating func share(_ board: PeerBoard, shard: Int) {
        self.board = board
        self.shard = shard
        for (key, held) in peers { board.publish(key, held: held, by: shard) }
    }

    /// The charge number the sender under `key` has been given, if any.
    func knownCharge(_ key: String) -> GatewayCore.Charge? { senderNumbers[key] }

    /// The charge number standing for the sender under `key` while it holds anything.
    mutating func charge(_ key: String) -> GatewayCore.Charge {
        if let charge = senderNumbers[key] { return charge }
        repeat { lastCharge &+= 1 } while lastCharge == 0 || senderKeys[lastCharge] != nil
        senderNumbers[key] = lastCharge
        senderKeys[lastCharge] = key
        return lastCharge
    }

    /// The load key a charge stands for (nil: 0, nobody).
    func sender(of charge: GatewayCore.Charge) -> String? { charge == 0 ? nil : senderKeys[charge] }
}
