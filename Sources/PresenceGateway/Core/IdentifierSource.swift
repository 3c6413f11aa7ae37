import SIPTransport

/// Where the core gets Call-IDs, tags, multipart boundaries and refresh jitter (random in the
/// runtime, predictable in tests), and the keys of its tables.
public struct IdentifierSource: Sendable {
    private var next: @Sendable (Int) -> String
    private var callIDSource: (@Sendable () -> String)?
    private var counter = 0
    private var jitterSource: @Sendable () -> Double
    /// What every tag starts with: the mark of the shard whose core this is (``ShardMark``), so
    /// that a peer's request in one of its dialogs finds it (docs/shards.md); empty for the
    /// predictable tags of tests.
    private var tagMark = ""
    /// Where this node's table keys start: 0 alone, a node's ordinal × 2⁴⁰ when several nodes
    /// share a store, so the keys of a node's records never meet another node's (docs/state.md).
    var keyBase = 0
    /// Where this core's keys start within its node's: its shard × 2³², so that a record says
    /// which shard made it (``shard(ofKey:)``) and a restore puts it back there (docs/shards.md).
    private var shardBase = 0
    /// The last table key handed out, counted from ``keyBase`` + ``shardBase``.
    private var lastKey = 0

    /// Keys per node: 2⁴⁰.
    static let keyRangeSize = 1 << 40
    /// Keys per shard: 2³².
    static let shardRangeSize = 1 << 32

    /// The shard whose core handed out `key`: what the restore sends its record to.
    public static func shard(ofKey key: Int) -> Int { (key % keyRangeSize) / shardRangeSize }

    /// `token(n)` returns a unique token for the n-th call; `jitter` a number in 0..<1; `callID`
    /// a new Call-ID (by default the next token followed by `@gateway`).
    public init(
        token: @escaping @Sendable (Int) -> String, jitter: @escaping @Sendable () -> Double,
        callID: (@Sendable () -> String)? = nil
    ) {
        self.next = token
        self.jitterSource = jitter
        self.callIDSource = callID
    }

    /// Random tokens and Call-IDs, and jitter, for the core of `shard`. A tag is the shard's
    /// two-letter mark and 64 random bits in base 36 (at most 15 characters) and a Call-ID 90
    /// random bits in 15 characters: both short enough for a Swift string to hold them inline
    /// instead of in a heap allocation of their own, which every dialog would keep for hours.
    /// 90 bits keep Call-IDs globally unique (RFC 3261 §8.1.1.4 recommends cryptographically
    /// random ones): among a billion Call-IDs the chance of any two being equal is below 10^-9.
    /// A Call-ID carries no mark: every message in a dialog carries the gateway's tag too.
    public static func random(shard: Int = 0) -> IdentifierSource {
        var source = IdentifierSource(
            token: { _ in String(UInt64.random(in: 0...UInt64.max), radix: 36) },
            jitter: { Double.random(in: 0..<1) }, callID: randomCallID)
        source.tagMark = ShardMark.mark(shard)
        source.shardBase = shard * shardRangeSize
        return source
    }

    /// 15 characters, 6 random bits each, from the `word` characters of RFC 3261 §25.1.
    @Sendable static func randomCallID() -> String {
        var generator = SystemRandomNumberGenerator()
        var bits: UInt64 = generator.next()
        let more: UInt64 = generator.next()
        var bytes: [UInt8] = []
        for i in 0..<15 {
            if i == 10 { bits = more }
            bytes.append(callIDAlphabet[Int(bits & 63)])
            bits >>= 6
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let callIDAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-.".utf8)

    mutating func token() -> String {
        counter += 1
        return next(counter)
    }

    mutating func tag() -> String { tagMark + token() }

    /// A table key never handed out before by this core (nor restored into its range).
    mutating func key() -> Int {
        lastKey += 1
        return keyBase + shardBase + lastKey
    }

    /// Keys handed out after a restore do not repeat a restored one of this core's range (a
    /// dead node's records taken over keep their own keys, in that node's range; a shard's
    /// records restored into another core, when fewer shards run, keep theirs).
    mutating func noteRestoredKey(_ key: Int) {
        let base = keyBase + shardBase
        guard key > base, key - base < Self.shardRangeSize else { return }
        lastKey = max(lastKey, key - base)
    }
    mutating func callID() -> String { callIDSource?() ?? token() + "@gateway" }
    mutating func boundary() -> String { "gw" + token() }
    func jitter() -> Double { jitterSource() }
}
