import Foundation
import Testing

/// Runs sipp (Debian package `sip-tester`) on loopback against the stack under test.
///
/// Every run is bounded: a call count (`-m`), sipp's own global `-timeout`, and a wall-clock kill
/// after `deadline`. Only 127.0.0.1 / ::1 are ever addressed.
struct SIPp {
    struct Run {
        var exitCode: Int32
        var output: String
        /// sipp's `-trace_msg` log: every message it sent and received, and every loss it simulated.
        var messageLog: String
        var succeeded: Bool { exitCode == 0 }
    }

    static let scenarios = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Scenarios")

    /// The sipp binary, or a failure telling how to get it (scripts/setup.sh installs it).
    static func executable() throws -> URL {
        for dir in ["/usr/bin", "/usr/local/bin"] {
            let url = URL(fileURLWithPath: dir).appendingPathComponent("sipp")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw SIPpMissing()
    }

    struct SIPpMissing: Error, CustomStringConvertible {
        var description: String { "sipp not found: install Debian's sip-tester (bash scripts/setup.sh does)" }
    }

    /// Runs `scenario` with `arguments` (remote host:port first for a UAC) and waits for it.
    static func run(scenario: String, _ arguments: [String], deadline: Duration = .seconds(60)) throws -> Run {
        let work = FileManager.default.temporaryDirectory
            .appendingPathComponent("sipp-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let messageFile = work.appendingPathComponent("messages.log")
        let process = Process()
        process.executableURL = try executable()
        process.currentDirectoryURL = work
        let timeout = max(1, Int(deadline.components.seconds) - 2)
        process.arguments = arguments + [
            "-sf", scenarios.appendingPathComponent(scenario).path,
            "-timeout", "\(timeout)s", "-timeout_error",
            "-trace_msg", "-message_file", messageFile.path,
            "-nostdin",
        ]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(
            deadline: .now() + .milliseconds(Int(deadline.components.seconds * 1000)), execute: killer)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        killer.cancel()
        let log = (try? String(contentsOf: messageFile, encoding: .utf8)) ?? ""
        return Run(exitCode: process.terminationStatus, output: String(decoding: data, as: UTF8.self),
                   messageLog: log)
    }

    /// A free local port for sipp to listen on (bound and released; loopback only).
    static func freeUDPPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ptr -> Int32 in
                guard bind(fd, ptr, len) == 0 else { return -1 }
                return getsockname(fd, ptr, &len)
            }
        }
        guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
        return UInt16(bigEndian: addr.sin_port)
    }
}
