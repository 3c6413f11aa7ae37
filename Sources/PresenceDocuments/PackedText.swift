/// Text such as an `xs:dateTime` (`2008-01-23T07:53:41.670`), held in 13 bytes instead of a heap
/// string of its own.
///
/// A Swift string keeps up to 15 UTF-8 bytes inline and allocates for longer ones (about 64
/// bytes with the allocator's rounding). Timestamps are up to 24 characters drawn from 15
/// symbols, so they pack at 4 bits a character; any other text is kept as a `String` in a box
/// of its own (13 bytes inline either way, which keeps ``Category`` at 96 bytes). Packing is a
/// function of the text, so equal texts have equal storage and the synthesized equality and
/// hashing are those of the text.
struct PackedText: Hashable, Sendable {
    private enum Storage: Hashable, Sendable {
        case text(Text)
        /// Characters 0–15 in the 4-bit fields of `low` (first in the lowest), 16–23 in `high`;
        /// fields past the end hold ``PackedText/end``.
        case packed(low: UInt64, high: UInt32)
    }

    private final class Text: Hashable, Sendable {
        let string: String
        init(_ string: String) { self.string = string }
        static func == (a: Text, b: Text) -> Bool { a.string == b.string }
        func hash(into hasher: inout Hasher) { hasher.combine(string) }
    }

    private let storage: Storage

    /// The symbols, by their 4-bit code; code 15 marks the end.
    private static let symbols = Array("0123456789-:T.Z".utf8)
    private static let end: UInt64 = 15
    private static let capacity = 24

    init(_ text: String) {
        storage = Self.pack(text.utf8.span).map { .packed(low: $0.low, high: $0.high) } ?? .text(Text(text))
    }

    /// The text whose UTF-8 bytes are `utf8`: packed from the bytes when it packs, so that a
    /// decoder holding them makes no String (any other text is made one, as by `init(_:)`).
    init(utf8: Span<UInt8>) {
        storage =
            Self.pack(utf8).map { .packed(low: $0.low, high: $0.high) }
            ?? .text(Text(String(decoding: utf8.indices.map { utf8[$0] }, as: UTF8.self)))
    }

    /// The 4-bit code of each byte value; 0xFF for a byte that is not one of the symbols.
    private static let codes: [UInt8] = (0...255).map { byte in
        symbols.firstIndex(of: UInt8(byte)).map { UInt8($0) } ?? 0xFF
    }

    /// The fields of the text whose UTF-8 bytes are `utf8` when it packs: at most 24
    /// characters, each one of the symbols.
    private static func pack(_ utf8: Span<UInt8>) -> (low: UInt64, high: UInt32)? {
        // No test per byte: the codes are or'ed together, and a byte that is not a symbol
        // (0xFF) leaves bits above the four of a code. Fields past the end keep the end code
        // (all ones); each word is filled by its own loop.
        let count = utf8.count
        guard count <= capacity else { return nil }
        let codes = Self.codes
        var seen: UInt8 = 0
        func fields(_ range: Range<Int>) -> UInt64 {
            var fields: UInt64 = .max
            var shift: UInt64 = 0
            for i in range {
                let code = codes[Int(utf8[i])]
                seen |= code
                fields ^= (end ^ UInt64(code & 15)) &<< shift
                shift &+= 4
            }
            return fields
        }
        let split = min(count, 16)
        let low = fields(0..<split)
        let high = fields(split..<count)
        return UInt64(seen) > end ? nil : (low, UInt32(truncatingIfNeeded: high))
    }

    var string: String {
        switch storage {
        case .text(let text):
            return text.string
        case .packed(let low, let high):
            var bytes: [UInt8] = []
            for i in 0..<Self.capacity {
                let code = Self.code(low, high, i)
                if code == Self.end { break }
                bytes.append(Self.symbols[Int(code)])
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    private static func code(_ low: UInt64, _ high: UInt32, _ i: Int) -> UInt64 {
        i < 16 ? low >> UInt64(4 * i) & end : UInt64(high) >> UInt64(4 * (i - 16)) & end
    }
}
