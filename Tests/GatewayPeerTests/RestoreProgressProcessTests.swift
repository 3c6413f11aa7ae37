import Foundation
import PeerTestSupport
import PresenceGateway
import Testing

/// A restart with 100,000 pairs watched from outside (README, "Watching a start"): the admin
/// endpoint answers from the first moment, `/health` says 503 "restoring" with the records
/// restored so far, rising, until it says 200 "ok" with every pair continued; the rest of the
/// API is 503 with Retry-After meanwhile; each tenth is logged; and the paced refreshes that
/// follow are counted down by `gateway_recovery_refreshes_pending`.
@Suite(.serialized) struct RestoreProgressProcessTests {
    static let pairs = 100_000

    @Test(.timeLimit(.minutes(10))) func aRestartWith100000PairsIsWatchedThroughHealth() async throws {
        let binary = try #require(GatewayBinary.path, "presence-gateway was not built next to the tests")
        let bench = URL(fileURLWithPath: binary).deletingLastPathComponent().appendingPathComponent("gateway-bench").path
        let directory = NSTemporaryDirectory() + "restore-progress-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // The store a gateway left: 100,000 OMA watchers of enterprise presentities, each with its
        // enterprise leg; their peers on ports nobody answers on.
        let (watchers, edge) = (try LoopbackPorts.free(), try LoopbackPorts.free())
        let written = try await runProgram(
            bench,
            ["state-file", "\(Self.pairs)", directory + "/state.db", "127.0.0.1:\(watchers)", "127.0.0.1:\(edge)"],
            timeout: 300)
        try #require(written.status == 0, "\(written.output)")

        let (oma, enterprise, admin) = (try LoopbackPorts.free(), try LoopbackPorts.free(), try LoopbackPorts.free())
        let yaml = GatewayConfiguration.defaultYAML
            .replacingOccurrences(of: "port: 5060 }", with: "port: \(oma) }")
            .replacingOccurrences(of: "port: 5061 }", with: "port: \(enterprise) }")
            .replacingOccurrences(of: "port: 9460 }", with: "port: \(admin) }")
            .replacingOccurrences(
                of: "path: state/presence-gateway.db", with: "path: \(directory)/state.db, recovery-rate: 200")
        try #require(yaml.contains("port: \(admin) }") && yaml.contains("recovery-rate: 200"), "\(yaml)")
        try yaml.write(toFile: directory + "/gateway.yaml", atomically: true, encoding: .utf8)

        let gateway = try ChildProcess(binary, ["--config", directory + "/gateway.yaml"])
        defer { gateway.kill() }
        var seen: [(done: Int, of: Int)] = []
        var refusedMeanwhile: (status: Int, fields: [String: String])?
        var final: [String: Any]?
        let deadline = Date().addingTimeInterval(400)
        while Date() < deadline, gateway.poll() == nil {
            guard let answer = try? await loopbackHTTP(port: Int(admin), "GET", "/health") else {
                try await Task.sleep(nanoseconds: 20_000_000)
                continue
            }
            let health = try #require(
                try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any], "\(answer.body)")
            if answer.status == 200 {
                final = health
                break
            }
            #expect(answer.status == 503)
            #expect(["restoring", "starting"].contains(health["status"] as? String), "\(health)")
            if health["phase"] as? String == "restoring", let done = health["done"] as? Int, let of = health["of"] as? Int {
                seen.append((done, of))
                if refusedMeanwhile == nil {
                    let peers = try await loopbackHTTP(port: Int(admin), "GET", "/peers")
                    refusedMeanwhile = (peers.status, peers.fields)
                }
            }
            try await Task.sleep(nanoseconds: 200_000_000)
        }
        let ok = try #require(final, "no 200 from /health:\n\(gateway.output.suffix(3000))")

        // Restoring, with progress, before ready.
        let records = 2 * Self.pairs
        #expect(seen.allSatisfy { $0.of == records }, "\(seen.prefix(3))")
        #expect(seen.contains { $0.done > 0 && $0.done < records }, "no progress between 0 and all: \(seen)")
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.done <= $1.done }, "progress went back: \(seen)")
        #expect(refusedMeanwhile?.status == 503)
        #expect(refusedMeanwhile?.fields["retry-after"] != nil, "\(String(describing: refusedMeanwhile))")
        // Then every pair continues.
        #expect(ok["status"] as? String == "ok")
        #expect(ok["omaWatchers"] as? Int == Self.pairs, "\(ok)")
        // A refresh nobody answers makes its leg again (RFC 6665 §4.1.2.2): one more for a while.
        #expect((ok["enterpriseLegs"] as? Int ?? 0) >= Self.pairs, "\(ok)")
        let log = gateway.output
        for tenth in 1...10 {
            #expect(log.contains(" of \(records) records (\(tenth * 10) %)"), "no line for \(tenth * 10) %")
        }

        // The refreshes paced at 200 a second (500 s for all) are counted down.
        #expect(log.contains("recovery: \(Self.pairs) subscriptions to refresh"), "\(log.suffix(2000))")
        let first = try await pendingRefreshes(admin)
        try await Task.sleep(nanoseconds: 3_000_000_000)
        let later = try await pendingRefreshes(admin)
        #expect(first > 0 && first <= Self.pairs, "\(first)")
        #expect(later < first, "\(first) then \(later)")
    }

    /// `gateway_recovery_refreshes_pending` from `/metrics`, summed over the shards' series (a
    /// gateway of several shards, one per core by default, labels each `shard`).
    func pendingRefreshes(_ admin: UInt16) async throws -> Int {
        let metrics = try await loopbackHTTP(port: Int(admin), "GET", "/metrics").body
        let lines = metrics.split(separator: "\n").filter {
            $0.hasPrefix("gateway_recovery_refreshes_pending ") || $0.hasPrefix("gateway_recovery_refreshes_pending{")
        }
        try #require(!lines.isEmpty, "\(metrics)")
        return lines.map { Int(Double($0.split(separator: " ").last ?? "") ?? 0) }.reduce(0, +)
    }
}
