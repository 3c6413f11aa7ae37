/// A 128 bit IPv6 address, the RDATA of an AAAA record (RFC 3596 §2.2).
public struct DNSIPv6Address: Sendable, Hashable, CustomStringConvertible {
    /// The 16 octets, network order.
    public private(set) var bytes: [UInt8]

    /// From exactly 16 octets; nil otherwise.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses the text forms of RFC 4291 §2.2 (`2001:db8::1`, `::`, `::ffff:192.0.2.1`), without
    /// brackets or zone index; nil for anything else.
    public init?(_ text: some StringProtocol) {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty, utf8.count <= 45 else { return nil }
        // Split around at most one "::".
        var head: [ArraySlice<UInt8>] = []
        var tail: [ArraySlice<UInt8>] = []
        var compressed = false
        if let range = Self.doubleColon(in: utf8) {
            compressed = true
            let left = utf8[..<range.lowerBound]
            let right = utf8[range.upperBound...]
            guard Self.doubleColon(in: Array(right)) == nil else { return nil }
            head = left.isEmpty ? [] : left.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
            tail = right.isEmpty ? [] : right.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        } else {
            head = utf8[...].split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        }
        func groups(_ parts: [ArraySlice<UInt8>], allowIPv4Tail: Bool) -> [UInt8]? {
            var out: [UInt8] = []
            for (index, part) in parts.enumerated() {
                if allowIPv4Tail, index == parts.count - 1, part.contains(UInt8(ascii: ".")) {
                    guard let v4 = DNSIPv4Address(String(decoding: part, as: UTF8.self)) else { return nil }
                    out += v4.bytes
                    continue
                }
                guard (1...4).contains(part.count) else { return nil }
                var value: UInt16 = 0
                for byte in part {
                    guard let digit = Self.hexDigit(byte) else { return nil }
                    value = value << 4 | UInt16(digit)
                }
                out += [UInt8(value >> 8), UInt8(value & 0xFF)]
            }
            return out
        }
        guard let first = groups(head, allowIPv4Tail: !compressed),
            let last = groups(tail, allowIPv4Tail: true)
        else { return nil }
        if compressed {
            guard first.count + last.count <= 14 else { return nil }
            bytes = first + [UInt8](repeating: 0, count: 16 - first.count - last.count) + last
        } else {
            guard first.count == 16 else { return nil }
            bytes = first
        }
    }

    private static func doubleColon(in bytes: [UInt8]) -> Range<Int>? {
        guard bytes.count >= 2 else { return nil }
        for index in 0..<(bytes.count - 1)
        where bytes[index] == UInt8(ascii: ":") && bytes[index + 1] == UInt8(ascii: ":") {
            return index..<(index + 2)
        }
        return nil
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The canonical text of RFC 5952 §4: lowercase hex, no leading zeros, the longest run of
    /// two or more zero groups (the first of equal runs) written as `::`.
    public var description: String {
        let groups = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
        var bestStart = -1
        var bestLength = 0
        var index = 0
        while index < 8 {
            if groups[index] == 0 {
                var end = index
                while end < 8 && groups[end] == 0 { end += 1 }
                if end - index > bestLength {
                    bestStart = index
                    bestLength = end - index
                }
                index = end
            } else {
                index += 1
            }
        }
        if bestLength < 2 { bestStart = -1 }
        func hex(_ value: UInt16) -> String { String(value, radix: 16) }
        if bestStart < 0 { return groups.map(hex).joined(separator: ":") }
        let left = groups[..<bestStart].map(hex).joined(separator: ":")
        let right = groups[(bestStart + bestLength)...].map(hex).joined(separator: ":")
        return left + "::" + right
    }
}
