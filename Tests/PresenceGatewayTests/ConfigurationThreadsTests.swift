import Foundation
import GatewayState
import NIOCore
@testable import PresenceGateway
import Testing

/// `threads:` (docs/shards.md): how many shards run, what each shard's share of the gateway's
/// budgets is, and which records each restores.
@Suite struct ConfigurationThreadsTests {
    static func yaml(_ threads: String, _ extra: String = "") -> String {
        ConfigurationTests.valid + "threads: \(threads)\n" + extra
    }

    /// One shard per core the process may use unless the file says otherwise: no more than its
    /// CPU affinity allows (`taskset -c 0` runs one; sched_setaffinity(2) through the
    /// `Cpus_allowed` mask of proc(5)), nor than its cgroup gives it (swift-nio's
    /// `System.coreCount`), nor than ``GatewayConfiguration/threadsLimit``.
    @Test func oneShardPerCoreUnlessTheFileSaysOtherwise() throws {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let mask = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        // "0-1", "0,2-3": the CPUs the affinity allows, counted from the list this time.
        let affinity = mask.dropFirst("Cpus_allowed_list:".count).split(separator: ",").map { range in
            let ends = range.split(separator: "-").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            return ends.count == 2 ? ends[1] - ends[0] + 1 : 1
        }.reduce(0, +)
        let cores = min(affinity, System.coreCount, GatewayConfiguration.threadsLimit)
        #expect(try GatewayConfiguration(yaml: ConfigurationTests.valid).threads == cores)
        #expect(try GatewayConfiguration(yaml: GatewayConfiguration.defaultYAML).threads == cores)
        #expect(try GatewayConfiguration(yaml: Self.yaml("auto")).threads == cores)
        #expect(try GatewayConfiguration(yaml: Self.yaml("4")).threads == 4)
        #expect(try GatewayConfiguration(yaml: Self.yaml("1")).threads == 1)
    }

    @Test func aNodeOfASharedStoreRunsSeveralShards() throws {
        let postgres = "state: { store: postgres, url: \"postgres://gw@db.example/gateway\", node: gw1 }\n"
        #expect(try GatewayConfiguration(yaml: Self.yaml("2", postgres)).threads == 2)
    }

    @Test(arguments: [("0", "from 1 to 64"), ("65", "from 1 to 64"), ("two", "from 1 to 64")])
    func whatTheShardsCannotRunIsRefusedOnItsLine(_ value: String, _ words: String) {
        let error = #expect(throws: ConfigurationError.self) { try GatewayConfiguration(yaml: Self.yaml(value)) }
        #expect(error?.line == 6, "\(error?.description ?? "")")
        #expect(error?.message.contains(words) == true, "\(error?.description ?? "")")
    }

    /// Watcher information is served by several shards, which share their watchers.
    @Test func watcherInformationRunsOnSeveralShards() throws {
        let presentities = "presentities:\n  \"sip:erin@oma.example\": { defaults: { federated: allow } }\n"
        #expect(try GatewayConfiguration(yaml: Self.yaml("2", presentities)).threads == 2)
        let linked = #"linked-identities:\#n  - { oma: "sip:bob@oma.example", enterprise: "sip:bob@contoso.com", publish-to-enterprise: true }\#n"#
        #expect(try GatewayConfiguration(yaml: Self.yaml("2", linked)).threads == 2)
    }

    /// What is counted for the whole gateway or per unconfigured sender is divided (rounded up);
    /// what is counted per configured peer, per watcher, per request or per sender is whole.
    @Test func eachShardTakesItsShareOfTheBudgets() throws {
        let config = try GatewayConfiguration(
            yaml: Self.yaml(
                "3",
                "peers:\n  - { name: k, address: 127.0.0.1, side: oma, rate-limit: 300, max-subscriptions: 1000 }\n"))
        let share = config.share(of: 3)
        #expect(share.limits.dialogs == 133_334)
        #expect(share.limits.subscriptionsPerPeer == 3_334)
        #expect(share.limits.subscriptionsPerPresentity == 3_334)
        #expect(share.limits.unconfiguredPeerRate == config.limits.unconfiguredPeerRate / 3)
        // A configured peer's limits are whole: the shards count them together (PeerBoard).
        #expect(share.peers[0].rateLimit == 300)
        #expect(share.peers[0].maxSubscriptions == 1000)
        #expect(share.limits.subscriptionsPerWatcher == config.limits.subscriptionsPerWatcher)
        #expect(share.limits.resourcesPerBatch == config.limits.resourcesPerBatch)
        #expect(share.limits.fanOutBurst == config.limits.fanOutBurst)
        #expect(share.limits.transactions == config.limits.transactions)
        #expect(config.share(of: 1).limits == config.limits)
    }

    /// A record goes to the shard whose core made its key, modulo the shards running; the
    /// enterprise's pool hints and flags to every shard; the node-wide records to the first.
    @Test func eachRecordIsRestoredByTheShardThatMadeIt() {
        func key(_ shard: Int, _ n: Int) -> String { String(shard << 32 + n) }
        let records = [
            StateRecord(kind: "enterprise-watch", key: key(0, 1), body: []),
            StateRecord(kind: "oma-leg", key: key(1, 2), body: []),
            StateRecord(kind: "oma-leg", key: key(2, 3), body: []),
            StateRecord(kind: "pool", key: "sip:bob@contoso.com", body: []),
            StateRecord(kind: "flag", key: "batch-refused", body: []),
            StateRecord(kind: "publication", key: "etag1", body: []),
        ]
        let two = GatewayCore.partition(records, into: 2)
        #expect(two[0].map(\.key) == [key(0, 1), key(2, 3), "sip:bob@contoso.com", "batch-refused", "etag1"])
        #expect(two[1].map(\.key) == [key(1, 2), "sip:bob@contoso.com", "batch-refused"])
        #expect(GatewayCore.partition(records, into: 1) == [records])
    }
}
