import Foundation
import Testing

/// The built `presence-gateway` (swift build --build-tests builds every product next to the test
/// bundle), run as a child process by the process-level tests.
enum GatewayProcess {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static var binary: URL? {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("presence-gateway")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `executable` (default: the gateway) with `arguments` in the package root until it
    /// ends (killed after 60 s).
    static func run(_ arguments: [String], executable: URL? = nil) async throws -> Result {
        try await runUntil(nil, executable: executable, arguments)
    }

    /// Starts the gateway with `arguments` and, once its standard error contains `ready` (at most
    /// 30 s), stops it with SIGTERM; returns what it wrote. Without `ready` it runs to its end.
    /// The output goes through files, so nothing blocks on a full pipe while it runs.
    static func runUntil(_ ready: String?, executable: URL? = nil, _ arguments: [String]) async throws -> Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pg-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let errURL = directory.appendingPathComponent("stderr"), outURL = directory.appendingPathComponent("stdout")
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        // Unwrapped into a non-optional first: given straight to the optional property,
        // `#require` took the optional itself as its value and never failed.
        let program: URL = try #require(executable ?? binary, "presence-gateway was not built next to the tests")
        let process = Process()
        process.executableURL = program
        process.arguments = arguments
        process.currentDirectoryURL = packageRoot
        process.standardError = try FileHandle(forWritingTo: errURL)
        process.standardOutput = try FileHandle(forWritingTo: outURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        func read(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }
        let deadline = Date().addingTimeInterval(ready == nil ? 60 : 30)
        while process.isRunning, Date() < deadline, ready.map({ !read(errURL).contains($0) }) ?? true {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        if let ready {
            #expect(read(errURL).contains(ready), "never logged \(ready.debugDescription); standard error:\n\(read(errURL))")
        }
        if process.isRunning { process.terminate() }
        await exit(of: process)
        return Result(status: process.terminationStatus, stdout: read(outURL), stderr: read(errURL))
    }

    /// Waits for `process` to end, polling every 20 ms: `waitUntilExit()` would block one of the
    /// test runner's threads, which are as many as the machine's cores.
    static func exit(of process: Process) async {
        while process.isRunning { try? await Task.sleep(nanoseconds: 20_000_000) }
    }
}
