import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOPosix
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// Which tools the peer tests need; `scripts/setup.sh` installs them (Debian packages
/// `kamailio kamailio-presence-modules kamailio-sqlite-modules sqlite3 sip-tester`).
enum PeerTools {
    static func installed(_ path: String) -> Bool { FileManager.default.isExecutableFile(atPath: path) }
    static let kamailio = installed("/usr/sbin/kamailio") && installed("/usr/bin/sqlite3")
        && FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/kamailio/modules/presence.so")
    static let sipp = installed("/usr/bin/sipp")

    struct Missing: Error, CustomStringConvertible {
        var description: String
        init(_ what: String) { description = "not installed: \(what)" }
    }

    /// This directory (the test sources, where `Kamailio/` and `sipp/` live).
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
}

/// Runs a program to its end, with a bound on its run time; returns its exit status and output.
///
/// posix_spawn and waitpid rather than Foundation's `Process`: under `swift test` the child was
/// never reaped (it stayed a zombie and `isRunning` stayed true). The output goes through a file,
/// not a pipe: a daemon the program leaves running (Kamailio) would keep a pipe open.
@discardableResult
func runProgram(_ path: String, _ arguments: [String], environment: [String: String] = [:],
                timeout: TimeInterval = 30) throws -> (status: Int32, output: String) {
    let outputPath = NSTemporaryDirectory() + "event-peer-\(UInt64.random(in: 0...UInt64.max)).out"
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    let env = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }.map { "\($0.key)=\($0.value)" }
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = env.map { strdup($0) } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
    guard spawned == 0 else { throw PeerError("posix_spawn \(path): \(spawned)") }
    var status: Int32 = 0
    let deadline = Date().addingTimeInterval(timeout)
    var exited = false
    while Date() < deadline {
        if waitpid(pid, &status, WNOHANG) == pid { exited = true; break }
        Thread.sleep(forTimeInterval: 0.02)
    }
    if !exited {
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
    }
    let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    // WIFEXITED / WEXITSTATUS: the low 7 bits are the signal, the next 8 the exit code.
    let code: Int32 = exited && (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
    return (code, text)
}

/// A free loopback port (bound by the kernel to a UDP socket for a moment, then released).
func freeLoopbackPort() async throws -> UInt16 {
    let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .bind(host: "127.0.0.1", port: 0).get()
    let port = channel.localAddress?.port ?? 0
    try await channel.close()
    return UInt16(port)
}

/// A throw-away Kamailio presence server on 127.0.0.1 (Tests/EventPeerTests/Kamailio, from the
/// project's peer kit), started and stopped by its script with its own run directory.
final class KamailioPresenceServer: Sendable {
    let port: UInt16
    let runDirectory: String
    let script = PeerTools.directory.appendingPathComponent("Kamailio/run-kamailio.sh").path

    init(port: UInt16) throws {
        self.port = port
        runDirectory = NSTemporaryDirectory() + "kamailio-events-\(port)-\(UInt32.random(in: 0...UInt32.max))"
        let (status, output) = try runProgram("/bin/bash", [script, "start", "presence"],
                                              environment: ["KAM_RUNDIR": runDirectory, "KAM_PORT": String(port)])
        guard status == 0 else {
            stop()
            throw PeerError("Kamailio did not start: \(output)")
        }
    }

    var target: SIPTarget { SIPTarget(.udp, host: "127.0.0.1", port: port) }

    func stop() {
        _ = try? runProgram("/bin/bash", [script, "stop", "presence"], environment: ["KAM_RUNDIR": runDirectory])
    }

    var log: String { (try? String(contentsOfFile: runDirectory + "/kamailio.log", encoding: .utf8)) ?? "" }
}

struct PeerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Waits (polling on the loop, every 20 ms) until `condition` holds or `seconds` pass; returns
/// whether it held. The condition runs on `loop`, where the agents' state lives.
func eventually(on loop: any EventLoop, within seconds: Double = 5, _ condition: @escaping @Sendable () -> Bool) async throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await loop.submit(condition).get() { return true }
        try await Task.sleep(nanoseconds: 20_000_000)
    }
    return try await loop.submit(condition).get()
}
