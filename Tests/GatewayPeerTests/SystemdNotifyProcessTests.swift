import Foundation
import PeerTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Under a `Type=notify` unit (deploy/presence-gateway.service) systemd learns from the gateway
/// when it is ready, reloading and stopping (sd_notify(3): datagrams to `$NOTIFY_SOCKET`). Here
/// the test is systemd: it listens on a Unix datagram socket, starts the binary with
/// `NOTIFY_SOCKET` naming it, and reads what arrives, in order.
@Suite struct SystemdNotifyProcessTests {
    /// A bound Unix datagram socket at `path`.
    final class NotifySocket {
        let fd: Int32
        let path: String

        init(path: String) throws {
            self.path = path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard fd >= 0, bound == 0 else { throw PeerError("bind \(path): \(errno)") }
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit {
            close(fd)
            unlink(path)
        }

        /// The next datagram within `seconds`, nil when none came.
        func next(within seconds: Double) -> String? {
            let end = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 4096)
            while Date() < end {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n > 0 { return String(decoding: buffer[0..<n], as: UTF8.self) }
            }
            return nil
        }
    }

    @Test func readyReloadingAndStoppingAreToldToSystemd() async throws {
        let binary = try #require(GatewayBinary.path)
        let directory = NSTemporaryDirectory() + "notify-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notify = try NotifySocket(path: directory + "/notify")
        let ports = (oma: try LoopbackPorts.free(), enterprise: try LoopbackPorts.free(), admin: try LoopbackPorts.free())
        let configuration = directory + "/gateway.yaml"
        try DurableStateProcessTests.Gateway.yaml(
            listen: ports, enterprise: ("edge", try LoopbackPorts.free()), oma: ("oma", try LoopbackPorts.free()),
            state: "{ store: memory }"
        ).write(toFile: configuration, atomically: true, encoding: .utf8)
        let gateway = try ChildProcess(
            binary, ["--config", configuration], environment: ["NOTIFY_SOCKET": notify.path])
        defer { gateway.kill() }

        let starting = notify.next(within: 30)
        #expect(starting?.hasPrefix("STATUS=starting") == true, "\(starting ?? "nothing")")
        let ready = try #require(notify.next(within: 30), "no READY=1:\n\(gateway.output.suffix(2000))")
        #expect(ready.split(separator: "\n").first == "READY=1")
        #expect(ready.contains("STATUS=serving: 0 enterprise watchers"), "\(ready)")
        // Ready means ready: the SIP listeners answer by then.
        #expect(gateway.output.contains("listening (oma)"))

        kill(gateway.pid, SIGHUP)
        #expect(notify.next(within: 10)?.hasPrefix("RELOADING=1") == true)
        #expect(notify.next(within: 10)?.hasPrefix("READY=1") == true)

        kill(gateway.pid, SIGTERM)
        #expect(notify.next(within: 10)?.hasPrefix("STOPPING=1") == true)
        #expect(await gateway.wait(timeout: 20) == 0)
    }
}
