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
        didSet { wire = nil }
    }
    /// The value bytes as received: leading and trailing whitespace removed, folds (CRLF followed
    /// by SP/HTAB) still inside. Slices of the parsed message buffer.
    public private(set) var valueBytes: ArraySlice<UInt8>
    /// The whole field as received, from the first byte of the name to the last byte before the
    /// terminating CRLF, while unmodified.
    var wire: ArraySlice<UInt8>?

    public init(name: SIPHeaderName, value: String) {
        self.name = name
        self.valueBytes = ArraySlice(value.utf8)
        self.wire = nil
    }

    init(name: SIPHeaderName, valueBytes: ArraySlice<UInt8>, wire: ArraySlice<UInt8>?) {
        self.name = name
        self.valueBytes = valueBytes
        self.wire = wire
    }

    /// The value with folding replaced by single spaces (RFC 3261 §7.3.1).
    public var value: String {
        get { SIPByte.unfolded(valueBytes) }
        set {
            valueBytes = ArraySlice(newValue.utf8)
            wire = nil
        }
    }

    /// Whether the field will be written exactly as received.
    public var isVerbatim: Bool { wire != nil }

    func write(to out: inout [UInt8]) {
        if let wire {
            out.append(contentsOf: wire)
        } else {
            out.append(contentsOf: name.displayName.utf8)
            out.append(0x3A)
            out.append(0x20)
            // A generated value must not smuggle line breaks into the header section.
            for b in valueBytes {
                out.append(b == 0x0D || b == 0x0A ? 0x20 : b)
            }
        }
        out.append(0x0D)
        out.append(0x0A)
    }
}
