public import Foundation
import NIOCore

/// What the gateway saw of one peer or next hop, as `GET /peers` reports it (README, "Runtime
/// control"): when a request to it last succeeded, when one last failed and why (a TLS handshake
/// or certificate name refused, no answer, 403, 503…), and how many requests it sent the gateway
/// per second, and how many of those were refused, over the last ten seconds.
public struct PeerHealth: Sendable, Codable, Equatable {
    /// The configured peer's name, `next-hop <uri>` for a side's next hop, or the address of an
    /// unconfigured sender.
    public var name: String
    public var side: String
    public var configured: Bool
    public var lastSuccess: Date?
    public var lastFailure: Failure?
    /// Requests it sent the gateway since the start, and how many of them were refused.
    public var requests: Int
    public var rejections: Int
    public var requestsPerSecond: Double
    public var rejectionsPerSecond: Double
    /// No new dialog is made from or toward it (`PUT /peers/{name}`, GatewayCore+Draining.swift).
    public var drained = false

    public struct Failure: Sendable, Codable, Equatable {
        public var time: Date
        public var reason: String
    }
}

/// The runtime's record behind ``PeerHealth``: configured peers and next hops always, and at
/// most ``maxAddresses`` unconfigured senders (the least recently seen is dropped), so a flood
/// from many addresses cannot grow it.
struct PeerHealthTable {
    static let maxAddresses = 256
    /// One-second buckets of the last ``Window/seconds`` seconds.
    struct Window {
        static let seconds = 10
        var counts = [Int](repeating: 0, count: seconds)
        var second = 0

        mutating func add(at now: Int) {
            advance(to: now)
            counts[now % Self.seconds] += 1
        }

        mutating func advance(to now: Int) {
            if now - second >= Self.seconds {
                counts = [Int](repeating: 0, count: Self.seconds)
            } else if now > second {
                for s in (second + 1)...now { counts[s % Self.seconds] = 0 }
            }
            second = max(second, now)
        }

        mutating func rate(at now: Int) -> Double {
            advance(to: now)
            return Double(counts.reduce(0, +)) / Double(Self.seconds)
        }
    }

    struct Entry {
        var side: String
        var configured: Bool
        var lastSuccess: Date?
        var lastFailure: PeerHealth.Failure?
        var requests = 0
        var rejections = 0
        var recentRequests = Window()
        var recentRejections = Window()
        var lastSeen = 0
    }

    private(set) var entries: [String: Entry] = [:]
    private var addresses = 0
    /// Unconfigured senders kept whatever their age (drained ones: an operator must be able to
    /// see and undrain them, README "Runtime control").
    private(set) var pinned: Set<String> = []

    /// Keeps `name` from being dropped as the least recently seen (or lets it go again).
    mutating func pin(_ name: String, _ keep: Bool) {
        if keep { pinned.insert(name) } else { pinned.remove(name) }
    }

    init(configured: [(name: String, side: String)]) {
        for peer in configured { entries[peer.name] = Entry(side: peer.side, configured: true) }
    }

    private static func second(_ now: NIODeadline) -> Int { Int(now.uptimeNanoseconds / 1_000_000_000) }

    /// After a reload: the new configured peers are listed; peers no longer configured count
    /// as addresses.
    mutating func configure(_ configured: [(name: String, side: String)]) {
        let names = Set(configured.map(\.name))
        for (name, entry) in entries where entry.configured && !names.contains(name) {
            entries[name]?.configured = false
            addresses += 1
        }
        for peer in configured {
            if entries[peer.name]?.configured == false { addresses -= 1 }
            entries[peer.name, default: Entry(side: peer.side, configured: true)].configured = true
        }
    }

    private mutating func touch(_ name: String, side: String, now: NIODeadline) {
        if entries[name] == nil {
            if addresses >= Self.maxAddresses,
                let oldest = entries.filter({ !$0.value.configured && !pinned.contains($0.key) }).min(by: {
                    $0.value.lastSeen < $1.value.lastSeen
                })
            {
                entries[oldest.key] = nil
                addresses -= 1
            }
            entries[name] = Entry(side: side, configured: false)
            addresses += 1
        }
        entries[name]?.lastSeen = Self.second(now)
    }

    /// A request from `name` arrived; `rejected` when the gateway refused it.
    mutating func received(from name: String, side: String, rejected: Bool, now: NIODeadline) {
        touch(name, side: side, now: now)
        entries[name]?.requests += 1
        entries[name]?.recentRequests.add(at: Self.second(now))
        if rejected {
            entries[name]?.rejections += 1
            entries[name]?.recentRejections.add(at: Self.second(now))
        }
    }

    /// A request the gateway sent to `name` got a final answer: `failure` nil for a 2xx.
    mutating func answered(by name: String, side: String, failure: String?, at time: Date, now: NIODeadline) {
        touch(name, side: side, now: now)
        if let failure {
            entries[name]?.lastFailure = PeerHealth.Failure(time: time, reason: failure)
        } else {
            entries[name]?.lastSuccess = time
        }
    }

    /// Every entry, configured ones first, by name.
    mutating func report(now: NIODeadline) -> [PeerHealth] {
        let second = Self.second(now)
        var out: [PeerHealth] = []
        for name in entries.keys.sorted() {
            guard var entry = entries[name] else { continue }
            out.append(
                PeerHealth(
                    name: name, side: entry.side, configured: entry.configured, lastSuccess: entry.lastSuccess,
                    lastFailure: entry.lastFailure, requests: entry.requests, rejections: entry.rejections,
                    requestsPerSecond: entry.recentRequests.rate(at: second),
                    rejectionsPerSecond: entry.recentRejections.rate(at: second)))
            entries[name] = entry
        }
        return out.sorted { ($0.configured ? 0 : 1, $0.name) < ($1.configured ? 0 : 1, $1.name) }
    }
}

extension PeerHealth {
    /// The shards' reports as one (docs/shards.md): each peer once, in the order the first
    /// shard to know it lists it, with its requests summed, the latest success and failure of
    /// any shard, and drained when every shard that knows it has it drained.
    static func merged(_ reports: [[PeerHealth]]) -> [PeerHealth] {
        var order: [String] = []
        var merged: [String: PeerHealth] = [:]
        for report in reports {
            for entry in report {
                guard var known = merged[entry.name] else {
                    order.append(entry.name)
                    merged[entry.name] = entry
                    continue
                }
                known.requests += entry.requests
                known.rejections += entry.rejections
                known.requestsPerSecond += entry.requestsPerSecond
                known.rejectionsPerSecond += entry.rejectionsPerSecond
                known.lastSuccess = [known.lastSuccess, entry.lastSuccess].compactMap { $0 }.max()
                if let failure = entry.lastFailure, failure.time > known.lastFailure?.time ?? .distantPast {
                    known.lastFailure = failure
                }
                known.drained = known.drained && entry.drained
                merged[entry.name] = known
            }
        }
        return order.compactMap { merged[$0] }
    }
}
