/// Fast acceptance of the common shapes of Via, From, To and Contact during message validation.
///
/// Each check accepts a strict subset of what the full grammar (``SIPVia``, ``SIPAddress``,
/// ``SIPURI``) accepts, in one pass over the bytes without building anything. When it answers
/// false the full parser runs and produces the exact error (or accepts), so results and error
/// offsets are those of the full parser by construction. The subsets:
///
/// ```
/// plain-via   =  token "/" token "/" token 1*SP host [ ":" port ] *( ";" token [ "=" token ] )
/// plain-addr  =  [ DQUOTE *(%x20-21 / %x23-5B / %x5D-7E) DQUOTE *SP ] "<" plain-uri ">"
///                *( ";" token [ "=" token ] )
/// plain-uri   =  ( "sip:" / "sips:" ) [ 1*ualnum "@" ] 1*hchar [ ":" port ] *( ";" 1*pchar [ "=" 1*pchar ] )
/// host        =  1*( ALPHA / DIGIT / "-" / "." / "_" )
/// port        =  1*5DIGIT   ; at most 65535
/// ualnum      =  ALPHA / DIGIT / "-" / "." / "_"
/// hchar       =  ALPHA / DIGIT / "-" / "." / "_"
/// pchar       =  ALPHA / DIGIT / "-" / "." / "_" / ":"
/// ```
///
/// No whitespace other than shown, no escapes, quoted-pairs, commas, `?` headers or `@` outside
/// userinfo: anything else goes to the full parser.
extension SIPMessageParser {
    /// ALPHA / DIGIT / "-" / "." / "_"
    private static func isHostChar(_ b: UInt8) -> Bool {
        SIPByte.inClass(b, 0x03FF_6000_0000_0000, 0x07FF_FFFE_87FF_FFFE)
    }
    /// ALPHA / DIGIT / "-" / "." / "_" / ":"
    private static func isParamChar(_ b: UInt8) -> Bool {
        SIPByte.inClass(b, 0x07FF_6000_0000_0000, 0x07FF_FFFE_87FF_FFFE)
    }

    /// `*( ";" token [ "=" token ] )` from `i`; returns the index after it, or nil.
    private static func plainParameters(_ p: Span<UInt8>, from start: Int, to end: Int) -> Int? {
        var i = start
        while i < end, p[i] == 0x3B {
            i += 1
            let n = i
            while i < end, SIPByte.isToken(p[i]) { i += 1 }
            guard i > n else { return nil }
            if i < end, p[i] == 0x3D {
                i += 1
                let v = i
                while i < end, SIPByte.isToken(p[i]) { i += 1 }
                guard i > v else { return nil }
            }
        }
        return i
    }

    /// `[ ":" port ]` at `i`; returns the index after it, or nil when malformed or above 65535.
    private static func plainPort(_ p: Span<UInt8>, from start: Int, to end: Int) -> Int? {
        guard start < end, p[start] == 0x3A else { return start }
        var i = start + 1
        var value = 0
        while i < end, SIPByte.isDigit(p[i]), i - start <= 5 {
            value = value * 10 + Int(p[i] - 0x30)
            i += 1
        }
        guard i > start + 1, i - start <= 6, value <= 65535 else { return nil }
        return i
    }

    /// Whether `bytes` is one `plain-via` (then the full Via grammar accepts it as one via-parm).
    static func isPlainVia(_ bytes: ArraySlice<UInt8>) -> Bool {
        let p = bytes.span
        let end = p.count
        var i = 0
        for part in 0..<3 {
            let t = i
            while i < end, SIPByte.isToken(p[i]) { i += 1 }
            guard i > t else { return false }
            if part < 2 {
                guard i < end, p[i] == 0x2F else { return false }
                i += 1
            }
        }
        let sp = i
        while i < end, p[i] == 0x20 { i += 1 }
        guard i > sp else { return false }
        let h = i
        while i < end, isHostChar(p[i]) { i += 1 }
        guard i > h, let afterPort = plainPort(p, from: i, to: end),
            let afterParams = plainParameters(p, from: afterPort, to: end)
        else { return false }
        return afterParams == end
    }

    /// Whether `bytes` is one `plain-addr` (then the full From/To/Contact grammar accepts it).
    static func isPlainNameAddr(_ bytes: ArraySlice<UInt8>) -> Bool {
        let p = bytes.span
        let end = p.count
        var i = 0
        if i < end, p[i] == 0x22 {
            i += 1
            while i < end, p[i] >= 0x20, p[i] <= 0x7E, p[i] != 0x22, p[i] != 0x5C { i += 1 }
            guard i < end, p[i] == 0x22 else { return false }
            i += 1
            while i < end, p[i] == 0x20 { i += 1 }
        }
        guard i < end, p[i] == 0x3C else { return false }
        i += 1
        // plain-uri
        guard end - i >= 4, p[i] == 0x73, p[i + 1] == 0x69, p[i + 2] == 0x70 else { return false }
        i += 3
        if p[i] == 0x73 { i += 1 }
        guard i < end, p[i] == 0x3A else { return false }
        i += 1
        let u = i
        while i < end, isHostChar(p[i]) { i += 1 }
        if i < end, p[i] == 0x40 {
            guard i > u else { return false }
            i += 1
            let h = i
            while i < end, isHostChar(p[i]) { i += 1 }
            guard i > h else { return false }
        } else {
            guard i > u else { return false }
        }
        guard let afterPort = plainPort(p, from: i, to: end) else { return false }
        i = afterPort
        while i < end, p[i] == 0x3B {
            i += 1
            let n = i
            while i < end, isParamChar(p[i]) { i += 1 }
            guard i > n else { return false }
            if i < end, p[i] == 0x3D {
                i += 1
                let v = i
                while i < end, isParamChar(p[i]) { i += 1 }
                guard i > v else { return false }
            }
        }
        guard i < end, p[i] == 0x3E else { return false }
        i += 1
        guard let afterParams = plainParameters(p, from: i, to: end) else { return false }
        return afterParams == end
    }
}
