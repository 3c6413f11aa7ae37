import BenchSupport
import Foundation
import GatewayState
import NIOCore
import PresenceGateway
import PresenceMapping
import SIPStack
import SQLiteNIO

/// `gateway-bench state [PAIRS] [FILE] [SHARDS]`: what the durable store (docs/state.md) costs
/// and how fast a restart continues every pair, in process:
/// - relay with the journal on against off, same run: a notification relayed through the core
///   with its changes taken after each, as the runtime does (nothing to write but every 1024th
///   notification of a dialog);
/// - pair setup in the core with the journal on against off (records encoded, not written);
/// - writing PAIRS pairs' records to an SQLite file (one transaction per 1000 records, as the
///   writer batches under load);
/// - recovery: opening the file, reading every record and restoring them into a new core: the
///   time from a restart to every pair continuing (the listeners open after it);
/// - memory per pair after the restore;
/// - the same recovery on SHARDS cores at once (2 by default), as `threads: SHARDS` restores
///   (docs/shards.md): the pairs were made by SHARDS cores, each's records go back to it. It
///   runs first, so that its open is the one that checkpoints SQLite's write-ahead log, as a
///   start after a stop does; the one-core recovery after it reads a file without one.
extension GatewayBench {
    static func state(_ arguments: ArraySlice<String>) async throws {
        let pairs = arguments.first.flatMap(Int.init) ?? 100_000
        let path = arguments.dropFirst().first ?? NSTemporaryDirectory() + "gateway-bench-state-\(getpid()).db"
        let shards = max(1, arguments.dropFirst(2).first.flatMap(Int.init) ?? 2)
        let configuration = try GatewayConfiguration(
            yaml: GatewayConfiguration.defaultYAML.replacingOccurrences(
                of: #"publish-to-oma: true"#, with: #"publish-to-oma: false"#))
        let mapper = PresenceMapper(tables: try MappingTables.builtIn())
        let clock = WallClock(now: .now(), wallNanoseconds: Int64(Date().timeIntervalSince1970 * 1e9))
        print("gateway-bench state: \(pairs) pairs, store \(path)")

        // Relay, journal off and on, alternating rounds on the same pairs.
        var off: [Double] = []
        var on: [Double] = []
        var plain = try Bridge.flow1(configuration: configuration, mapper: mapper, pairs: 1000)
        var journaled = try Bridge.flow1(configuration: configuration, mapper: mapper, pairs: 1000)
        journaled.core.journaling = true
        _ = journaled.core.takeStateChanges(clock: clock)
        var written = 0
        for _ in 0..<5 {
            off.append(rate(1) { plain.relayOne() })
            on.append(
                rate(1) {
                    let bytes = journaled.relayOne()
                    written += journaled.core.takeStateChanges(clock: clock).count
                    return bytes
                })
        }
        let (offMedian, onMedian) = (off.sorted()[2], on.sorted()[2])
        print(
            "relay OMA NOTIFY -> enterprise BENOTIFY, in process: journal off \(pad(offMedian)) msg/s, on \(pad(onMedian)) msg/s "
                + "(ratio \(String(format: "%.3f", onMedian / offMedian)); \(written) records over \(journaled.sent) notifications)"
        )

        // Setup in the core: encoded records per pair.
        let setupStart = DispatchTime.now().uptimeNanoseconds
        _ = try Bridge.flow2(configuration: configuration, mapper: mapper, pairs: 10_000, keepInputs: false)
        let setupOff = 10_000 / (Double(DispatchTime.now().uptimeNanoseconds - setupStart) / 1e9)
        let journaledStart = DispatchTime.now().uptimeNanoseconds
        var setup = try Bridge.flow2(
            configuration: configuration, mapper: mapper, pairs: 10_000, keepInputs: false, journaling: true)
        let changes = setup.core.takeStateChanges(clock: clock)
        let setupOn = 10_000 / (Double(DispatchTime.now().uptimeNanoseconds - journaledStart) / 1e9)
        print(
            "pair setup in the core: journal off \(pad(setupOff)) pairs/s, on (records encoded) \(pad(setupOn)) pairs/s; "
                + "\(changes.count / 10_000) records per pair, \(changes.reduce(0) { $0 + (recordSize($1)) } / changes.count) bytes each"
        )

        // The pairs to recover, made by the shards' cores in turn, written to the store.
        try? FileManager.default.removeItem(atPath: path)
        let built = DispatchTime.now().uptimeNanoseconds
        var all: [StateChange] = []
        for shard in 0..<shards {
            let share = pairs / shards + (shard < pairs % shards ? 1 : 0)
            var held = try Bridge.flow2(
                configuration: configuration, mapper: mapper, pairs: share, keepInputs: false, journaling: true,
                shard: shard, first: shard * (pairs / shards + 1))
            all += held.core.takeStateChanges(clock: clock)
            held.keepAlive()
        }
        let encoded = DispatchTime.now().uptimeNanoseconds
        let store = try await SQLiteStateStore.open(path: path)
        for start in stride(from: 0, to: all.count, by: 1000) {
            _ = try await store.write(Array(all[start..<min(all.count, start + 1000)]))
        }
        let stored = DispatchTime.now().uptimeNanoseconds
        await store.close()
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        print(
            "stored \(all.count) records of \(pairs) pairs: set up and encoded in \(seconds(built, encoded)) s, written in "
                + "\(seconds(encoded, stored)) s (\(pad(Double(all.count) / (Double(stored - encoded) / 1e9))) records/s, "
                + "transactions of 1000), file \(size / 1_048_576) MiB")

        // Recovery on the shards first: the first open after the writes checkpoints SQLite's
        // write-ahead log, as the first start after a stop does.
        if shards > 1 { try await recoverSharded(path: path, shards: shards, configuration, mapper, clock: clock) }

        // Recovery on one core.
        ProcessMemory.trimHeap()
        let before = ProcessMemory.residentBytes()
        let start = DispatchTime.now().uptimeNanoseconds
        let reopened = try await SQLiteStateStore.open(path: path)
        var records = try await reopened.load()
        let recordCount = records.count
        let loaded = DispatchTime.now().uptimeNanoseconds
        var core = try Bridge.makeCore(configuration, mapper)
        core.journaling = true
        let actionCount = try core.restore(records, clock: clock, now: .now()).count
        let restored = DispatchTime.now().uptimeNanoseconds
        records = []
        await reopened.close()
        let counts = core.counts
        ProcessMemory.trimHeap()
        let after = ProcessMemory.residentBytes()
        print(
            "recovery: \(counts.omaWatches) of \(pairs) pairs continuing \(seconds(start, restored)) s after the start "
                + "(open + read \(recordCount) records \(seconds(start, loaded)) s, restore \(seconds(loaded, restored)) s); "
                + "\(actionCount) actions (refreshes paced, expiries); target < 10 s  \(Double(restored - start) / 1e9 < 10 ? "MET" : "NOT MET")"
        )
        print(
            "memory after the restore: \(String(format: "%.0f", Double(after - before) / Double(pairs))) bytes/pair "
                + "(RSS \(before / 1_048_576) -> \(after / 1_048_576) MiB; the records read are freed: the core's state alone)"
        )
        withExtendedLifetime(core) {}
        try? FileManager.default.removeItem(atPath: path)
        try? FileManager.default.removeItem(atPath: path + "-wal")
    }

    /// The recovery of ``state(_:)`` on `shards` cores at once, as `GatewayServer` restores:
    /// the records read, partitioned by the shard their keys name, each shard's restored into
    /// its own core on a task of its own.
    static func recoverSharded(
        path: String, shards: Int, _ configuration: GatewayConfiguration, _ mapper: PresenceMapper, clock: WallClock
    ) async throws {
        let start = DispatchTime.now().uptimeNanoseconds
        let reopened = try await SQLiteStateStore.open(path: path)
        let records = try await reopened.load()
        await reopened.close()
        let loaded = DispatchTime.now().uptimeNanoseconds
        let parts = GatewayCore.partition(records, into: shards)
        let cores = try (0..<shards).map { try Bridge.makeCore(configuration.share(of: shards), mapper, shard: $0) }
        let restoredCores = try await withThrowingTaskGroup(of: GatewayCore.self) { group in
            for (core, part) in zip(cores, parts) {
                group.addTask {
                    var core = core
                    core.journaling = true
                    _ = try core.restore(part, clock: clock, now: .now())
                    return core
                }
            }
            return try await group.reduce(into: [GatewayCore]()) { $0.append($1) }
        }
        let restored = DispatchTime.now().uptimeNanoseconds
        let continuing = restoredCores.map(\.counts.omaWatches).reduce(0, +)
        print(
            "recovery on \(shards) shards: \(continuing) pairs continuing \(seconds(start, restored)) s after the start "
                + "(open + read \(records.count) records \(seconds(start, loaded)) s, restore \(seconds(loaded, restored)) s, "
                + "\(parts.map { String($0.count) }.joined(separator: " + ")) records); target < 10 s  "
                + "\(Double(restored - start) / 1e9 < 10 ? "MET" : "NOT MET")")
    }

    /// `gateway-bench state-file PAIRS FILE [OMA-PEER EDGE]`: writes PAIRS flow 2 pairs' records
    /// to the SQLite store FILE and nothing else, for a gateway started on it with the embedded
    /// configuration's domains (a restart watched through `/health`: README, "Watching a start").
    /// The first pair is made through the core; the others are its two records copied by SQLite
    /// with the pair's names, dialog identifiers and keys renumbered, which takes a debug build
    /// seconds rather than minutes. The restore decodes every one. OMA-PEER and EDGE
    /// (`host:port`) replace where the watchers and the enterprise edge are (127.0.0.1:5070 and
    /// 127.0.0.1:5062); the dialogs expire an hour after now.
    static func stateFile(_ arguments: ArraySlice<String>) async throws {
        guard let pairs = arguments.first.flatMap(Int.init), pairs > 0, let path = arguments.dropFirst().first else {
            FileHandle.standardError.write(Data("usage: gateway-bench state-file PAIRS FILE [OMA-PEER EDGE]\n".utf8))
            exit(2)
        }
        let peers = Array(arguments.dropFirst(2))
        let configuration = try GatewayConfiguration(yaml: GatewayConfiguration.defaultYAML)
        let mapper = PresenceMapper(tables: try MappingTables.builtIn())
        var first = try Bridge.flow2(
            configuration: configuration, mapper: mapper, pairs: 1, keepInputs: false, journaling: true)
        // The bridge's instant is now on the wall clock: its dialogs expire an hour from now.
        let clock = WallClock(now: first.now, wallNanoseconds: Int64(Date().timeIntervalSince1970 * 1e9))
        let template: [StateRecord] = first.core.takeStateChanges(clock: clock).compactMap {
            guard case .put(var record) = $0 else { return nil }
            if peers.count == 2 {
                record.body = Array(
                    String(decoding: record.body, as: UTF8.self)
                        .replacingOccurrences(of: "127.0.0.1:5070", with: peers[0])
                        .replacingOccurrences(of: "127.0.0.1:5062", with: peers[1]).utf8)
            }
            return record
        }
        guard template.map(\.key).sorted() == ["1", "2"] else {
            fatalError("the first pair's records are not one watch and one leg: \(template.map(\.kind))")
        }
        let store = try await SQLiteStateStore.open(path: path)
        _ = try await store.write(template.map { .put($0) })
        await store.close()
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        _ = try await connection.query(copies(of: template), [.integer(pairs - 1)])
        try await connection.close()
        print("wrote \(pairs * template.count) records of \(pairs) pairs to \(path)")
    }

    /// The statement that copies the first pair's records (an OMA watch with key 1, its enterprise
    /// leg with key 2) as pairs 1…`?`: watcher w`i`, presentity p`i`, their own Call-IDs, tags
    /// and keys.
    static func copies(of template: [StateRecord]) -> String {
        func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
        var replacements: [(String, String)] = []
        for record in template {
            if let callID = record.callID { replacements.append((quoted(callID), "\(quoted(callID)) || '-' || i")) }
            if let tag = record.localTag { replacements.append((quoted(tag), "\(quoted(tag)) || 'x' || i")) }
        }
        replacements += [
            ("'sip:w0@'", "'sip:w' || i || '@'"), ("'sip:p0@'", "'sip:p' || i || '@'"),
            (#"'tag=w0"'"#, #"'tag=w' || i || '"'"#), (#"'"w0"'"#, #"'"w' || i || '"'"#),
            (#"'tag=e0"'"#, #"'tag=e' || i || '"'"#), (#"'"e0"'"#, #"'"e' || i || '"'"#),
            (#"'"leg":2,'"#, #"'"leg":' || (2 * i + 2) || ','"#), (#"'"leg":2}'"#, #"'"leg":' || (2 * i + 2) || '}'"#),
            (#"'@contoso.com":1}'"#, #"'@contoso.com":' || (2 * i + 1) || '}'"#),
        ]
        let body = replacements.reduce("body") { "replace(\($0), \($1.0), \($1.1))" }
        return """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
            INSERT INTO gateway_state (kind, key, call_id, local_tag, expires, body)
            SELECT kind, CAST(CAST(key AS INTEGER) + 2 * i AS TEXT), call_id || '-' || i, local_tag || 'x' || i,
                expires, \(body)
            FROM gateway_state, n WHERE key IN ('1', '2')
            """
    }

    static func seconds(_ from: UInt64, _ to: UInt64) -> String { String(format: "%.2f", Double(to - from) / 1e9) }

    static func recordSize(_ change: StateChange) -> Int {
        if case .put(let record) = change { return record.body.count }
        return 0
    }
}
