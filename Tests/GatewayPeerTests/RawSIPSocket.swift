import Foundation
import PeerTestSupport
import SIPMessages

#if canImport(Glibc)
import Glibc
#endif

/// A plain socket on 127.0.0.1 for the hostile-input tests: UDP (bound to a port of its own, so
/// it can play a peer that receives requests and answers them) or a TCP connection. Every
/// receive is bounded by a deadline; the socket is closed by ``close()`` or when released.
final class RawSIPSocket: @unchecked Sendable {
    let fd: Int32
    let udp: Bool
    /// The local port.
    let port: UInt16
    private var buffer: [UInt8] = []

    /// A UDP socket bound to a free port on 127.0.0.1.
    static func udp() throws -> RawSIPSocket {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw PeerError("socket: \(errno)") }
        var size: Int32 = 1 << 20
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var addr = Self.address(port: 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { ptr -> Int32 in
                guard bind(fd, ptr, len) == 0 else { return -1 }
                return getsockname(fd, ptr, &len)
            }
        }
        guard bound == 0 else {
            Glibc.close(fd)
            throw PeerError("bind: \(errno)")
        }
        return RawSIPSocket(fd: fd, udp: true, port: UInt16(bigEndian: addr.sin_port))
    }

    /// A TCP connection to 127.0.0.1:`port`, from `host` (another loopback address) when given.
    static func tcp(to port: UInt16, from host: String? = nil) throws -> RawSIPSocket {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw PeerError("socket: \(errno)") }
        if let host {
            var local = Self.address(port: 0)
            inet_pton(AF_INET, host, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                Glibc.close(fd)
                throw PeerError("bind \(host): \(errno)")
            }
        }
        var addr = Self.address(port: port)
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw PeerError("connect to 127.0.0.1:\(port): \(errno)")
        }
        var local = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return RawSIPSocket(fd: fd, udp: false, port: UInt16(bigEndian: local.sin_port))
    }

    /// A TCP socket listening on 127.0.0.1:`port` (a UDP peer's port, for what the gateway
    /// sends it over TCP, RFC 3261 §18.1.1); ``accept(within:)`` takes its connections.
    static func listening(on port: UInt16) throws -> RawSIPSocket {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw PeerError("socket: \(errno)") }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var addr = Self.address(port: port)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0, fcntl(fd, F_SETFL, O_NONBLOCK) == 0 else {
            Glibc.close(fd)
            throw PeerError("listen on 127.0.0.1:\(port): \(errno)")
        }
        return RawSIPSocket(fd: fd, udp: false, port: port)
    }

    /// A connection to this listening socket made within `seconds`, else nil.
    func accept(within seconds: Double) async -> RawSIPSocket? {
        let deadline = Date().addingTimeInterval(seconds)
        while deadline.timeIntervalSinceNow > 0 {
            let client = Glibc.accept(fd, nil, nil)
            if client >= 0 { return RawSIPSocket(fd: client, udp: false, port: port) }
            try? await Task.sleep(nanoseconds: 5_000_000)
        }
        return nil
    }

    private init(fd: Int32, udp: Bool, port: UInt16) {
        self.fd = fd
        self.udp = udp
        self.port = port
    }

    deinit { close() }

    private var closed = false
    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    static func address(port: UInt16) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = port.bigEndian
        return addr
    }

    /// Sends one datagram to 127.0.0.1:`port` (UDP); the size sent, or -1 with errno.
    @discardableResult
    func send(_ bytes: [UInt8], to port: UInt16) -> Int {
        var addr = Self.address(port: port)
        return bytes.withUnsafeBytes { raw in
            withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, raw.baseAddress, raw.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// Writes all of `bytes` on the TCP connection; false when the peer closed it (EPIPE,
    /// ECONNRESET) before all was written.
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// The next SIP message received within `seconds` (UDP: a datagram; TCP: framed by
    /// Content-Length), parsed; nil on timeout, on close, or when it does not parse. The socket
    /// is polled every 5 ms without blocking a thread of the test runner.
    func receive(within seconds: Double) async -> SIPMessage? {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if !udp, let message = frameBuffered() { return message }
            guard deadline.timeIntervalSinceNow > 0 else { return nil }
            var chunk = [UInt8](repeating: 0, count: 70_000)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                try? await Task.sleep(nanoseconds: 5_000_000)
                continue
            }
            if n <= 0 { return udp ? nil : frameBuffered() }
            if udp { return try? SIPMessage(parsing: Array(chunk[0..<n])) }
            buffer += chunk[0..<n]
        }
    }

    /// The first message that `matching` accepts within `seconds`; others (retransmissions,
    /// notifications) are passed over.
    func receive(within seconds: Double, matching: (SIPMessage) -> Bool) async -> SIPMessage? {
        let deadline = Date().addingTimeInterval(seconds)
        while deadline.timeIntervalSinceNow > 0 {
            guard let message = await receive(within: deadline.timeIntervalSinceNow) else { return nil }
            if matching(message) { return message }
        }
        return nil
    }

    /// Whether the TCP peer closed the connection within `seconds` (a read gives end of file or
    /// a reset).
    func closedByPeer(within seconds: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while deadline.timeIntervalSinceNow > 0 {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) { return true }
            if n < 0 { try? await Task.sleep(nanoseconds: 5_000_000) }
        }
        return false
    }

    /// One complete message at the front of the TCP buffer (RFC 3261 §18.3 framing).
    private func frameBuffered() -> SIPMessage? {
        guard let end = buffer.firstRange(of: [13, 10, 13, 10])?.upperBound else { return nil }
        let head = String(decoding: buffer[..<end], as: UTF8.self)
        var length = 0
        for line in head.split(separator: "\r\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, ["content-length", "l"].contains(parts[0].trimmingCharacters(in: .whitespaces).lowercased()) {
                length = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
            }
        }
        guard buffer.count >= end + length else { return nil }
        let bytes = Array(buffer[..<(end + length)])
        buffer.removeFirst(end + length)
        return try? SIPMessage(parsing: bytes)
    }
}
