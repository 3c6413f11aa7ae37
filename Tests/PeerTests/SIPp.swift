import Foundation
import Testing

/// Runs sipp (Debian package `sip-tester`) on loopback against the stack under test.
///
/// Every run is bounded three ways: a call count (`-m`), sipp's own global `-timeout` (with
/// `-timeout_error`, so reaching it is a failure), and a wall-clock kill (SIGTERM, then SIGKILL)
/// after `deadline`. Only 127.0.0.1 is ever addressed. sipp's screen goes to a file, not a pipe,
/// so nothing can block on a full pipe.
struct SIPp {
    /// What a finished sipp run left behind.
    struct Run: Sendable, CustomStringConvertible {
        var exitCode: Int32
        /// sipp's screen and error output.
        var output: String
        /// sipp's `-trace_msg` log: every message it sent and received.
        var messageLog: String
        /// sipp's `-trace_err` log: unexpected messages, lost packets, failed calls.
        var errorLog: String
        /// sipp: 0 when every call succeeded, 1 when at least one failed, 97/99 on an abnormal
        /// stop, 255 on a fatal error.
        var succeeded: Bool { exitCode == 0 }

        /// How many messages the log shows sipp received whose first line starts with `startLine`.
        func received(_ startLine: String) -> Int { count(direction: "received", startLine) }
        /// How many messages the log shows sipp sent whose first line starts with `startLine`.
        func sent(_ startLine: String) -> Int { count(direction: "sent", startLine) }

        /// sipp's `-trace_msg` entries read "... UDP message received [N] bytes :" (or "sent"),
        /// a blank line, then the message.
        private func count(direction: String, _ startLine: String) -> Int {
            let lines = messageLog.split(separator: "\n", omittingEmptySubsequences: false)
            var total = 0
            var i = 0
            while i < lines.count {
                if lines[i].contains("message \(direction) ") {
                    var j = i + 1
                    while j < lines.count, lines[j].trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { j += 1 }
                    if j < lines.count, lines[j].hasPrefix(startLine) { total += 1 }
                    i = j
                } else {
                    i += 1
                }
            }
            return total
        }

        var description: String {
            "sipp exit \(exitCode)\n--- output (tail)\n\(output.suffix(3000))\n--- errors (tail)\n\(errorLog.suffix(3000))"
        }
    }

    /// The scenario files next to this source file.
    static let scenarios = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Scenarios")

    /// The sipp binary, or a failure telling how to get it (scripts/setup.sh installs it). The
    /// peer tests never skip silently: CI installs sipp, so a missing one is an error.
    static func executable() throws -> URL {
        for dir in ["/usr/bin", "/usr/local/bin", "/usr/sbin"] {
            let url = URL(fileURLWithPath: dir).appendingPathComponent("sipp")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw SIPpMissing()
    }

    struct SIPpMissing: Error, CustomStringConvertible {
        var description: String {
            "sipp not found in /usr/bin or /usr/local/bin: install Debian's sip-tester package (bash scripts/setup.sh does)"
        }
    }

    /// A sipp process under way.
    final class Running: @unchecked Sendable {
        let process: Process
        let work: URL
        private let finished = DispatchSemaphore(value: 0)
        private let killer: DispatchWorkItem

        fileprivate init(process: Process, work: URL, deadline: Duration) {
            self.process = process
            self.work = work
            let pid = process.processIdentifier
            killer = DispatchWorkItem { [process] in
                guard process.isRunning else { return }
                process.terminate()
                DispatchQueue.global().asyncAfter(deadline: .now() + 2) {
                    if process.isRunning { kill(pid, SIGKILL) }
                }
            }
            let millis = Int(deadline.components.seconds) * 1000 + Int(deadline.components.attoseconds / 1_000_000_000_000_000)
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(millis), execute: killer)
        }

        /// Waits for sipp to exit (it will: the wall-clock kill bounds it) and collects its logs.
        func finish() async -> Run {
            let process = self.process
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    process.waitUntilExit()
                    continuation.resume()
                }
            }
            killer.cancel()
            defer { try? FileManager.default.removeItem(at: work) }
            func read(_ name: String) -> String {
                guard let data = FileManager.default.contents(atPath: work.appendingPathComponent(name).path) else { return "" }
                return String(decoding: data, as: UTF8.self)
            }
            let logs = (try? FileManager.default.contentsOfDirectory(atPath: work.path)) ?? []
            let errorLog = logs.filter { $0.hasSuffix("_errors.log") }.map(read).joined()
            return Run(exitCode: process.terminationStatus, output: read("screen.out"),
                       messageLog: read("messages.log"), errorLog: errorLog)
        }
    }

    /// Starts sipp on `scenario` with `arguments` (remote host:port first for a UAC); bounded by
    /// `deadline` (sipp's `-timeout` is set 2 s shorter).
    static func start(scenario: String, _ arguments: [String], deadline: Duration = .seconds(30)) throws -> Running {
        let executable = try executable()
        let work = FileManager.default.temporaryDirectory
            .appendingPathComponent("sipp-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let screen = work.appendingPathComponent("screen.out")
        guard FileManager.default.createFile(atPath: screen.path, contents: nil) else {
            throw PeerTestFailure("cannot create \(screen.path)")
        }
        let output = try FileHandle(forWritingTo: screen)
        let process = Process()
        process.executableURL = executable
        process.currentDirectoryURL = work
        let timeout = max(1, Int(deadline.components.seconds) - 2)
        process.arguments = arguments + [
            "-sf", scenarios.appendingPathComponent(scenario).path,
            "-timeout", "\(timeout)s", "-timeout_error",
            "-trace_msg", "-message_file", work.appendingPathComponent("messages.log").path,
            "-trace_err",
            "-nostdin",
        ]
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try? output.close()
        return Running(process: process, work: work, deadline: deadline)
    }

    /// Runs sipp to the end. When sipp could not bind its port (exit 254: a port chosen free was
    /// taken by a test running beside this one before sipp bound it), the `-p` port is replaced by
    /// another free one and sipp runs again, at most 3 runs.
    static func run(scenario: String, _ arguments: [String], deadline: Duration = .seconds(30)) async throws -> Run {
        var arguments = arguments
        var result = try await start(scenario: scenario, arguments, deadline: deadline).finish()
        for _ in 0..<2 where result.exitCode == 254 {
            guard let flag = arguments.firstIndex(of: "-p"), flag + 1 < arguments.count else { break }
            arguments[flag + 1] = String(try freePort(arguments.contains("t1") ? tcp : udp))
            result = try await start(scenario: scenario, arguments, deadline: deadline).finish()
        }
        return result
    }

    /// A port on 127.0.0.1 that was free a moment ago (bound and released), for sipp to listen on.
    static func freePort(_ type: Int32) throws -> UInt16 {
        let fd = socket(AF_INET, type, 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        defer { close(fd) }
        var addr = loopback(port: 0)
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

    /// Whether something is bound to `port` on 127.0.0.1 (a bind without SO_REUSEADDR fails).
    static func isBound(_ port: UInt16, _ type: Int32) -> Bool {
        let fd = socket(AF_INET, type, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = loopback(port: port)
        let result = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result != 0 && errno == EADDRINUSE
    }

    /// Waits (at most 10 s) until sipp has bound `port`.
    static func waitUntilListening(_ port: UInt16, _ type: Int32, _ running: Running) async throws {
        _ = try await waitFor("sipp to listen on 127.0.0.1:\(port)") {
            guard running.process.isRunning else { return false }
            return isBound(port, type) ? true : nil
        }
        guard running.process.isRunning else {
            let run = await running.finish()
            throw PeerTestFailure("sipp stopped before listening: \(run)")
        }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = port.bigEndian
        return addr
    }

    static let udp = Int32(SOCK_DGRAM.rawValue)
    static let tcp = Int32(SOCK_STREAM.rawValue)
}
