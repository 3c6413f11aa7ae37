import BenchSupport
import Foundation
import GatewayState
import NIOCore
import PresenceGateway
import PresenceMapping
import SIPStack

/// `gateway-bench state [PAIRS] [FILE]`: what the durable store (docs/state.md) costs and how
/// fast a restart continues every pair, in process:
/// - relay with the journal on against off, same run: a notification relayed through the core
///   with its changes taken after each, as the runtime does (nothing to write but every 1024th
///   notification of a dialog);
/// - pair setup in the core with the journal on against off (records encoded, not written);
/// - writing PAIRS pairs' records to an SQLite file (one transaction per 1000 records, as the
///   writer batches under load);
/// - recovery: opening the file, reading every record and restoring them into a new core: the
///   time from a restart to every pair continuing (the listeners open after it);
/// - memory per pair after the restore.
extension GatewayBench {
    static func state(_ arguments: ArraySlice<String>) async throws {
        let pairs = arguments.first.flatMap(Int.init) ?? 100_000
        let path = arguments.dropFirst().first ?? NSTemporaryDirectory() + "gateway-bench-state-\(getpid()).db"
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

        // The pairs to recover, written to the store.
        try? FileManager.default.removeItem(atPath: path)
        let built = DispatchTime.now().uptimeNanoseconds
        var held = try Bridge.flow2(
            configuration: configuration, mapper: mapper, pairs: pairs, keepInputs: false, journaling: true)
        let all = held.core.takeStateChanges(clock: clock)
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
        held.keepAlive()
        held = Bridge(core: try Bridge.makeCore(configuration, mapper), inputs: [])

        // Recovery.
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

    static func seconds(_ from: UInt64, _ to: UInt64) -> String { String(format: "%.2f", Double(to - from) / 1e9) }

    static func recordSize(_ change: StateChange) -> Int {
        if case .put(let record) = change { return record.body.count }
        return 0
    }
}
