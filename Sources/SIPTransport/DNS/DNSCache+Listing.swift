public import NIOCore

extension DNSCache {
    /// One cached answer as the admin API lists it (README, "Runtime control": `GET /dns`).
    public struct Listed: Sendable, Hashable, Codable {
        /// The name asked for and the record type.
        public var name: String
        public var type: String
        /// The answer's records (CNAMEs followed included), each as `TYPE data`; empty for a
        /// cached negative answer (RFC 2308).
        public var targets: [String]
        /// Whole seconds until the entry expires (0: expired, dropped at its next look-up).
        public var ttlRemaining: Int
    }

    /// A page of the entries, by name then type, and how many there are. The cache is bounded
    /// (``maxEntries``), so the sort under its lock is too.
    public func listed(offset: Int, limit: Int) -> (total: Int, page: [Listed]) {
        let now = clock()
        let all = withEntries { entries in
            entries.map { key, entry in
                Listed(
                    name: "\(key.name)", type: "\(key.type)",
                    targets: entry.records.map { "\($0.data.type) \($0.data)" },
                    ttlRemaining: max(0, Int((entry.expires - now).nanoseconds / 1_000_000_000)))
            }
        }.sorted { ($0.name, $0.type) < ($1.name, $1.type) }
        let start = min(max(offset, 0), all.count)
        return (all.count, Array(all[start..<min(start + max(limit, 0), all.count)]))
    }
}
