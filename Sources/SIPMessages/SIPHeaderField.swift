/// One header field: its name and its value bytes (RFC 3261 §7.3).
///
/// ```
/// message-header  =  header-name HCOLON header-value *(COMMA header-value) CRLF
/// ```
///
/// A parsed field keeps the exact bytes it was received as (name, colon, spacing and folding) and
/// is written back byte for byte until it is changed, so unknown headers are forwarded verbatim.
/// Values are parsed lazily by the typed accessors on ``SIPHeaders``.
public struct SIPHeaderField: Sendable, Hashable {
    public var name: SIPHeaderName {
        didSet { isVerbatim = false }
    }
    /// The bytes this field was received as (from the first byte of the name to the last byte
    /// before the terminating CRLF), or the value bytes of a field built or changed in code.
    /// One slice of the parsed message buffer, so copying a field retains one buffer.
    private var storage: ArraySlice<UInt8>
    /// Where the value lies in ``storage``.
    private var valueRange: Range<Int>

    /// Whether the field will be written exactly as received.
    public private(set) var isVerbatim: Bool

    public init(name: SIPHeaderName, value: String) {
        self.name = name
        self.storage = ArraySlice(value.utf8)
        self.valueRange = storage.startIndex..<storage.endIndex
        self.isVerbatim = false
    }

    /// A parsed field: `wire` is the whole field line, `valueRange` the trimmed value inside it.
    init(name: SIPHeaderName, wire: ArraySlice<UInt8>, valueRange: Range<Int>) {
        self.name = name
        self.storage = wire
        self.valueRange = valueRange
        self.isVerbatim = true
    }

    /// The value bytes as received: leading and trailing whitespace removed, folds (CRLF followed
    /// by SP/HTAB) still inside. Slices of the parsed message buffer.
    public var valueBytes: ArraySlice<UInt8> { storage[valueRange] }

    /// The whole field as received, while unmodified.
    var wire: ArraySlice<UInt8>? { isVerbatim ? storage : nil }

    /// The value with folding replaced by single spaces (RFC 3261 §7.3.1).
    public var value: String {
        get { SIPByte.unfolded(valueBytes) }
        set {
            storage = ArraySlice(newValue.utf8)
            valueRange = storage.startIndex..<storage.endIndex
            isVerbatim = false
        }
    }

    public static func == (a: SIPHeaderField, b: SIPHeaderField) -> Bool {
        a.name == b.name && a.valueBytes == b.valueBytes && a.wire == b.wire
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(valueBytes)
        hasher.combine(wire)
    }

    func write<S: ByteSink>(to out: inout S) {
        if isVerbatim {
            out.put(storage)
        } else {
            out.put(string: name.displayName)
            out.put(0x3A)
            out.put(0x20)
            // A generated value must not smuggle line breaks into the header section.
            for b in valueBytes {
                out.put(b == 0x0D || b == 0x0A ? 0x20 : b)
            }
        }
        out.put(0x0D)
        out.put(0x0A)
    }
}
