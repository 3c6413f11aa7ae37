import Foundation
import PeerTestSupport
import Testing

/// The tools README.md names are part of the product: each runs here briefly, on the debug
/// build's binary, so that a change that breaks one (a configuration template that no longer
/// formats, a harness that hides why the gateway did not start) fails a test rather than the
/// first operator who tries it.
@Suite(.serialized) struct ReadmeToolTests {
    static let root = PeerAssets.root.deletingLastPathComponent()

    static func binary() throws -> String {
        try #require(GatewayBinary.path, "presence-gateway is not built beside the tests")
    }

    /// `scripts/soak.sh` (README, "Fuzzing and soak"): 15 s of churn, then its own final check
    /// after the Timer J linger (no dialog and no transaction left), which prints PASS.
    @Test func soakRunsAndPasses() async throws {
        let (status, output) = try await runProgram(
            "/bin/bash",
            [
                Self.root.appendingPathComponent("scripts/soak.sh").path, "0.25", "--bin", try Self.binary(),
                "--round", "10", "--settle", "33",
            ],
            environment: ["SOAK_NO_BUILD": "1"], timeout: 240)
        #expect(status == 0, "\(output.suffix(4000))")
        #expect(output.contains("soak: PASS"), "\(output.suffix(4000))")
    }

    /// `scripts/bench/gateway-sipp.py` (docs/performance.md): 50 pairs, one 2 s step at 100/s,
    /// which must be clean.
    @Test func gatewaySippBenchmarkRunsOneCleanStep() async throws {
        let (status, output) = try await runProgram(
            "/usr/bin/python3",
            [
                Self.root.appendingPathComponent("scripts/bench/gateway-sipp.py").path, "--bin", try Self.binary(),
                "--pairs", "50", "--setup-rate", "100", "--rates", "100", "--dur", "2", "--directions", "o2e",
                "--settle", "1",
            ],
            timeout: 120)
        #expect(status == 0, "\(output.suffix(4000))")
        #expect(output.contains("highest clean rate (o2e): 100/s offered"), "\(output.suffix(4000))")
    }

    /// A base port with the eleven SIP ports `scripts/run.sh --ports BASE` uses (BASE..BASE+10)
    /// and its admin port (BASE+20) free on 127.0.0.1, TCP and UDP.
    static func freeBase() throws -> UInt16 {
        for _ in 0..<50 {
            let base = UInt16.random(in: 20_000...29_000)
            let ports = Array(base...(base + 10)) + [base + 20]
            if ports.allSatisfy({ !LoopbackPorts.isBound($0, udp: true) && !LoopbackPorts.isBound($0, udp: false) }) {
                return base
            }
        }
        throw PeerError("no free range of ports for scripts/run.sh")
    }

    /// `scripts/run.sh --with-peers` (README, "The two commands") on the debug build's programs
    /// (`--bin-dir`, as the release build takes minutes): Kamailio, the stand-in enterprise server
    /// and the gateway start; carol's "away" at Kamailio reaches an enterprise watcher as 15500
    /// (Mappings/pidf-availability.tsv), bob's 6500 at the enterprise server reaches an OMA
    /// watcher at Kamailio as open + busy ([MS-PRES] §3.7.5.4 row 4); then SIGINT (Ctrl-C)
    /// stops everything and frees the ports.
    @Test func runWithPeersShowsPresenceCrossingBothWaysUntilCtrlC() async throws {
        let directory = URL(fileURLWithPath: try Self.binary()).deletingLastPathComponent().path
        let base = try Self.freeBase()
        let run = try ChildProcess(
            "/bin/bash",
            [
                Self.root.appendingPathComponent("scripts/run.sh").path, "--with-peers", "--ports", "\(base)",
                "--bin-dir", directory,
            ])
        // Whatever fails, SIGTERM lets run.sh stop its peers (Kamailio is a process group of its own).
        try await withCleanup {
            let deadline = Date().addingTimeInterval(120)
            while Date() < deadline, run.poll() == nil, !run.output.contains("Ctrl-C stops everything") {
                try await Task.sleep(for: .milliseconds(500))
            }
            let shown = run.output
            #expect(
                shown.contains(
                    "OMA -> enterprise: carol published away at Kamailio; the enterprise watcher sees availability 15500,"
                        + " note \"Back at three\""), "\(shown.suffix(6000))")
            #expect(
                shown.contains(
                    "enterprise -> OMA: bob published 6500 (busy) at the enterprise server; the OMA watcher at Kamailio"
                        + " sees basic open, activities busy"), "\(shown.suffix(6000))")
            #expect(shown.contains("<availability>15500</availability>"))
            #expect(shown.contains("In a meeting"), "the note bob published is in the PIDF dave saw")
            run.send(SIGINT)
            let status = await run.wait(timeout: 60)
            #expect(status == 0, "\(run.output.suffix(3000))")
            #expect(run.output.contains("stopped; logs in"))
            // Nothing listens any more (a bind could still fail on TCP: connections in TIME_WAIT).
            for port in [base, base + 1, base + 2, base + 10, base + 20] {
                #expect(!LoopbackPorts.accepts(port), "TCP port \(port) still listening after Ctrl-C")
            }
            for port in [base, base + 10] {
                #expect(!LoopbackPorts.isBound(port, udp: true), "UDP port \(port) still bound after Ctrl-C")
            }
        } cleanup: {
            if run.poll() == nil {
                run.send(SIGTERM)
                _ = await run.wait(timeout: 70)
            }
        }
    }

    /// `scripts/run.sh` names the port it needs that is taken and what holds it, and starts nothing.
    @Test func runNamesATakenPortAndItsHolder() async throws {
        let directory = URL(fileURLWithPath: try Self.binary()).deletingLastPathComponent().path
        let base = try Self.freeBase()
        let holder = try ChildProcess("/usr/bin/python3", [
            "-c", "import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1);"
                + " s.bind(('127.0.0.1', \(base + 1))); s.listen(); print('bound', flush=True); time.sleep(60)",
        ])
        defer { holder.kill() }
        for _ in 0..<50 where !holder.output.contains("bound") { try await Task.sleep(for: .milliseconds(100)) }
        let (status, output) = try await runProgram(
            "/bin/bash",
            [Self.root.appendingPathComponent("scripts/run.sh").path, "--ports", "\(base)", "--bin-dir", directory],
            timeout: 60)
        #expect(status == 1, "\(output)")
        #expect(output.contains("run: port \(base + 1) is taken; held by:"), "\(output)")
        #expect(output.contains("python3"), "the holder is named: \(output)")
    }
}
