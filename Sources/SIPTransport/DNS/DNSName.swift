/// A domain name as a list of labels (RFC 1035 §2.3.1, §3.1).
///
/// ```
/// <domain> ::= <subdomain> | " "
/// <subdomain> ::= <label> | <subdomain> "." <label>
/// ```
///
/// Labels are kept as octets, since a hostile response may put any octet in a label. Names
/// compare and hash case-insensitively in ASCII (RFC 1035 §2.3.3; RFC 4343 §3). Limits: a label
/// is 1...63 octets, a name at most 255 octets in wire form (RFC 1035 §2.3.4).
public struct DNSName: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The labels, most specific first, without the empty root label.
    public private(set) var labels: [[UInt8]]

    /// The longest label (RFC 1035 §2.3.4).
    public static let maxLabelLength = 63
    /// The longest name in wire form, length octets and the root's zero octet included.
    public static let maxWireLength = 255

    /// The root name `.`.
    public static let root = DNSName(uncheckedLabels: [])

    init(uncheckedLabels labels: [[UInt8]]) { self.labels = labels }

    /// Builds a name from labels, checking the lengths of RFC 1035 §2.3.4.
    public init(labels: [[UInt8]]) throws(SIPTransportError) {
        var wire = 1
        for label in labels {
            guard !label.isEmpty, label.count <= Self.maxLabelLength else {
                throw SIPTransportError(.dnsBadLabel, "a label must be 1...63 octets, got \(label.count)")
            }
            wire += 1 + label.count
        }
        guard wire <= Self.maxWireLength else {
            throw SIPTransportError(.dnsNameTooLong, "a name must be at most 255 octets in wire form, got \(wire)")
        }
        self.labels = labels
    }

    /// Parses a dotted name such as `_sip._tcp.example.com` (a trailing dot is allowed; `.` and
    /// the empty string are the root). No master-file escapes.
    public init(_ text: String) throws(SIPTransportError) {
        var bytes = Array(text.utf8)
        if bytes.last == UInt8(ascii: ".") { bytes.removeLast() }
        if bytes.isEmpty {
            self = .root
            return
        }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map { Array($0) }
        try self.init(labels: parts)
    }

    /// A literal name in code; an invalid literal becomes the root name (a programming error
    /// that the first query shows). Note that `DNSName("...")` with a literal argument is this
    /// initializer too (literal coercion, SE-0213); use ``init(_:)`` with a `String` value to
    /// validate text.
    public init(stringLiteral value: String) {
        self = (try? DNSName(value)) ?? .root
    }

    /// The length in wire form, uncompressed.
    public var wireLength: Int { labels.reduce(1) { $0 + 1 + $1.count } }

    /// Whether this is the root name (an SRV target of `.` means "no service", RFC 2782).
    public var isRoot: Bool { labels.isEmpty }

    /// `prefix` labels followed by this name, e.g. `_sip._tcp` + `example.com`.
    public func prepending(_ prefix: String) throws(SIPTransportError) -> DNSName {
        let head = try DNSName(prefix)
        return try DNSName(labels: head.labels + labels)
    }

    /// Dotted form without the trailing dot (`.` for the root). Octets other than letters,
    /// digits, `-` and `_` are written as `\DDD`, and `.` and `\` are escaped (RFC 1035 §5.1).
    public var description: String {
        if labels.isEmpty { return "." }
        var out: [UInt8] = []
        for (index, label) in labels.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ".")) }
            for byte in label {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                    out.append(byte)
                case UInt8(ascii: "."), UInt8(ascii: "\\"):
                    out.append(UInt8(ascii: "\\"))
                    out.append(byte)
                default:
                    out.append(UInt8(ascii: "\\"))
                    out.append(UInt8(ascii: "0") + byte / 100)
                    out.append(UInt8(ascii: "0") + (byte / 10) % 10)
                    out.append(UInt8(ascii: "0") + byte % 10)
                }
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }

    public static func == (a: DNSName, b: DNSName) -> Bool {
        guard a.labels.count == b.labels.count else { return false }
        for (x, y) in zip(a.labels, b.labels) {
            guard x.count == y.count else { return false }
            for (p, q) in zip(x, y) where lower(p) != lower(q) { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(labels.count)
        for label in labels {
            hasher.combine(label.count)
            for byte in label { hasher.combine(Self.lower(byte)) }
        }
    }
}
