import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SIGHUP in the running binary, as `systemctl reload` sends it: the configuration file is read
/// again and applied; an invalid file is logged with its line and column and the gateway runs on.
@Suite(.serialized) struct ReloadProcessTests {
    @Test func sighupReloadsTheFileAndAnInvalidOneLeavesTheGatewayRunning() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pg-reload-\(UUID().uuidString).yaml").path
        try LogFormatProcessTests.configuration(logFormat: nil).write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("pg-reload-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: log) }
        let process = Process()
        process.executableURL = try #require(GatewayProcess.binary, "presence-gateway was not built next to the tests")
        process.arguments = ["--config", path]
        process.standardError = try FileHandle(forWritingTo: log)
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        func logged(_ text: String, after offset: Int = 0) async throws -> Bool {
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let content = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                if content.dropFirst(offset).contains(text) { return true }
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            return false
        }
        func length() -> Int { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").count }
        #expect(try await logged("listening (oma)"))

        // A valid change (a peer added): reloaded.
        try (LogFormatProcessTests.configuration(logFormat: nil)
             + "peers:\n  - { name: kamailio, address: 127.0.0.1, port: 5070, side: oma, rate-limit: 50 }\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        var mark = length()
        kill(process.processIdentifier, SIGHUP)
        #expect(try await logged("configuration reloaded from \(path)", after: mark))

        // An invalid one: the error names the file, line and column; the gateway runs on.
        try "listen:\n  - { side: moon }\n".write(toFile: path, atomically: true, encoding: .utf8)
        mark = length()
        kill(process.processIdentifier, SIGHUP)
        #expect(try await logged("configuration not reloaded: \(path):2:", after: mark))
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(process.isRunning)

        // SIGTERM still stops it gracefully.
        process.terminate()
        await GatewayProcess.exit(of: process)
        #expect(process.terminationStatus == 0)
        #expect(try await logged("stopped"))
    }
}
