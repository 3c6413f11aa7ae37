public import NIOCore

/// How many searches one source address may have answered: a token bucket per address, so that
/// forged M-SEARCHes cannot turn the device into an amplifier (four answers of ~350 bytes for
/// one search of ~100; UDA 1.1 §1.3.3 answers go to whatever source a datagram names).
public struct SSDPSearchLimiter: Sendable {
    /// Searches answered at once from one address, and per second after that.
    public var burst: Double
    public var perSecond: Double
    /// Addresses remembered; when full, the table starts again (every address gets its burst).
    public var maxSources: Int
    private var buckets: [String: (tokens: Double, at: NIODeadline)] = [:]

    public init(burst: Double = 10, perSecond: Double = 2, maxSources: Int = 1024) {
        self.burst = burst
        self.perSecond = perSecond
        self.maxSources = maxSources
    }

    /// True when a search from `source` at `now` is answered (and counted).
    public mutating func allows(_ source: String, now: NIODeadline) -> Bool {
        var bucket = buckets[source] ?? (burst, now)
        let seconds = Double((now - bucket.at).nanoseconds) / 1e9
        bucket.tokens = min(burst, bucket.tokens + max(0, seconds) * perSecond)
        bucket.at = now
        let allowed = bucket.tokens >= 1
        if allowed { bucket.tokens -= 1 }
        if buckets[source] == nil, buckets.count >= maxSources { buckets.removeAll(keepingCapacity: true) }
        buckets[source] = bucket
        return allowed
    }
}
