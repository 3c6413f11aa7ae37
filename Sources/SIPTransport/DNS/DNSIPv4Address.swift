/// A 32 bit Internet address, the RDATA of an A record (RFC 1035 §3.4.1).
public struct DNSIPv4Address: Sendable, Hashable, CustomStringConvertible {
    public var octets: (UInt8, UInt8, UInt8, UInt8)

    public init(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) { octets = (a, b, c, d) }

    /// Parses dotted-decimal text (`IPv4address = 1*3DIGIT "." 1*3DIGIT "." 1*3DIGIT "." 1*3DIGIT`,
    /// RFC 3261 §25.1), each part 0...255; nil for anything else.
    public init?(_ text: some StringProtocol) {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var values: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count) else { return nil }
            var value = 0
            for byte in part {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            guard value <= 255 else { return nil }
            values.append(UInt8(value))
        }
        octets = (values[0], values[1], values[2], values[3])
    }

    public var bytes: [UInt8] { [octets.0, octets.1, octets.2, octets.3] }

    public var description: String { "\(octets.0).\(octets.1).\(octets.2).\(octets.3)" }

    public static func == (a: Self, b: Self) -> Bool { a.bytes == b.bytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}
