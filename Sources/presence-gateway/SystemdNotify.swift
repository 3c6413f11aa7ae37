import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// sd_notify(3) without libsystemd: a `Type=notify` unit hears that the gateway is ready (its
/// listeners bound and its dialogs restored), reloading, or stopping, with a status line for
/// `systemctl status`. One datagram to the Unix socket systemd names in `$NOTIFY_SOCKET` (a path,
/// or `@name` in the abstract namespace); without it, nothing is sent.
enum SystemdNotify {
    @discardableResult
    static func send(_ fields: [String], environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let message = Array(fields.joined(separator: "\n").utf8)
        guard let pathOffset = MemoryLayout.offset(of: \sockaddr_un.sun_path) else { return false }
        let length = socklen_t(pathOffset + bytes.count)
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, message, message.count, 0, $0, length) }
        }
        return sent == message.count
    }
}
