import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A failure of a peer test's own machinery (a program that would not start, a port never bound).
public struct PeerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A program started by a peer test (Kamailio's script, sipp), with its output in a file.
///
/// posix_spawn and waitpid rather than Foundation's `Process`: under `swift test` the child was
/// never reaped (it stayed a zombie and `isRunning` stayed true). The output goes through a file,
/// not a pipe: a daemon the program leaves running (Kamailio) would keep a pipe open.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    public let outputPath: String
    private var exitStatus: Int32?

    /// Starts `path` with `arguments`, stdin from /dev/null, stdout and stderr into a file; the
    /// environment is this process's with `environment` laid over it. With `workingDirectory` the
    /// program runs there (through `/bin/sh -c 'cd DIR && exec PROGRAM ARGS'`).
    public init(_ path: String, _ arguments: [String], environment: [String: String] = [:],
                workingDirectory: String? = nil) throws {
        var path = path
        var arguments = arguments
        if let workingDirectory {
            arguments = ["-c", #"cd "$0" && exec "$@""#, workingDirectory, path] + arguments
            path = "/bin/sh"
        }
        outputPath = NSTemporaryDirectory() + "peer-\(UInt64.random(in: 0...UInt64.max)).out"
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
        // The test runner's threads block most signals; a child inherits the spawning thread's
        // mask, and a program that counts on SIGALRM or SIGCHLD (Kamailio's timer process: tm's
        // retransmissions and timeouts, dispatcher's probing) would never see them. Every child
        // starts with an empty mask and default dispositions.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw PeerError("posix_spawn \(path): \(spawned)") }
        self.pid = pid
    }

    deinit {
        if exitStatus == nil { _ = kill() }
        try? FileManager.default.removeItem(atPath: outputPath)
    }

    /// The exit code once the program ended (-1 when a signal ended it), nil while it runs.
    public func poll() -> Int32? {
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        // WIFEXITED / WEXITSTATUS: the low 7 bits are the signal, the next 8 the exit code.
        exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
        return exitStatus
    }

    /// What the program wrote so far.
    public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    /// Waits (polling every 50 ms, without blocking a thread) until the program ends or `timeout`
    /// seconds pass; then it is killed (SIGTERM, 2 s, SIGKILL). Returns the exit code.
    public func wait(timeout: TimeInterval) async -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let code = poll() { return code }
            try? await Task.sleep(nanoseconds: 50_000_000)
        }
        return kill()
    }

    /// Sends `signal` (SIGKILL for a crash, SIGTERM, SIGHUP) and returns at once.
    public func send(_ signal: Int32) {
        guard poll() == nil else { return }
        Glibc.kill(pid, signal)
    }

    /// Ends the program: SIGTERM, up to 2 s, then SIGKILL; reaps it. Returns the exit code.
    @discardableResult
    public func kill() -> Int32 {
        if let code = poll() { return code }
        Glibc.kill(pid, SIGTERM)
        for _ in 0..<100 {
            if let code = poll() { return code }
            Thread.sleep(forTimeInterval: 0.02)
        }
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        exitStatus = -1
        return -1
    }

    /// ``kill()`` without blocking a thread: SIGTERM, up to 2 s (polled), then SIGKILL.
    @discardableResult
    public func terminate() async -> Int32 {
        if let code = poll() { return code }
        Glibc.kill(pid, SIGTERM)
        return await wait(timeout: 2)
    }

    /// Ends a program that leads a process group of its own (started through `setsid`, as
    /// Kamailio, which forks its workers): SIGTERM to the group, ``kill()``, then SIGKILL to
    /// whatever of the group is left.
    @discardableResult
    public func killGroup() -> Int32 {
        if poll() == nil { Glibc.kill(-pid, SIGTERM) }
        let code = kill()
        Glibc.kill(-pid, SIGKILL)
        return code
    }
}

/// Runs a program to its end, with a bound on its run time; returns its exit status and output.
/// It waits by polling, never blocking a thread: the test runner's threads are as many as the
/// machine's cores, and a test blocking one holds up every other test's awaits meanwhile.
@discardableResult
public func runProgram(_ path: String, _ arguments: [String], environment: [String: String] = [:],
                       timeout: TimeInterval = 30) async throws -> (status: Int32, output: String) {
    let child = try ChildProcess(path, arguments, environment: environment)
    let status = await child.wait(timeout: timeout)
    return (status, child.output)
}

/// Runs `body`, then `cleanup`, also when `body` throws: a `defer` that may await (stopping a
/// peer, a server or a cluster).
public func withCleanup<T>(_ body: () async throws -> T, cleanup: () async -> Void) async throws -> T {
    let result: T
    do {
        result = try await body()
    } catch {
        await cleanup()
        throw error
    }
    await cleanup()
    return result
}

/// Loopback ports for peers, chosen at run time.
public enum LoopbackPorts {
    /// A port on 127.0.0.1 that was free a moment ago on both UDP and TCP (bound to a socket of
    /// each and released) and that this process has not handed out before, so two tests running
    /// at once never get the same one. It lies outside the kernel's ephemeral range
    /// (`ip_local_port_range`), so no socket bound to port 0 (an outgoing connection of another
    /// test, say) takes it between this call and the bind of the program told to use it.
    public static func free() throws -> UInt16 {
        let candidates = outsideEphemeralRange
        for _ in 0..<256 {
            let port = UInt16.random(in: candidates)
            guard canBind(port, udp: true), canBind(port, udp: false) else { continue }
            let fresh = handedOut.withLock { $0.insert(port).inserted }
            if fresh { return port }
        }
        throw PeerError("no free loopback port in \(candidates) in 256 tries")
    }

    /// The ports below the ephemeral range, or above it when it starts too low to leave 4,096.
    private static let outsideEphemeralRange: ClosedRange<UInt16> = {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let bounds = text.split(whereSeparator: \.isWhitespace).compactMap { UInt16($0) }
        let (low, high): (UInt16, UInt16) = bounds.count == 2 ? (bounds[0], bounds[1]) : (32768, 60999)
        if low >= 10000 + 4096 { return 10000...(low - 1) }
        return high < 65535 - 4096 ? (high + 1)...65535 : 10000...65535
    }()

    private static let handedOut = Mutex<Set<UInt16>>([])

    /// Whether something is bound to `port` on 127.0.0.1 (UDP when `udp`, else TCP).
    public static func isBound(_ port: UInt16, udp: Bool) -> Bool { bindError(port, udp: udp) == EADDRINUSE }

    /// Whether something listens on TCP `port` of 127.0.0.1: a connection to it is accepted
    /// (and closed at once). Bound is not yet listening.
    public static func accepts(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = loopback(port: port)
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    private static func canBind(_ port: UInt16, udp: Bool) -> Bool { bindError(port, udp: udp) == 0 }

    /// Binds a socket to 127.0.0.1:`port` and closes it: 0, or the errno of the failure.
    private static func bindError(_ port: UInt16, udp: Bool) -> Int32 {
        let fd = socket(AF_INET, udp ? Int32(SOCK_DGRAM.rawValue) : Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        var addr = loopback(port: port)
        let result = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return result == 0 ? 0 : errno
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = port.bigEndian
        return addr
    }
}
