import Foundation

/// sipp (Debian package `sip-tester`) for the real-peer tests, on 127.0.0.1 only.
///
/// Every run is bounded: a call count (`-m`), sipp's own `-timeout` with `-timeout_error` (so
/// reaching it is a failure), and a wall-clock kill a few seconds later. sipp's screen goes to a
/// file, and `-trace_msg` keeps every message it sent and received, which the tests read.
public enum Sipp {
    /// The sipp binary, or a failure saying how to get it: the peer tests never skip silently
    /// (CI installs sipp with scripts/setup.sh, so a missing one is an error).
    public static func executable() throws -> String {
        for dir in ["/usr/bin", "/usr/local/bin"] where FileManager.default.isExecutableFile(atPath: dir + "/sipp") {
            return dir + "/sipp"
        }
        throw PeerError("sipp is not installed: bash scripts/setup.sh installs Debian's sip-tester")
    }

    /// One message in a `-trace_msg` log.
    public struct TracedMessage: Sendable {
        public var received: Bool
        /// The message as it went over the wire.
        public var bytes: [UInt8]
        public var text: String { String(decoding: bytes, as: UTF8.self) }
        /// The request line or status line.
        public var startLine: Substring { text.prefix { $0 != "\r" && $0 != "\n" } }
    }

    /// Reads a `-trace_msg` log: entries "UDP message sent (N bytes):" or "TCP message received
    /// [N] bytes :", a blank line, then N bytes of message.
    public static func parseTrace(_ log: [UInt8]) -> [TracedMessage] {
        var messages: [TracedMessage] = []
        var i = 0
        let marker = Array(" message ".utf8)
        while i < log.count {
            guard let found = firstIndex(of: marker, in: log, from: i) else { break }
            guard let lineEnd = log[found...].firstIndex(of: UInt8(ascii: "\n")) else { break }
            let line = String(decoding: log[found..<lineEnd], as: UTF8.self)
            let digits = line.drop { !$0.isNumber }.prefix { $0.isNumber }
            guard let count = Int(digits) else { i = lineEnd; continue }
            var start = lineEnd + 1
            while start < log.count, log[start] == UInt8(ascii: "\n") { start += 1 }
            let end = min(log.count, start + count)
            messages.append(TracedMessage(received: line.contains("received"), bytes: Array(log[start..<end])))
            i = end
        }
        return messages
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        var i = from
        while i + needle.count <= haystack.count {
            if haystack[i] == needle[0], Array(haystack[i..<(i + needle.count)]) == needle { return i }
            i += 1
        }
        return nil
    }

    /// A finished sipp run.
    public struct Run: Sendable, CustomStringConvertible {
        public var exitCode: Int32
        public var output: String
        public var errorLog: String
        public var messages: [TracedMessage]
        /// sipp exits 0 when every call succeeded.
        public var succeeded: Bool { exitCode == 0 }
        public var received: [TracedMessage] { messages.filter(\.received) }
        public var sent: [TracedMessage] { messages.filter { !$0.received } }
        public var description: String {
            "sipp exit \(exitCode)\n--- screen (tail)\n\(output.suffix(2500))\n--- errors (tail)\n\(errorLog.suffix(2500))" +
                "\n--- messages (tail)\n\(messages.suffix(6).map(\.text).joined(separator: "\n----\n").suffix(6000))"
        }
    }

    /// A sipp process under way.
    public final class Running: @unchecked Sendable {
        public let port: UInt16
        let child: ChildProcess
        let work: String
        let limit: TimeInterval

        init(port: UInt16, child: ChildProcess, work: String, limit: TimeInterval) {
            self.port = port
            self.child = child
            self.work = work
            self.limit = limit
        }

        /// Whether sipp is still running.
        public var isRunning: Bool { child.poll() == nil }

        /// Waits for sipp to end (at most its time limit; then it is killed) and reads its logs.
        public func finish() async -> Run {
            let code = await child.wait(timeout: limit)
            return collect(code)
        }

        /// Ends sipp now (SIGTERM, then SIGKILL) and reads its logs.
        public func stop() -> Run { collect(child.kill()) }

        private func collect(_ code: Int32) -> Run {
            defer { try? FileManager.default.removeItem(atPath: work) }
            let files = (try? FileManager.default.contentsOfDirectory(atPath: work)) ?? []
            let errors = files.filter { $0.hasSuffix("_errors.log") }
                .compactMap { try? String(contentsOfFile: work + "/" + $0, encoding: .utf8) }.joined()
            let trace = FileManager.default.contents(atPath: work + "/messages.log").map { Array($0) } ?? []
            return Run(exitCode: code, output: child.output, errorLog: errors, messages: Sipp.parseTrace(trace))
        }
    }

    /// Starts sipp on `scenario` (a path) as a UAC toward `remote` ("127.0.0.1:PORT") or, with
    /// nil, as a UAS; `tcp` selects `-t t1` (else `-t u1`); `keys` become `-key NAME VALUE`.
    /// sipp listens on a port chosen free at run time; when it cannot bind it (exit 254: another
    /// test took the port after it was chosen) it is started again on another, at most 3 times.
    /// A UAS is returned once its port is bound.
    public static func start(scenario: String, remote: String?, tcp: Bool = false, keys: [String: String] = [:],
                             calls: Int = 1, timeLimit: TimeInterval = 60, extra: [String] = []) async throws -> Running {
        let sipp = try executable()
        var lastOutput = ""
        for _ in 0..<3 {
            let port = try LoopbackPorts.free()
            let work = NSTemporaryDirectory() + "sipp-\(UInt64.random(in: 0...UInt64.max))"
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            var arguments = remote.map { [$0] } ?? []
            arguments += ["-sf", scenario, "-i", "127.0.0.1", "-p", String(port), "-t", tcp ? "t1" : "u1",
                          "-m", String(calls), "-timeout", "\(Int(timeLimit))s", "-timeout_error",
                          "-trace_msg", "-message_file", work + "/messages.log", "-trace_err", "-nostdin",
                          "-max_recv_loops", "1000"]
            for (key, value) in keys.sorted(by: { $0.key < $1.key }) { arguments += ["-key", key, value] }
            arguments += extra
            let child = try ChildProcess(sipp, arguments, workingDirectory: work)
            let running = Running(port: port, child: child, work: work, limit: timeLimit + 5)
            // Bound, or ended (exit 254: could not bind), within 10 s.
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline, child.poll() == nil, !LoopbackPorts.isBound(port, udp: !tcp) {
                try await Task.sleep(nanoseconds: 20_000_000)
            }
            // A port bound by another program looks the same as sipp's own: sipp, failing to
            // bind it, ends within a moment.
            try await Task.sleep(nanoseconds: 150_000_000)
            if child.poll() == 254 {
                lastOutput = child.output
                try? FileManager.default.removeItem(atPath: work)
                continue
            }
            return running
        }
        throw PeerError("sipp could not bind a port in 3 tries:\n\(lastOutput.suffix(2000))")
    }

    /// Runs sipp to its end (see ``start(scenario:remote:tcp:keys:calls:timeLimit:extra:)``).
    public static func run(scenario: String, remote: String?, tcp: Bool = false, keys: [String: String] = [:],
                           calls: Int = 1, timeLimit: TimeInterval = 60, extra: [String] = []) async throws -> Run {
        try await start(scenario: scenario, remote: remote, tcp: tcp, keys: keys, calls: calls, timeLimit: timeLimit, extra: extra).finish()
    }
}
