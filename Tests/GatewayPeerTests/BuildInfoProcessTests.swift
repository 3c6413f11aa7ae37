import Foundation
import PeerTestSupport
import PresenceGateway
import Testing

/// What runs is identifiable, as `kamailio -v` and a build-info series make it for Kamailio's
/// operators: `presence-gateway --version` names the version and the Swift it was built with, and
/// a running gateway exports `gateway_build_info{version,swift} 1`.
@Suite struct BuildInfoProcessTests {
    @Test func versionIsPrintedAndExported() async throws {
        let binary = try #require(GatewayBinary.path)
        let (status, output) = try await runProgram(binary, ["--version"], timeout: 10)
        #expect(status == 0)
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines)
                == "presence-gateway \(GatewayVersion.version) (Swift \(GatewayVersion.swift))")
        #expect(GatewayVersion.version.split(separator: ".").count == 3)

        let directory = NSTemporaryDirectory() + "build-info-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ports = (oma: try LoopbackPorts.free(), enterprise: try LoopbackPorts.free(), admin: try LoopbackPorts.free())
        let configuration = directory + "/gateway.yaml"
        try DurableStateProcessTests.Gateway.yaml(
            listen: ports, enterprise: ("edge", try LoopbackPorts.free()), oma: ("oma", try LoopbackPorts.free()),
            state: "{ store: memory }"
        ).write(toFile: configuration, atomically: true, encoding: .utf8)
        let gateway = DurableStateProcessTests.Gateway(
            binary: binary, configuration: configuration, directory: directory, admin: ports.admin)
        let process = try await gateway.start()
        defer { process.kill() }
        let metrics = try await gateway.get("/metrics")
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("gateway_build_info{") }
        #expect(line?.contains("version=\"\(GatewayVersion.version)\"") == true, "\(line ?? "no gateway_build_info")")
        #expect(line?.contains("swift=\"\(GatewayVersion.swift)\"") == true)
        #expect(line?.split(separator: " ").last.flatMap { Double($0) } == 1, "\(line ?? "")")
    }
}
