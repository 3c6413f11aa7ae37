/// Parameters in the order they were written, duplicates kept, looked up by name
/// case-insensitively (RFC 3261 §7.3.1, §19.1.4).
public struct SIPParameters: Sendable, Hashable, RandomAccessCollection, ExpressibleByArrayLiteral {
    public var elements: [SIPParameter]

    public init(_ elements: [SIPParameter] = []) { self.elements = elements }
    public init(arrayLiteral elements: SIPParameter...) { self.elements = elements }

    public var startIndex: Int { elements.startIndex }
    public var endIndex: Int { elements.endIndex }
    public subscript(position: Int) -> SIPParameter { elements[position] }

    /// Whether a parameter with this name is present (with or without a value).
    public func contains(_ name: String) -> Bool { firstIndex(named: name) != nil }

    /// The value of the first parameter with this name: `.some(nil)` when it has no value,
    /// `nil` when it is absent.
    public subscript(name: String) -> String?? {
        guard let i = firstIndex(named: name) else { return nil }
        return .some(elements[i].value)
    }

    /// The value of the first parameter with this name, or nil if absent or valueless.
    public func value(_ name: String) -> String? {
        guard let i = firstIndex(named: name) else { return nil }
        return elements[i].value
    }

    public func firstIndex(named name: String) -> Int? {
        elements.firstIndex { Self.sameName($0.name, name) }
    }

    public mutating func append(_ p: SIPParameter) { elements.append(p) }

    /// Replaces the first parameter with this name (keeping its position) or appends one.
    public mutating func set(_ name: String, _ value: String?, quoted: Bool = false) {
        if let i = firstIndex(named: name) {
            elements[i].value = value
            elements[i].isQuoted = quoted
        } else {
            elements.append(SIPParameter(name: name, value: value, isQuoted: quoted))
        }
    }

    /// Removes every parameter with this name.
    public mutating func remove(_ name: String) { elements.removeAll { Self.sameName($0.name, name) } }

    static func sameName(_ a: String, _ b: String) -> Bool {
        let x = a.utf8
        let y = b.utf8
        guard x.count == y.count else { return false }
        return zip(x, y).allSatisfy { SIPByte.lower($0) == SIPByte.lower($1) }
    }

    /// `;name[=value]` for each parameter, values quoted when they were quoted or are not tokens.
    func write(to out: inout [UInt8]) {
        for p in elements {
            out.append(0x3B)
            out.append(contentsOf: p.name.utf8)
            if let v = p.value {
                out.append(0x3D)
                let needsQuotes =
                    p.isQuoted || v.isEmpty
                    || !v.utf8.allSatisfy { SIPByte.isToken($0) || $0 == 0x5B || $0 == 0x5D || $0 == 0x3A }
                if needsQuotes { SIPWriter.quoted(v, to: &out) } else { out.append(contentsOf: v.utf8) }
            }
        }
    }
}

/// Small helpers for writing values.
enum SIPWriter {
    /// A quoted-string with `"` and `\` escaped as quoted-pairs (RFC 3261 §25.1).
    static func quoted(_ s: String, to out: inout [UInt8]) {
        out.append(0x22)
        for b in s.utf8 {
            // CR and LF cannot be quoted-pairs; drop them rather than write a broken header.
            if b == 0x0D || b == 0x0A { continue }
            if b == 0x22 || b == 0x5C || (b < 0x20 && b != 0x09) || b == 0x7F { out.append(0x5C) }
            out.append(b)
        }
        out.append(0x22)
    }
}
