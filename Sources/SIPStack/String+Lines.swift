extension Array where Element == String {
    /// The strings joined by LF in a string of exactly their size.
    ///
    /// `joined(separator:)` grows its result as it appends, and a string kept for a dialog's life
    /// then carries the spare room: 176 bytes of heap for the 70 characters of a subscription's
    /// Request-URI, From and To.
    func linesInExactCapacity() -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(reduce(Swift.max(0, self.count - 1)) { $0 + $1.utf8.count })
        for (i, line) in enumerated() {
            if i > 0 { bytes.append(0x0A) }
            bytes.append(contentsOf: line.utf8)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Substring {
    /// The parts between `separator`s, empty ones kept. Split on the UTF-8 bytes: splitting the
    /// characters compares grapheme clusters, several times slower on a restart's many fields.
    func parts(separatedBy separator: Unicode.Scalar) -> [Substring] {
        utf8.split(separator: UInt8(ascii: separator), omittingEmptySubsequences: false).map { Substring($0) }
    }
}
