#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IP network in CIDR notation (`192.168.1.0/24`, `fd00::/8`).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The address bytes (4 or 16).
    public var address: [UInt8]
    public var prefixLength: Int

    /// Reads `address/prefix` or a single address; nil when it is neither.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let bytes = Self.addressBytes(String(first)) else { return nil }
        let length = parts.count == 2 ? Int(parts[1]) : bytes.count * 8
        guard let length, length >= 0, length <= bytes.count * 8 else { return nil }
        address = bytes
        prefixLength = length
    }

    public var description: String { "\(address)/\(prefixLength)" }

    /// True when `host` (an IP literal, IPv6 with or without brackets) is in this network.
    public func contains(_ host: String) -> Bool {
        guard let bytes = Self.addressBytes(host), bytes.count == address.count else { return false }
        var bits = prefixLength
        for (a, b) in zip(address, bytes) where bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xFF : ~(0xFF >> UInt8(bits))
            if a & mask != b & mask { return false }
            bits -= 8
        }
        return true
    }

    /// 127.0.0.0/8 and ::1, always allowed as callbacks.
    public static let loopback: [IPNetwork] = [IPNetwork("127.0.0.0/8"), IPNetwork("::1/128")].compactMap { $0 }

    /// The bytes of an IPv4 or IPv6 literal (inet_pton), nil for anything else (a DNS name).
    static func addressBytes(_ text: String) -> [UInt8]? {
        var host = text
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, host, &v4) == 1 { return v4 }
        var v6 = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET6, host, &v6) == 1 { return v6 }
        return nil
    }
}
