/// Character sets of RFC 3261 §25.1 used inside URIs.
///
/// ```
/// user             =  1*( unreserved / escaped / user-unreserved )
/// user-unreserved  =  "&" / "=" / "+" / "$" / "," / ";" / "?" / "/"
/// password         =  *( unreserved / escaped / "&" / "=" / "+" / "$" / "," )
/// paramchar        =  param-unreserved / unreserved / escaped
/// param-unreserved =  "[" / "]" / "/" / ":" / "&" / "+" / "$"
/// hname / hvalue   =  *( hnv-unreserved / unreserved / escaped )
/// hnv-unreserved   =  "[" / "]" / "/" / "?" / ":" / "+" / "$"
/// ```
enum SIPURICharset {
    case user, password, param, header, telephone, opaque

    /// Each set is unreserved plus the characters listed, as bit masks over ASCII.
    func allows(_ b: UInt8) -> Bool {
        switch self {
        case .user:  // & = + $ , ; ? /
            return SIPByte.inClass(b, 0xABFF_FFD2_0000_0000, 0x47FF_FFFE_87FF_FFFE)
        case .password:  // & = + $ ,
            return SIPByte.inClass(b, 0x23FF_7FD2_0000_0000, 0x47FF_FFFE_87FF_FFFE)
        case .param:  // [ ] / : & + $
            return SIPByte.inClass(b, 0x07FF_EFD2_0000_0000, 0x47FF_FFFE_AFFF_FFFE)
        case .header:  // [ ] / ? : + $
            return SIPByte.inClass(b, 0x87FF_EF92_0000_0000, 0x47FF_FFFE_AFFF_FFFE)
        case .telephone:
            // RFC 3966 §3 phonedigit / visual-separator / "*" / "#" / "+" and the like: + * # / : & $ = ,
            return SIPByte.inClass(b, 0x27FF_FFDA_0000_0000, 0x47FF_FFFE_87FF_FFFE)
        case .opaque:
            // uric (RFC 2396 §2): reserved / unreserved / escaped: ; / ? : @ & = + $ , [ ] #
            return SIPByte.inClass(b, 0xAFFF_FFDA_0000_0000, 0x47FF_FFFE_AFFF_FFFF)
        }
    }
}

extension SIPURI {
    /// Parses one URI occupying all of `bytes` (RFC 3261 §19.1.1, §25.1; RFC 3966 §3).
    ///
    /// ```
    /// SIP-URI  =  "sip:" [ userinfo ] hostport uri-parameters [ headers ]
    /// userinfo =  ( user / telephone-subscriber ) [ ":" password ] "@"
    /// host     =  hostname / IPv4address / IPv6reference
    /// port     =  1*DIGIT
    /// scheme   =  ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
    /// ```
    ///
    /// With `build` false the URI is only checked (same errors), and the result is a placeholder.
    static func parse(
        _ bytes: ArraySlice<UInt8>, header: String?, code: SIPParseError.Code, build: Bool = true
    ) throws(SIPParseError) -> SIPURI {
        func fail(_ expected: String, _ at: Int) -> SIPParseError {
            SIPParseError(code, expected: expected, offset: at, header: header)
        }
        var i = bytes.startIndex
        let end = bytes.endIndex
        guard i < end, SIPByte.isAlpha(bytes[i]) else { throw fail("URI scheme (ALPHA first)", i) }
        while i < end, SIPByte.isAlphanum(bytes[i]) || bytes[i] == 0x2B || bytes[i] == 0x2D || bytes[i] == 0x2E {
            i += 1
        }
        guard i < end, bytes[i] == 0x3A else { throw fail("':' after the URI scheme", i) }
        let known = Scheme.known(bytes[bytes.startIndex..<i])
        let scheme =
            known ?? (build ? Scheme(rawValue: SIPByte.string(bytes[bytes.startIndex..<i])) : Scheme(rawValue: ""))
        i += 1
        var uri = SIPURI(scheme: scheme, host: "")
        switch known {
        case .sip?, .sips?:
            try parseSIP(bytes, from: i, into: &uri, build: build, fail: fail)
        case .tel?:
            let numberStart = i
            while i < end, bytes[i] != 0x3B, bytes[i] != 0x3F {
                guard SIPURICharset.telephone.allows(bytes[i]) || bytes[i] == 0x25 else {
                    throw fail("telephone-subscriber character", i)
                }
                i += 1
            }
            guard i > numberStart else { throw fail("telephone number after 'tel:'", i) }
            uri.user = try unescape(bytes[numberStart..<i], build: build, fail: fail)
            i = try parseParameters(bytes, from: i, into: &uri, build: build, fail: fail)
            guard i == end else { throw fail("';' parameter or end of tel URI", i) }
        default:
            let start = i
            while i < end {
                guard SIPURICharset.opaque.allows(bytes[i]) || bytes[i] == 0x25 else {
                    throw fail("URI character (RFC 2396 uric)", i)
                }
                i += 1
            }
            guard i > start else { throw fail("content after the URI scheme", i) }
            if build { uri.opaque = SIPByte.string(bytes[start..<end]) }
        }
        uri.verbatim = bytes
        return uri
    }

    /// The common shape of a Request-URI, built in one pass without the general machinery:
    /// `("sip:" / "sips:") [ 1*hchar "@" ] 1*hchar [ ":" 1*5DIGIT ] *( ";" 1*pchar [ "=" 1*pchar ] )`
    /// with `hchar = ALPHA / DIGIT / "-" / "." / "_"` and `pchar = hchar / ":"`. Nil for anything
    /// else (then ``parse(_:header:code:build:)`` runs). Every URI accepted here is accepted by
    /// `parse` with the same components: there are no escapes to resolve and no headers.
    static func parsePlain(_ bytes: ArraySlice<UInt8>) -> SIPURI? {
        func isHostChar(_ b: UInt8) -> Bool {
            SIPByte.inClass(b, 0x03FF_6000_0000_0000, 0x07FF_FFFE_87FF_FFFE)
        }
        func isParamChar(_ b: UInt8) -> Bool {
            SIPByte.inClass(b, 0x07FF_6000_0000_0000, 0x07FF_FFFE_87FF_FFFE)
        }
        let base = bytes.startIndex
        func plain(_ p: Span<UInt8>) -> SIPURI? {
            let end = p.count
            guard end >= 5, p[0] == 0x73, p[1] == 0x69, p[2] == 0x70 else { return nil }
            var i = 3
            let secure = p[i] == 0x73
            if secure { i += 1 }
            guard i < end, p[i] == 0x3A else { return nil }
            i += 1
            var user: String? = nil
            var h = i
            while i < end, isHostChar(p[i]) { i += 1 }
            if i < end, p[i] == 0x40 {
                guard i > h else { return nil }
                user = SIPByte.string(bytes[(base + h)..<(base + i)])
                i += 1
                h = i
                while i < end, isHostChar(p[i]) { i += 1 }
            }
            guard i > h else { return nil }
            let host = SIPByte.string(bytes[(base + h)..<(base + i)])
            var port: UInt16? = nil
            if i < end, p[i] == 0x3A {
                i += 1
                let d = i
                var value = 0
                while i < end, SIPByte.isDigit(p[i]), i - d < 5 {
                    value = value * 10 + Int(p[i] - 0x30)
                    i += 1
                }
                guard i > d, value <= 65535 else { return nil }
                port = UInt16(value)
            }
            var parameters = SIPParameters()
            while i < end, p[i] == 0x3B {
                i += 1
                let n = i
                while i < end, isParamChar(p[i]) { i += 1 }
                guard i > n else { return nil }
                let name = SIPByte.string(bytes[(base + n)..<(base + i)])
                var value: String? = nil
                if i < end, p[i] == 0x3D {
                    i += 1
                    let v = i
                    while i < end, isParamChar(p[i]) { i += 1 }
                    guard i > v else { return nil }
                    value = SIPByte.string(bytes[(base + v)..<(base + i)])
                }
                parameters.append(SIPParameter(name: name, value: value))
            }
            guard i == end else { return nil }
            var uri = SIPURI(scheme: secure ? .sips : .sip, user: user, host: host, port: port, parameters: parameters)
            uri.verbatim = bytes
            return uri
        }
        return plain(bytes.span)
    }

    private static func parseSIP(
        _ bytes: ArraySlice<UInt8>, from start: Int, into uri: inout SIPURI, build: Bool,
        fail: (String, Int) -> SIPParseError
    ) throws(SIPParseError) {
        var i = start
        let end = bytes.endIndex
        // userinfo: everything before the first '@' (user-unreserved may hold ';' and '?').
        var at: Int? = nil
        var k = i
        while k < end {
            if bytes[k] == 0x40 {
                at = k
                break
            }
            k += 1
        }
        if let at {
            var colon: Int? = nil
            var j = i
            while j < at {
                if bytes[j] == 0x3A {
                    colon = j
                    break
                }
                j += 1
            }
            let userEnd = colon ?? at
            for x in i..<userEnd where !(SIPURICharset.user.allows(bytes[x]) || bytes[x] == 0x25) {
                throw fail("user character (unreserved, escaped or user-unreserved)", x)
            }
            uri.user = try unescape(bytes[i..<userEnd], build: build, fail: fail)
            if let colon {
                for x in (colon + 1)..<at where !(SIPURICharset.password.allows(bytes[x]) || bytes[x] == 0x25) {
                    throw fail("password character", x)
                }
                uri.password = try unescape(bytes[(colon + 1)..<at], build: build, fail: fail)
            }
            i = at + 1
        }
        // host
        let hostStart = i
        if i < end, bytes[i] == 0x5B {
            while i < end, bytes[i] != 0x5D {
                guard SIPByte.isHex(bytes[i]) || bytes[i] == 0x3A || bytes[i] == 0x2E || bytes[i] == 0x5B else {
                    throw fail("IPv6 address character inside '[...]'", i)
                }
                i += 1
            }
            guard i < end else { throw fail("']' closing the IPv6 reference", i) }
            i += 1
            guard i - hostStart > 2 else { throw fail("IPv6 address inside '[]'", hostStart) }
        } else {
            while i < end, SIPByte.isAlphanum(bytes[i]) || bytes[i] == 0x2D || bytes[i] == 0x2E || bytes[i] == 0x5F {
                i += 1
            }
            guard i > hostStart else { throw fail("host (hostname, IPv4 address or IPv6 reference)", i) }
        }
        if build { uri.host = SIPByte.string(bytes[hostStart..<i]) }
        if i < end, bytes[i] == 0x3A {
            i += 1
            let p = i
            while i < end, SIPByte.isDigit(bytes[i]) { i += 1 }
            guard i > p else { throw fail("port digits after ':'", i) }
            let value = try SIPByte.parseNumber(bytes[p..<i], max: 65535, what: "port", header: nil)
            uri.port = UInt16(value)
        }
        i = try parseParameters(bytes, from: i, into: &uri, build: build, fail: fail)
        if i < end, bytes[i] == 0x3F {
            i += 1
            while true {
                let n = i
                while i < end, SIPURICharset.header.allows(bytes[i]) || bytes[i] == 0x25 { i += 1 }
                guard i > n else { throw fail("header name after '?' or '&'", i) }
                guard i < end, bytes[i] == 0x3D else { throw fail("'=' after URI header name", i) }
                let name = try unescape(bytes[n..<i], build: build, fail: fail)
                i += 1
                let v = i
                while i < end, SIPURICharset.header.allows(bytes[i]) || bytes[i] == 0x25 { i += 1 }
                let value = try unescape(bytes[v..<i], build: build, fail: fail)
                if build { uri.headers.append(SIPParameter(name: name, value: value)) }
                if i < end, bytes[i] == 0x26 {
                    i += 1
                    continue
                }
                break
            }
        }
        guard i == end else { throw fail("';' parameter, '?' headers or end of URI", i) }
    }

    /// `*( ";" pname [ "=" pvalue ] )`; returns the index after the last parameter.
    private static func parseParameters(
        _ bytes: ArraySlice<UInt8>, from start: Int, into uri: inout SIPURI, build: Bool,
        fail: (String, Int) -> SIPParseError
    ) throws(SIPParseError) -> Int {
        var i = start
        let end = bytes.endIndex
        while i < end, bytes[i] == 0x3B {
            i += 1
            let n = i
            while i < end, SIPURICharset.param.allows(bytes[i]) || bytes[i] == 0x25 { i += 1 }
            guard i > n else { throw fail("uri-parameter name after ';'", i) }
            let name = try unescape(bytes[n..<i], build: build, fail: fail)
            var value: String? = nil
            if i < end, bytes[i] == 0x3D {
                i += 1
                let v = i
                while i < end, SIPURICharset.param.allows(bytes[i]) || bytes[i] == 0x25 { i += 1 }
                guard i > v else { throw fail("uri-parameter value after '='", i) }
                value = try unescape(bytes[v..<i], build: build, fail: fail)
            }
            if build { uri.parameters.append(SIPParameter(name: name, value: value)) }
        }
        return i
    }

    /// Resolves `escaped = "%" HEXDIG HEXDIG` once. With `build` false only checks the escapes.
    static func unescape(
        _ bytes: ArraySlice<UInt8>, build: Bool = true, fail: (String, Int) -> SIPParseError
    ) throws(SIPParseError) -> String {
        guard bytes.contains(0x25) else { return build ? SIPByte.string(bytes) : "" }
        if !build {
            var i = bytes.startIndex
            while i < bytes.endIndex {
                if bytes[i] == 0x25 {
                    guard i + 2 < bytes.endIndex, SIPByte.isHex(bytes[i + 1]), SIPByte.isHex(bytes[i + 2]) else {
                        throw fail("two hex digits after '%' (escaped)", i)
                    }
                    i += 3
                } else {
                    i += 1
                }
            }
            return ""
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b == 0x25 {
                guard i + 2 < bytes.endIndex,
                    SIPByte.isHex(bytes[i + 1]), SIPByte.isHex(bytes[i + 2])
                else { throw fail("two hex digits after '%' (escaped)", i) }
                out.append(SIPByte.hexValue(bytes[i + 1]) << 4 | SIPByte.hexValue(bytes[i + 2]))
                i += 3
            } else {
                out.append(b)
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
