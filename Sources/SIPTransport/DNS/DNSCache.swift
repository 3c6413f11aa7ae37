import NIOConcurrencyHelpers
public import NIOCore

/// A TTL cache of lookup results, keyed by name (case-insensitive) and type, on an injected clock.
///
/// Positive answers live for the smallest TTL of the records used (CNAMEs included); negative
/// answers for `min(SOA TTL, SOA MINIMUM)` of the authority section (RFC 2308 §5), or not at all
/// without an SOA. TTLs are capped at ``maxTTL``; a TTL with the top bit set counts as 0
/// (RFC 2181 §8). When full, expired entries go first, then the entry closest to expiry.
public final class DNSCache: Sendable {
    struct Key: Hashable {
        var name: DNSName
        var type: DNSRecordType
    }

    struct Entry {
        var records: [DNSResourceRecord]
        var expires: NIODeadline
    }

    /// The most entries kept. Default 1 024.
    public let maxEntries: Int
    /// The longest an entry is kept, whatever its TTL. Default one hour.
    public let maxTTL: TimeAmount
    let clock: @Sendable () -> NIODeadline
    private let entries = NIOLockedValueBox<[Key: Entry]>([:])

    /// - Parameter clock: the current time; tests pass a clock they advance by hand.
    public init(
        maxEntries: Int = 1_024, maxTTL: TimeAmount = .hours(1),
        clock: @escaping @Sendable () -> NIODeadline = { NIODeadline.now() }
    ) {
        self.maxEntries = max(0, maxEntries)
        self.maxTTL = maxTTL
        self.clock = clock
    }

    /// The cached records, or nil when absent or expired.
    public func records(for name: DNSName, _ type: DNSRecordType) -> [DNSResourceRecord]? {
        let now = clock()
        let key = Key(name: name, type: type)
        return entries.withLockedValue { entries in
            guard let entry = entries[key] else { return nil }
            guard entry.expires > now else {
                entries[key] = nil
                return nil
            }
            return entry.records
        }
    }

    /// Stores records for `ttl` seconds (nothing is stored for a TTL of 0).
    public func store(_ records: [DNSResourceRecord], for name: DNSName, _ type: DNSRecordType, ttl: UInt32) {
        let seconds = ttl & 0x8000_0000 != 0 ? 0 : Int64(ttl)
        guard seconds > 0, maxEntries > 0 else { return }
        let lifetime = min(TimeAmount.seconds(seconds), maxTTL)
        let now = clock()
        let key = Key(name: name, type: type)
        entries.withLockedValue { entries in
            if entries[key] == nil, entries.count >= maxEntries {
                entries = entries.filter { $0.value.expires > now }
                if entries.count >= maxEntries,
                    let soonest = entries.min(by: { $0.value.expires < $1.value.expires })
                {
                    entries[soonest.key] = nil
                }
            }
            entries[key] = Entry(records: records, expires: now + lifetime)
        }
    }

    /// The number of entries, expired ones included until they are looked up or evicted.
    public var count: Int { entries.withLockedValue { $0.count } }

    /// Runs `body` with the entries under the cache's lock.
    func withEntries<T>(_ body: ([Key: Entry]) -> T) -> T { entries.withLockedValue { body($0) } }

    /// Empties the cache.
    public func removeAll() { entries.withLockedValue { $0.removeAll() } }
}
