/// Byte classes from RFC 3261 §25.1.
///
/// ```
/// token       =  1*(alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~" )
/// unreserved  =  alphanum / mark
/// mark        =  "-" / "_" / "." / "!" / "~" / "*" / "'" / "(" / ")"
/// LWS         =  [*WSP CRLF] 1*WSP ; linear whitespace
/// SWS         =  [LWS] ; sep whitespace
/// ```
package enum SIPByte {
    static func isAlpha(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
    static func isAlphanum(_ b: UInt8) -> Bool { isAlpha(b) || isDigit(b) }
    static func isHex(_ b: UInt8) -> Bool {
        isDigit(b) || ((b | 0x20) >= 0x61 && (b | 0x20) <= 0x66)
    }
    /// SP, HTAB, CR or LF: inside a field value a CR/LF is always part of a fold.
    static func isLWS(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0D || b == 0x0A }
    /// Membership in an ASCII byte class given as two 64-bit masks (bytes 0-63, 64-127).
    static func inClass(_ b: UInt8, _ low: UInt64, _ high: UInt64) -> Bool {
        b < 64 ? (low >> UInt64(b)) & 1 != 0 : b < 128 ? (high >> UInt64(b &- 64)) & 1 != 0 : false
    }
    /// alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~"
    package static func isToken(_ b: UInt8) -> Bool {
        inClass(b, 0x03FF_6CA2_0000_0000, 0x47FF_FFFF_87FF_FFFE)
    }
    static func isMark(_ b: UInt8) -> Bool {
        switch b {
        case 0x2D, 0x5F, 0x2E, 0x21, 0x7E, 0x2A, 0x27, 0x28, 0x29: return true
        default: return false
        }
    }
    static func isUnreserved(_ b: UInt8) -> Bool {
        inClass(b, 0x03FF_6782_0000_0000, 0x47FF_FFFE_87FF_FFFE)
    }
    /// `word` chars of Call-ID (RFC 3261 §25.1): token / "(" / ")" / "<" / ">" / ":" / "\" /
    /// DQUOTE / "/" / "[" / "]" / "?" / "{" / "}".
    static func isWord(_ b: UInt8) -> Bool {
        inClass(b, 0xD7FF_EFA6_0000_0000, 0x6FFF_FFFF_BFFF_FFFE)
    }
    static func lower(_ b: UInt8) -> UInt8 { (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b }
    static func hexValue(_ b: UInt8) -> UInt8 {
        isDigit(b) ? b - 0x30 : (b | 0x20) - 0x61 + 10
    }

    static func equalsIgnoringCase(_ a: ArraySlice<UInt8>, _ b: StaticString) -> Bool {
        guard a.count == b.utf8CodeUnitCount else { return false }
        return b.withUTF8Buffer { other in a.elementsEqual(other) { lower($0) == lower($1) } }
    }

    static func string(_ bytes: ArraySlice<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }

    /// Case-sensitive comparison with ASCII text.
    static func equals(_ a: ArraySlice<UInt8>, _ b: StaticString) -> Bool {
        guard a.count == b.utf8CodeUnitCount else { return false }
        return b.withUTF8Buffer { a.elementsEqual($0) }
    }

    /// The index of the first `byte` in `bytes[from..<to]`, or `to` when there is none.
    static func firstIndex(of byte: UInt8, in bytes: [UInt8], from: Int, to: Int) -> Int {
        bytes[from..<to].firstIndex(of: byte) ?? to
    }

    /// Trims SP/HTAB/CR/LF from both ends.
    static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var s = bytes.startIndex
        var e = bytes.endIndex
        while s < e, isLWS(bytes[s]) { s += 1 }
        while e > s, isLWS(bytes[e - 1]) { e -= 1 }
        return bytes[s..<e]
    }

    /// The range of `bytes[from..<to]` without SP/HTAB/CR/LF at either end (as ``trimmed(_:)``),
    /// found without making a slice.
    static func trimmedRange(_ bytes: [UInt8], _ from: Int, _ to: Int) -> Range<Int> {
        var s = from
        var e = to
        while s < e, isLWS(bytes[s]) { s += 1 }
        while e > s, isLWS(bytes[e - 1]) { e -= 1 }
        return s..<e
    }

    /// The value with folds and runs of whitespace collapsed to one SP, trimmed
    /// (RFC 3261 §7.3.1: folding is equivalent to a single SP).
    static func unfolded(_ bytes: ArraySlice<UInt8>) -> String {
        let t = trimmed(bytes)
        var hasFold = false
        for b in t where b == 0x0D || b == 0x0A {
            hasFold = true
            break
        }
        if !hasFold { return string(t) }
        var out: [UInt8] = []
        out.reserveCapacity(t.count)
        var i = t.startIndex
        while i < t.endIndex {
            let b = t[i]
            if b == 0x0D || b == 0x0A {
                while out.last == 0x20 || out.last == 0x09 { out.removeLast() }
                out.append(0x20)
                i += 1
                while i < t.endIndex, isLWS(t[i]) { i += 1 }
                continue
            }
            out.append(b)
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses `1*DIGIT` into a value no larger than `max`.
    static func parseNumber(
        _ bytes: ArraySlice<UInt8>, max: UInt64, what: String, header: String?
    ) throws(SIPParseError) -> UInt64 {
        guard !bytes.isEmpty else {
            throw SIPParseError(
                .invalidHeaderValue, expected: "\(what) (1*DIGIT)", offset: bytes.startIndex, header: header)
        }
        var value: UInt64 = 0
        for i in bytes.indices {
            let b = bytes[i]
            guard isDigit(b) else {
                throw SIPParseError(.invalidHeaderValue, expected: "\(what) (1*DIGIT)", offset: i, header: header)
            }
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (a, o2) = m.addingReportingOverflow(UInt64(b - 0x30))
            guard !o1, !o2, a <= max else {
                throw SIPParseError(
                    .valueOutOfRange, expected: "\(what) no larger than \(max)", offset: bytes.startIndex,
                    header: header)
            }
            value = a
        }
        return value
    }
}

/// A cursor over the bytes of one header value (a slice of the message buffer, so its indices are
/// byte offsets into the message). Implements the RFC 3261 §25.1 separators:
///
/// ```
/// SEMI = SWS ";" SWS   COMMA = SWS "," SWS   EQUAL = SWS "=" SWS   SLASH = SWS "/" SWS
/// LAQUOT = SWS "<"     RAQUOT = ">" SWS      HCOLON = *( SP / HTAB ) ":" SWS
/// ```
struct SIPScanner {
    let bytes: ArraySlice<UInt8>
    var index: Int
    let header: String?
    let code: SIPParseError.Code
    /// False to check syntax only: the grammar is walked and every error is thrown exactly as
    /// when building, but no strings or parameter lists are made (message-level validation of
    /// Via, From, To and Contact on every parse; the typed accessors build).
    let build: Bool

    init(_ bytes: ArraySlice<UInt8>, header: String?, code: SIPParseError.Code, build: Bool = true) {
        self.bytes = bytes
        self.index = bytes.startIndex
        self.header = header
        self.code = code
        self.build = build
    }

    var isAtEnd: Bool { index >= bytes.endIndex }
    var peek: UInt8? { index < bytes.endIndex ? bytes[index] : nil }

    func error(_ expected: String, code: SIPParseError.Code? = nil) -> SIPParseError {
        SIPParseError(code ?? self.code, expected: expected, offset: index, header: header)
    }

    mutating func skipLWS() {
        while index < bytes.endIndex, SIPByte.isLWS(bytes[index]) { index += 1 }
    }

    /// Skips SWS, then consumes `b` if it is next (and SWS after it). Restores the position otherwise.
    mutating func consumeSeparator(_ b: UInt8) -> Bool {
        let saved = index
        skipLWS()
        if index < bytes.endIndex, bytes[index] == b {
            index += 1
            skipLWS()
            return true
        }
        index = saved
        return false
    }

    mutating func consume(_ b: UInt8) -> Bool {
        if index < bytes.endIndex, bytes[index] == b {
            index += 1
            return true
        }
        return false
    }

    mutating func expectEnd(_ what: String) throws(SIPParseError) {
        skipLWS()
        guard isAtEnd else { throw error(what) }
    }

    /// `token` (RFC 3261 §25.1).
    mutating func token(_ what: String) throws(SIPParseError) -> ArraySlice<UInt8> {
        let start = index
        while index < bytes.endIndex, SIPByte.isToken(bytes[index]) { index += 1 }
        guard index > start else { throw error(what) }
        return bytes[start..<index]
    }

    /// Runs of bytes while `predicate` holds (possibly empty).
    mutating func run(while predicate: (UInt8) -> Bool) -> ArraySlice<UInt8> {
        let start = index
        while index < bytes.endIndex, predicate(bytes[index]) { index += 1 }
        return bytes[start..<index]
    }

    /// ```
    /// quoted-string  =  SWS DQUOTE *(qdtext / quoted-pair ) DQUOTE
    /// qdtext         =  LWS / %x21 / %x23-5B / %x5D-7E / UTF8-NONASCII
    /// quoted-pair    =  "\" (%x00-09 / %x0B-0C / %x0E-7F)
    /// ```
    /// Returns the content with quoted-pairs resolved. The scanner must be on the DQUOTE.
    mutating func quotedString() throws(SIPParseError) -> String {
        let open = index
        guard consume(0x22) else { throw error("DQUOTE opening a quoted-string") }
        var out: [UInt8] = []
        var plainStart = index
        while index < bytes.endIndex {
            let b = bytes[index]
            if b == 0x22 {
                if !build {
                    index += 1
                    return ""
                }
                if plainStart == open + 1 {
                    // No quoted-pair: the content is one run of the input.
                    index += 1
                    return SIPByte.string(bytes[plainStart..<(index - 1)])
                }
                out.append(contentsOf: bytes[plainStart..<index])
                index += 1
                return String(decoding: out, as: UTF8.self)
            }
            if b == 0x5C {
                if build { out.append(contentsOf: bytes[plainStart..<index]) }
                index += 1
                guard index < bytes.endIndex, bytes[index] != 0x0A, bytes[index] != 0x0D, bytes[index] < 0x80 else {
                    throw error("character after backslash (quoted-pair)", code: .unterminatedQuotedString)
                }
                if build { out.append(bytes[index]) }
                index += 1
                plainStart = index
                continue
            }
            index += 1
        }
        throw SIPParseError(
            .unterminatedQuotedString, expected: "closing DQUOTE for the quoted-string opened here",
            offset: open, header: header)
    }

    /// ```
    /// generic-param  =  token [ EQUAL gen-value ]
    /// gen-value      =  token / host / quoted-string
    /// ```
    /// Parses `*( SEMI generic-param )`. Stops (without consuming) at anything else.
    mutating func parameters(into params: inout SIPParameters) throws(SIPParseError) {
        while consumeSeparator(0x3B) {
            try parameter(into: &params)
        }
    }

    /// One `generic-param` at the current position.
    mutating func parameter(into params: inout SIPParameters) throws(SIPParseError) {
        let name = try token("parameter name (token) after ';'")
        if params.elements.isEmpty, build { params.elements.reserveCapacity(4) }
        if consumeSeparator(0x3D) {
            if peek == 0x22 {
                let v = try quotedString()
                if build { params.append(SIPParameter(name: SIPByte.string(name), value: v, isQuoted: true)) }
            } else {
                // token / host (IPv6reference brackets and colons included).
                let v = run { SIPByte.isToken($0) || $0 == 0x5B || $0 == 0x5D || $0 == 0x3A }
                guard !v.isEmpty else { throw error("parameter value (token, host or quoted-string) after '='") }
                if build {
                    params.append(SIPParameter(name: SIPByte.string(name), value: SIPByte.string(v), isQuoted: false))
                }
            }
        } else if build {
            params.append(SIPParameter(name: SIPByte.string(name), value: nil, isQuoted: false))
        }
    }

    /// ```
    /// comment  =  LPAREN *(ctext / quoted-pair / comment) RPAREN
    /// ```
    mutating func comment(maxDepth: Int) throws(SIPParseError) -> String {
        let start = index
        var depth = 0
        while index < bytes.endIndex {
            let b = bytes[index]
            index += 1
            switch b {
            case 0x28:
                depth += 1
                guard depth <= maxDepth else {
                    throw error("comment nested at most \(maxDepth) deep", code: .valueOutOfRange)
                }
            case 0x29:
                depth -= 1
                if depth == 0 { return SIPByte.string(bytes[(start + 1)..<(index - 1)]) }
            case 0x5C:
                guard index < bytes.endIndex else { throw error("character after backslash in comment") }
                index += 1
            default: break
            }
        }
        throw SIPParseError(.invalidHeaderValue, expected: "')' closing the comment", offset: start, header: header)
    }
}
