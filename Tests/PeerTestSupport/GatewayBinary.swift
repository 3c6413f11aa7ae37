import Foundation

/// The built `presence-gateway` (swift build --build-tests builds every product next to the test
/// bundle), for the tests that run it as a process.
public enum GatewayBinary {
    public static var path: String? {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("presence-gateway")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }
}
