#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A growable run of plain values in memory of its own, for writing: an
/// append is a capacity check and a store, without the uniqueness check and
/// exclusivity bookkeeping `Array` does on every mutation (a write makes a
/// few hundred of them). ``array`` copies the values out at their exact size.
/// Owned by one ``XMLStreamWriter`` and freed with it. (The event recording's
/// runs are CXMLRecorder's `pg_run`, which its C callbacks append to.)
///
/// The memory comes from `malloc` and grows with `realloc`: on Linux
/// `UnsafeMutablePointer.allocate` goes through `posix_memalign`, several
/// times the instructions of a `malloc`, and a grown run's values are plain
/// bytes that `realloc` may move (or extend in place) without a copy of ours.
/// `malloc` aligns for any element of alignment up to 16, which `init` checks.
///
/// Counts use wrapping arithmetic: a count is at most the capacity, which an
/// allocation bounds far below `Int.max`, so overflow checks (a test and a
/// branch on every append) could never fire.
struct RecordingBuffer<Element: BitwiseCopyable>: ~Copyable {
    private var base: UnsafeMutablePointer<Element>
    private var capacity: Int
    private(set) var count = 0

    init(capacity: Int) {
        precondition(MemoryLayout<Element>.alignment <= 16, "malloc aligns to 16 bytes")
        self.capacity = max(capacity, 4)
        base = Self.allocate(self.capacity)
    }

    deinit { free(base) }

    /// Memory for `capacity` values, or `base` resized to it (its values kept).
    private static func allocate(_ capacity: Int, resizing base: UnsafeMutablePointer<Element>? = nil)
        -> UnsafeMutablePointer<Element>
    {
        let (bytes, overflow) = capacity.multipliedReportingOverflow(by: MemoryLayout<Element>.stride)
        precondition(!overflow, "capacity too large")
        guard let memory = realloc(base, max(bytes, 1)) else { fatalError("out of memory") }
        return memory.bindMemory(to: Element.self, capacity: capacity)
    }

    var isEmpty: Bool { count == 0 }

    /// The value at `i` (`0 ..< count`), read and written in place.
    subscript(i: Int) -> Element {
        @inline(__always)
        unsafeAddress {
            precondition(UInt(bitPattern: i) < UInt(bitPattern: count), "index out of range")
            return UnsafePointer(base + i)
        }
        @inline(__always)
        unsafeMutableAddress {
            precondition(UInt(bitPattern: i) < UInt(bitPattern: count), "index out of range")
            return base + i
        }
    }

    /// Makes room for `extra` more values.
    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if count &+ extra > capacity { grow(count &+ extra) }
    }

    /// Out of line: a rare path that would only make every append longer.
    @inline(never)
    private mutating func grow(_ needed: Int) {
        let newCapacity = max(needed, capacity * 2)
        base = Self.allocate(newCapacity, resizing: base)
        capacity = newCapacity
    }

    @inline(__always)
    mutating func append(_ value: Element) {
        reserve(1)
        (base + count).initialize(to: value)
        count &+= 1
    }

    /// Appends the values of `source`: a capacity check and a copy.
    @inline(__always)
    mutating func append(_ source: UnsafeBufferPointer<Element>) {
        guard let from = source.baseAddress, !source.isEmpty else { return }
        reserve(source.count)
        (base + count).initialize(from: from, count: source.count)
        count &+= source.count
    }

    /// Removes and returns the last value; nil when empty.
    @inline(__always)
    mutating func popLast() -> Element? {
        guard count > 0 else { return nil }
        count &-= 1
        return base[count]
    }

    /// Removes the last `k` values (`0 ... count`).
    @inline(__always)
    mutating func removeLast(_ k: Int) {
        precondition(k >= 0 && k <= count, "removing more values than there are")
        count &-= k
    }

    /// The values, as an array of exactly `count` elements.
    var array: [Element] {
        Array(UnsafeBufferPointer(start: base, count: count))
    }

    /// The values in place, valid until the next append or the buffer's end.
    var buffer: UnsafeBufferPointer<Element> {
        UnsafeBufferPointer(start: base, count: count)
    }
}

/// The writer's output: a ``RecordingBuffer`` of bytes, with the appends the
/// writer makes a few bytes at a time, hundreds of times per document.
typealias XMLByteSink = RecordingBuffer<UInt8>

extension RecordingBuffer where Element == UInt8 {
    /// Appends the bytes of `source`; runs of up to 16 bytes without `memcpy`.
    @inline(__always)
    mutating func append(_ source: UnsafeBufferPointer<UInt8>) {
        guard let from = source.baseAddress, !source.isEmpty else { return }
        reserve(source.count)
        Self.copy(from: from, to: base + count, count: source.count)
        count &+= source.count
    }

    /// Copies `count` (at least 1) bytes between regions that do not
    /// overlap. Up to 16 bytes take two loads and two stores of the widest
    /// size that fits, overlapping in the middle: most of what the writer
    /// appends (names, short values, indentation) is that short, and a call to
    /// `memcpy` cost more than the copy. Both loads come before the stores.
    @inline(__always)
    static func copy(from source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>, count: Int) {
        let from = UnsafeRawPointer(source)
        let to = UnsafeMutableRawPointer(target)
        if count > 16 {
            target.update(from: source, count: count)
        } else if count >= 8 {
            let head = from.loadUnaligned(as: UInt64.self)
            let tail = from.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
            to.storeBytes(of: head, as: UInt64.self)
            to.storeBytes(of: tail, toByteOffset: count &- 8, as: UInt64.self)
        } else if count >= 4 {
            let head = from.loadUnaligned(as: UInt32.self)
            let tail = from.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)
            to.storeBytes(of: head, as: UInt32.self)
            to.storeBytes(of: tail, toByteOffset: count &- 4, as: UInt32.self)
        } else if count >= 2 {
            let head = from.loadUnaligned(as: UInt16.self)
            let tail = from.loadUnaligned(fromByteOffset: count &- 2, as: UInt16.self)
            to.storeBytes(of: head, as: UInt16.self)
            to.storeBytes(of: tail, toByteOffset: count &- 2, as: UInt16.self)
        } else {
            target.pointee = source.pointee
        }
    }

    /// Two bytes, with one capacity check.
    @inline(__always)
    mutating func append(_ first: UInt8, _ second: UInt8) {
        reserve(2)
        base[count] = first
        base[count &+ 1] = second
        count &+= 2
    }

    /// `byte` and then the bytes of `source` (a start tag's `<` and name), with one capacity check.
    @inline(__always)
    mutating func append(_ byte: UInt8, _ source: UnsafeBufferPointer<UInt8>) {
        reserve(source.count &+ 1)
        base[count] = byte
        count &+= 1
        guard let from = source.baseAddress, !source.isEmpty else { return }
        Self.copy(from: from, to: base + count, count: source.count)
        count &+= source.count
    }

    /// `byte` and then the UTF-8 of `string`, with one capacity check.
    @inline(__always)
    mutating func append(_ byte: UInt8, _ string: String) {
        string.withUTF8Bytes { append(byte, $0) }
    }

    /// An attribute's start: a space, the UTF-8 of `name` and `="`, with one capacity check
    /// (each part appended on its own made one per part).
    @inline(__always)
    mutating func appendAttributeStart(_ name: String) {
        name.withUTF8Bytes { appendAttributeStart($0) }
    }

    @inline(__always)
    mutating func appendAttributeStart(_ name: UnsafeBufferPointer<UInt8>) {
        reserve(name.count &+ 3)
        base[count] = 0x20
        count &+= 1
        if let from = name.baseAddress, !name.isEmpty {
            Self.copy(from: from, to: base + count, count: name.count)
            count &+= name.count
        }
        base[count] = 0x3D  // =
        base[count &+ 1] = 0x22  // "
        count &+= 2
    }

    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { append($0) }
    }

    mutating func append(_ string: StaticString) {
        append(UnsafeBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
    }

    /// The UTF-8 of `string`.
    @inline(__always)
    mutating func append(_ string: String) {
        string.withUTF8Bytes { append($0) }
    }

    /// `value` in decimal, as `String(value)` spells it (a `-` and no leading zeros).
    mutating func appendDecimal(_ value: Int) {
        // At most 20 characters: a sign and 19 digits.
        reserve(20)
        var magnitude = value.magnitude
        if value < 0 {
            base[count] = 0x2D  // -
            count += 1
        }
        var digits = 1
        var rest = magnitude / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        var i = count + digits
        count = i
        repeat {
            i -= 1
            base[i] = 0x30 + UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
    }

    /// A line break and the first `width` bytes of `run` (which holds at least that many; a
    /// constant or an array's buffer), with one capacity check.
    @inline(__always)
    mutating func appendLine(_ run: UnsafePointer<UInt8>?, width: Int) {
        reserve(1 &+ width)
        base[count] = 0x0A
        count &+= 1
        guard let run, width > 0 else { return }
        Self.copy(from: run, to: base + count, count: width)
        count &+= width
    }

    /// An end tag: `</`, a copy of the `length` bytes already written at
    /// `offset` (its start tag's name), and `>`, with one capacity check.
    @inline(__always)
    mutating func appendEndTag(nameAt offset: Int, length: Int) {
        guard length > 0, offset >= 0, offset + length <= count else {
            append(0x3C)
            append(0x2F)
            append(0x3E)  // </>
            return
        }
        reserve(length &+ 3)
        base[count] = 0x3C  // <
        base[count &+ 1] = 0x2F  // /
        // The name lies before the end tag, so source and target do not overlap.
        Self.copy(from: base + offset, to: base + (count &+ 2), count: length)
        base[count &+ 2 &+ length] = 0x3E  // >
        count &+= length &+ 3
    }
}

extension String {
    /// Calls `body` with the string's UTF-8: a native string lends its bytes in place, with no
    /// copy of the string value; any other is made native first.
    @inline(__always)
    func withUTF8Bytes(_ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        if utf8.withContiguousStorageIfAvailable(body) != nil { return }
        var native = self
        native.withUTF8(body)
    }
}
