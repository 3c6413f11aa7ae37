public import GatewayState

/// Which shard restores each record (docs/shards.md, "Restoring with a different number of
/// shards").
extension GatewayCore {
    /// The records of `records` each of `count` shards restores, in shard order.
    ///
    /// A record keyed by a table key goes to the shard whose core handed the key out
    /// (``IdentifierSource/shard(ofKey:)``), modulo `count`: every record of a watcher's dialogs
    /// and the legs made for it were made by one core, so they stay together, on the shard the
    /// messages for them go to by their tags' mark by the same rule (`ShardMap`). What the
    /// gateway learnt of the enterprise rather than of a dialog (the pools it was sent to, that
    /// it refuses batches) goes to every shard. The rest (linked identities' publications, the
    /// UPnP user) is the first shard's, which runs the node-wide work (``runsNodeWideWork``).
    public static func partition(_ records: [StateRecord], into count: Int) -> [[StateRecord]] {
        var parts = [[StateRecord]](repeating: [], count: count)
        guard count > 1 else {
            parts[0] = records
            return parts
        }
        for record in records {
            if let key = Int(record.key) {
                parts[IdentifierSource.shard(ofKey: key) % count].append(record)
            } else if record.kind == RecordKind.pool.rawValue || record.kind == RecordKind.flag.rawValue {
                for index in parts.indices { parts[index].append(record) }
            } else {
                parts[0].append(record)
            }
        }
        return parts
    }
}
