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
}
