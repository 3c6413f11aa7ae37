import Foundation
public import XMLBridge

extension CalendarData.FreeBusy {
    /// The instance id that selects the "01" encoding: its two most significant bits are 01.
    public static let versionedEncodingInstance: UInt32 = 0x4000_0000

    /// Decodes the base64 blocks. The calendarData instance id chooses the
    /// encoding: top bits `00` → 2 bits per block (Fr 00, Te 01, Bu 10, Oo 11);
    /// `01` → a byte with the number of states, a fallback map of
    /// (states − 5) bytes, then blocks of the smallest width holding the states.
    /// Bits are read most significant first, as the seed's examples show.
    public func blocks(instance: UInt32) throws(XMLError) -> [FreeBusyState] {
        let text = data.filter { !$0.isWhitespace }
        if text.isEmpty { return [] }
        guard let decoded = Data(base64Encoded: text) else {
            throw XMLError(.unexpectedContent, "freeBusy: not base64")
        }
        let bytes = [UInt8](decoded)
        switch instance >> 30 {
        case 0:
            return Self.read(bytes, from: 0, width: 2, count: bytes.count * 4).compactMap {
                FreeBusyState(rawValue: UInt8($0))
            }
        case 1:
            guard let states = bytes.first, states >= 5 else {
                throw XMLError(.unexpectedContent, "freeBusy: the state count must be at least 5")
            }
            let fallback = Array(bytes.dropFirst().prefix(Int(states) - 5))
            guard fallback.count == Int(states) - 5 else {
                throw XMLError(.unexpectedContent, "freeBusy: fallback map truncated")
            }
            var width = 1
            while (1 << width) < Int(states) { width += 1 }
            let start = (1 + fallback.count) * 8
            let count = (bytes.count * 8 - start) / width
            return Self.read(bytes, from: start, width: width, count: count).map { value in
                // A newer state falls back through the map (each entry is older than its index + 5).
                var v = value
                while v >= 5, v - 5 < fallback.count, Int(fallback[v - 5]) < v { v = Int(fallback[v - 5]) }
                return FreeBusyState(rawValue: UInt8(clamping: v)) ?? .busy
            }
        default:
            throw XMLError(.unexpectedContent, "freeBusy: instance \(instance) names no known encoding")
        }
    }

    /// Encodes blocks; returns the free/busy value and the calendarData instance
    /// id its encoding requires (0 for the 2-bit form, 0x40000000 when a
    /// "working elsewhere" block needs the versioned form).
    public static func encode(
        _ blocks: [FreeBusyState], startTime: String, granularity: String
    ) -> (freeBusy: CalendarData.FreeBusy, instance: UInt32) {
        var bits: [UInt8] = []
        var instance: UInt32 = 0
        if blocks.contains(.workingElsewhere) {
            instance = versionedEncodingInstance
            bits = [0, 0, 0, 0, 0, 1, 0, 1]  // five states, no fallback entries
            for b in blocks { bits += [(b.rawValue >> 2) & 1, (b.rawValue >> 1) & 1, b.rawValue & 1] }
        } else {
            for b in blocks { bits += [(b.rawValue >> 1) & 1, b.rawValue & 1] }
        }
        var bytes = [UInt8](repeating: 0, count: (bits.count + 7) / 8)
        for (i, bit) in bits.enumerated() where bit == 1 { bytes[i / 8] |= 0x80 >> (i % 8) }
        let value = CalendarData.FreeBusy(
            startTime: startTime, granularity: granularity, encodingVersion: "1",
            data: Data(bytes).base64EncodedString())
        return (value, instance)
    }

    private static func read(_ bytes: [UInt8], from start: Int, width: Int, count: Int) -> [Int] {
        var values: [Int] = []
        values.reserveCapacity(max(0, count))
        var bit = start
        for _ in 0..<max(0, count) {
            var v = 0
            for _ in 0..<width {
                v = (v << 1) | Int((bytes[bit / 8] >> (7 - bit % 8)) & 1)
                bit += 1
            }
            values.append(v)
        }
        return values
    }
}
