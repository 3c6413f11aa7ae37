import Atomics
public import NIOCore

/// What the shards of one gateway share of each configured peer (docs/shards.md, "What is
/// shared"): its `rate-limit`, one lock-free cell all shards take from, and the subscription
/// dialogs it holds against its `max-subscriptions`, one count per shard that only that shard
/// writes and every shard sums. A peer's requests and dialogs spread over the shards with its
/// watchers' addresses of record; this way it is held to its limits as configured however they
/// spread. One board serves one configuration; a reload makes a new one, to which each shard
/// publishes the dialogs it holds (``GatewayCore/share(_:)``).
public final class PeerBoard: Sendable {
    struct Peer: Sendable {
        let rate: RateCell?
        /// Each shard's count of the peer's dialogs.
        let held: [ManagedAtomic<Int>]
    }

    let shards: Int
    private let peers: [String: Peer]

    /// A board for the configured peers of `configuration` (by name), for `shards` shards.
    public init(_ configuration: GatewayConfiguration, shards: Int) {
        self.shards = shards
        var peers: [String: Peer] = [:]
        for peer in configuration.peers {
            peers[peer.name] = Peer(
                rate: peer.rateLimit.map { RateCell(rate: $0, burst: max($0, 1)) },
                held: (0..<shards).map { _ in ManagedAtomic(0) })
        }
        self.peers = peers
    }

    /// Whether the board counts the peer named `name` (a configured peer's load key).
    func counts(_ name: String) -> Bool { peers[name] != nil }

    /// Takes one request of the peer `name` from its rate limit, for every shard; nil when the
    /// board has no rate for it.
    func takeRequest(_ name: String, now: NIODeadline) -> Bool? {
        peers[name]?.rate?.take(now: Int64(now.uptimeNanoseconds))
    }

    /// The peer `name`'s dialogs held by the shards other than `shard`.
    func held(_ name: String, besides shard: Int) -> Int {
        guard let peer = peers[name] else { return 0 }
        var sum = 0
        for (index, count) in peer.held.enumerated() where index != shard {
            sum += count.load(ordering: .relaxed)
        }
        return sum
    }

    /// Sets `shard`'s count of the peer `name`'s dialogs.
    func publish(_ name: String, held: Int, by shard: Int) {
        peers[name]?.held[shard].store(held, ordering: .relaxed)
    }
}

/// A rate limit that several threads take from without a lock: the generic cell rate algorithm
/// (ITU-T I.371), equal to a token bucket of `rate` tokens a second up to `burst` that starts
/// full. Its one word is the theoretical arrival time of the next request; a request is let
/// through when that time is at most `burst - 1` intervals ahead of now, and moves it one
/// interval on.
final class RateCell: Sendable {
    /// Nanoseconds between requests at the rate, and how far ahead of now the next request's
    /// time may be.
    let interval: Int64
    let tolerance: Int64
    private let next = ManagedAtomic<Int64>(0)

    init(rate: Double, burst: Double) {
        interval = Int64((1e9 / rate).rounded())
        tolerance = Int64((1e9 / rate * (burst - 1)).rounded())
    }

    /// Whether a request at `now` (nanoseconds of a monotonic clock) is let through.
    func take(now: Int64) -> Bool {
        var current = next.load(ordering: .relaxed)
        while true {
            let start = max(current, now)
            guard start - now <= tolerance else { return false }
            let (exchanged, found) = next.compareExchange(
                expected: current, desired: start + interval, ordering: .relaxed)
            if exchanged { return true }
            current = found
        }
    }
}
