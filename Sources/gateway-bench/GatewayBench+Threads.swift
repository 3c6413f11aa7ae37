import BenchSupport
import Foundation
import PresenceGateway
import PresenceMapping

/// `gateway-bench threads [SECONDS]`: whether the relay in process scales with threads, as a
/// gateway whose dialogs were split over several event loops would (docs/performance.md,
/// "Several threads"). Each thread relays through a core of its own, with its own pairs; the
/// mapping tables are shared, as they would be. Prints each direction's rate on one thread and
/// the sum on as many threads as the machine has cores, against a target of 1.8× for two.
extension GatewayBench {
    static func threads(_ arguments: ArraySlice<String>) throws {
        let seconds = arguments.first.flatMap(Double.init) ?? 3.0
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let configuration = try GatewayConfiguration(
            yaml: GatewayConfiguration.defaultYAML.replacingOccurrences(
                of: #"publish-to-oma: true"#, with: #"publish-to-oma: false"#))
        let mapper = PresenceMapper(tables: try MappingTables.builtIn())
        print(
            "gateway-bench threads: \(seconds) s per measurement, 1 and \(cores) threads, on \(ProcessMemory.allocator); "
                + "MALLOC_CONF=\(ProcessInfo.processInfo.environment["MALLOC_CONF"] ?? "unset")")
        let directions: [(String, @Sendable () throws -> Bridge)] = [
            (
                "enterprise BENOTIFY -> OMA PIDF NOTIFY",
                { try Bridge.flow2(configuration: configuration, mapper: mapper, pairs: 1000) }
            ),
            (
                "OMA PIDF NOTIFY -> enterprise BENOTIFY",
                { try Bridge.flow1(configuration: configuration, mapper: mapper, pairs: 1000) }
            ),
        ]
        for (name, make) in directions {
            _ = try aggregate(threads: cores, seconds: 1, make)  // warm-up, not counted
            let one = try aggregate(threads: 1, seconds: seconds, make)
            let all = try aggregate(threads: cores, seconds: seconds, make)
            let target = cores >= 2 ? "  (target for 2: >= 1.80x)" : ""
            print(
                "relay \(name): 1 thread \(pad(one)) msg/s, \(cores) threads \(pad(all)) msg/s, "
                    + String(format: "%.2fx", all / one) + target)
        }
    }

    /// The relayed messages per second of `threads` threads together, each with its own bridge,
    /// all made before any starts.
    static func aggregate(threads: Int, seconds: Double, _ make: () throws -> Bridge) throws -> Double {
        let bridges = Bridges(try (0..<threads).map { _ in try make() })
        let rates = RateBox(count: threads)
        DispatchQueue.concurrentPerform(iterations: threads) { index in
            var bridge = bridges.take(index)
            rates.set(index, rate(seconds) { bridge.relayOne() })
        }
        return rates.sum
    }

    /// The bridges, each handed to its thread once.
    final class Bridges: @unchecked Sendable {
        private var bridges: [Bridge?]
        private let lock = NSLock()
        init(_ bridges: [Bridge]) { self.bridges = bridges }
        func take(_ index: Int) -> Bridge {
            lock.lock()
            defer { lock.unlock() }
            guard let bridge = bridges[index] else { fatalError("bridge \(index) taken twice") }
            bridges[index] = nil
            return bridge
        }
    }

    /// Each thread's rate.
    final class RateBox: @unchecked Sendable {
        private var rates: [Double]
        private let lock = NSLock()
        init(count: Int) { rates = Array(repeating: 0, count: count) }
        func set(_ index: Int, _ rate: Double) {
            lock.lock()
            rates[index] = rate
            lock.unlock()
        }
        var sum: Double {
            lock.lock()
            defer { lock.unlock() }
            return rates.reduce(0, +)
        }
    }
}
