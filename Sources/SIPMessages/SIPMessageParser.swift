/// The message parser: framing, start line, header section, body, and the message-level checks
/// every SIP element needs before it can use a message (RFC 3261 §7, §8.1.1, §18.3).
///
/// ```
/// generic-message  =  start-line *message-header CRLF [ message-body ]
/// start-line       =  Request-Line / Status-Line
/// message-header   =  header-name HCOLON header-value *(COMMA header-value) CRLF
/// ```
///
/// Bare LF line ends are accepted as well as CRLF; leading CRLFs (keep-alives) are skipped
/// (RFC 3261 §7.5). Header values are not copied: fields are slices of the input.
enum SIPMessageParser {
    static func parse(_ bytes: [UInt8], limits: SIPParserLimits) throws(SIPParseError) -> SIPMessage {
        do {
            return try parseUnlocated(bytes, limits: limits)
        } catch {
            throw error.located(in: bytes)
        }
    }

    /// Finds the end of the line starting at `start`: (content end without CR, start of next line).
    private static func lineEnd(
        _ bytes: [UInt8], from start: Int, limits: SIPParserLimits
    ) throws(SIPParseError) -> (Int, Int) {
        let n = bytes.count
        let maxLine = max(0, limits.maxLineLength)
        let scanLimit = maxLine >= n - start ? n : min(n, start + maxLine + 2)
        let i = SIPByte.firstIndex(of: 0x0A, in: bytes, from: start, to: scanLimit)
        guard i < scanLimit else {
            if scanLimit < n {
                throw SIPParseError(
                    .lineTooLong, expected: "a line of at most \(limits.maxLineLength) bytes", offset: start)
            }
            throw SIPParseError(
                .headersIncomplete, expected: "CRLF ending the line and an empty line ending the header section",
                offset: n)
        }
        let contentEnd = (i > start && bytes[i - 1] == 0x0D) ? i - 1 : i
        guard contentEnd - start <= maxLine else {
            throw SIPParseError(
                .lineTooLong, expected: "a line of at most \(limits.maxLineLength) bytes", offset: start)
        }
        return (contentEnd, i + 1)
    }

    private enum StartLine {
        case request(SIPMethod, SIPURI)
        case response(Int, String)
    }

    private static func parseUnlocated(_ bytes: [UInt8], limits: SIPParserLimits) throws(SIPParseError) -> SIPMessage {
        let n = bytes.count
        guard n <= limits.maxMessageSize else {
            throw SIPParseError(
                .messageTooLarge, expected: "at most \(limits.maxMessageSize) bytes", offset: limits.maxMessageSize)
        }
        var i = 0
        while i < n, bytes[i] == 0x0D || bytes[i] == 0x0A { i += 1 }
        guard i < n else { throw SIPParseError(.emptyMessage, expected: "a start line", offset: i) }

        // Start line.
        let (startEnd, afterStart) = try lineEnd(bytes, from: i, limits: limits)
        let startLine = try parseStartLine(bytes[i..<startEnd])
        i = afterStart

        // Header section.
        var fields: [SIPHeaderField] = []
        fields.reserveCapacity(20)
        var currentValueStart = 0
        var currentWireStart = 0
        while true {
            guard i < n else {
                throw SIPParseError(
                    .headersIncomplete, expected: "an empty line (CRLF) ending the header section", offset: n)
            }
            let (contentEnd, next) = try lineEnd(bytes, from: i, limits: limits)
            if contentEnd == i {
                i = next
                break
            }
            let first = bytes[i]
            if first == 0x20 || first == 0x09 {
                // Folded continuation (RFC 3261 §7.3.1).
                guard !fields.isEmpty else {
                    throw SIPParseError(
                        .invalidHeaderLine, expected: "a header field before a continuation line", offset: i)
                }
                let last = fields.count - 1
                fields[last] = SIPHeaderField(
                    name: fields[last].name, wire: bytes[currentWireStart..<contentEnd],
                    valueRange: SIPByte.trimmedRange(bytes, currentValueStart, contentEnd))
            } else {
                let colon = SIPByte.firstIndex(of: 0x3A, in: bytes, from: i, to: contentEnd)
                guard colon < contentEnd else {
                    throw SIPParseError(
                        .invalidHeaderLine, expected: "':' after the header name (header-name HCOLON value)", offset: i)
                }
                var nameEnd = colon
                while nameEnd > i, bytes[nameEnd - 1] == 0x20 || bytes[nameEnd - 1] == 0x09 { nameEnd -= 1 }
                guard nameEnd > i else {
                    throw SIPParseError(.invalidHeaderLine, expected: "a header name (token) before ':'", offset: i)
                }
                for k in i..<nameEnd where !SIPByte.isToken(bytes[k]) {
                    throw SIPParseError(.invalidHeaderLine, expected: "header name characters (token)", offset: k)
                }
                guard fields.count < limits.maxHeaderCount else {
                    throw SIPParseError(
                        .tooManyHeaders, expected: "at most \(limits.maxHeaderCount) header fields", offset: i)
                }
                currentValueStart = colon + 1
                currentWireStart = i
                fields.append(
                    SIPHeaderField(
                        name: SIPHeaderName.from(bytes[i..<nameEnd]), wire: bytes[i..<contentEnd],
                        valueRange: SIPByte.trimmedRange(bytes, colon + 1, contentEnd)))
            }
            i = next
        }
        let headerEnd = i
        let headers = SIPHeaders(fields)

        // Body framing (RFC 3261 §18.3, §20.14).
        var contentLengthField: SIPHeaderField? = nil
        for i in fields.indices where fields[i].name == .contentLength {
            let f = fields[i]
            guard contentLengthField == nil else {
                throw SIPParseError(
                    .duplicateContentLength, expected: "one Content-Length header (framing is ambiguous)",
                    offset: f.valueBytes.startIndex, header: "Content-Length")
            }
            contentLengthField = f
        }
        let available = n - headerEnd
        var bodyEnd = n
        if let f = contentLengthField {
            let v = f.valueBytes
            guard !v.isEmpty, v.allSatisfy(SIPByte.isDigit) else {
                throw SIPParseError(
                    .invalidContentLength, expected: "Content-Length as 1*DIGIT", offset: v.startIndex,
                    header: "Content-Length")
            }
            let length: UInt64
            do {
                length = try SIPByte.parseNumber(
                    v, max: UInt64(Int32.max), what: "Content-Length", header: "Content-Length")
            } catch {
                throw SIPParseError(
                    .invalidContentLength, expected: "Content-Length no larger than \(Int32.max)",
                    offset: v.startIndex, header: "Content-Length")
            }
            guard length <= UInt64(available) else {
                throw SIPParseError(
                    .bodyTruncated,
                    expected: "\(length) body bytes as Content-Length says, found \(available)",
                    offset: n, header: "Content-Length")
            }
            bodyEnd = headerEnd + Int(length)
        }
        let body = Array(bytes[headerEnd..<bodyEnd])

        try validate(headers, startLine: startLine, limits: limits)

        switch startLine {
        case .request(let method, let uri):
            return .request(SIPRequest(method: method, uri: uri, headers: headers, body: body))
        case .response(let code, let reason):
            return .response(SIPResponse(statusCode: code, reasonPhrase: reason, headers: headers, body: body))
        }
    }

    /// ```
    /// SIP-Version    =  "SIP" "/" 1*DIGIT "." 1*DIGIT
    /// ```
    /// Returns true for 2.0, false for another well-formed version, throws when malformed.
    private static func checkVersion(_ v: ArraySlice<UInt8>) throws(SIPParseError) -> Bool {
        if SIPByte.equalsIgnoringCase(v, "SIP/2.0") { return true }
        let fail = SIPParseError(
            .invalidStartLine, expected: "SIP-Version (\"SIP/\" 1*DIGIT \".\" 1*DIGIT)", offset: v.startIndex)
        guard v.count >= 7, SIPByte.equalsIgnoringCase(v.prefix(4), "SIP/") else { throw fail }
        let rest = v.dropFirst(4)
        guard let dot = rest.firstIndex(of: 0x2E) else { throw fail }
        let major = rest[rest.startIndex..<dot]
        let minor = rest[(dot + 1)...]
        guard !major.isEmpty, !minor.isEmpty, major.allSatisfy(SIPByte.isDigit), minor.allSatisfy(SIPByte.isDigit)
        else {
            throw fail
        }
        return major.elementsEqual("2".utf8) && minor.elementsEqual("0".utf8)
    }

    /// ```
    /// Request-Line  =  Method SP Request-URI SP SIP-Version CRLF
    /// Status-Line   =  SIP-Version SP Status-Code SP Reason-Phrase CRLF
    /// ```
    /// Strict about single SPs: RFC 4475 §3.1.2.8–§3.1.2.10 (lwsruri, lwsstart, trws) are rejected.
    private static func parseStartLine(_ line: ArraySlice<UInt8>) throws(SIPParseError) -> StartLine {
        if line.count >= 4, SIPByte.equalsIgnoringCase(line.prefix(4), "SIP/") {
            guard let sp = line.firstIndex(of: 0x20) else {
                throw SIPParseError(
                    .invalidStartLine, expected: "SP after the SIP-Version of the Status-Line", offset: line.endIndex)
            }
            guard try checkVersion(line[line.startIndex..<sp]) else {
                throw SIPParseError(.unsupportedVersion, expected: "SIP/2.0", offset: line.startIndex)
            }
            var j = sp + 1
            let codeStart = j
            while j < line.endIndex, line[j] != 0x20 { j += 1 }
            let code = line[codeStart..<j]
            guard code.count == 3, code.allSatisfy(SIPByte.isDigit) else {
                throw SIPParseError(
                    .invalidStatusCode, expected: "Status-Code of three digits (100 to 699)", offset: codeStart)
            }
            let value = code.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard value >= 100, value <= 699 else {
                throw SIPParseError(.invalidStatusCode, expected: "Status-Code from 100 to 699", offset: codeStart)
            }
            let reason = j < line.endIndex ? SIPByte.string(line[(j + 1)...]) : ""
            return .response(value, reason)
        }
        let shape = "Request-Line as Method SP Request-URI SP SIP-Version with single SPs (RFC 3261 §7.1)"
        guard let sp1 = line.firstIndex(of: 0x20) else {
            throw SIPParseError(.invalidStartLine, expected: shape, offset: line.endIndex)
        }
        let rest = line[(sp1 + 1)...]
        guard let sp2 = rest.firstIndex(of: 0x20) else {
            throw SIPParseError(.invalidStartLine, expected: shape, offset: line.endIndex)
        }
        let methodBytes = line[line.startIndex..<sp1]
        let uriBytes = line[(sp1 + 1)..<sp2]
        let versionBytes = line[(sp2 + 1)...]
        guard !methodBytes.isEmpty, !uriBytes.isEmpty, !versionBytes.isEmpty, !versionBytes.contains(0x20) else {
            throw SIPParseError(.invalidStartLine, expected: shape, offset: uriBytes.isEmpty ? sp1 + 1 : sp2 + 1)
        }
        for k in methodBytes.indices where !SIPByte.isToken(line[k]) {
            throw SIPParseError(.invalidStartLine, expected: "Method (token)", offset: k)
        }
        guard try checkVersion(versionBytes) else {
            throw SIPParseError(.unsupportedVersion, expected: "SIP/2.0", offset: versionBytes.startIndex)
        }
        let uri: SIPURI
        if let plain = SIPURI.parsePlain(uriBytes) {
            uri = plain
        } else {
            uri = try SIPURI.parse(uriBytes, header: "Request-URI", code: .invalidRequestURI)
        }
        guard uri.headers.isEmpty else {
            throw SIPParseError(
                .requestURIHeaders, expected: "a Request-URI without '?' headers (RFC 3261 §19.1.1)",
                offset: uriBytes.firstIndex(of: 0x3F) ?? uriBytes.startIndex, header: "Request-URI")
        }
        return .request(SIPMethod.known(methodBytes), uri)
    }

    /// Message-level checks: Via count and syntax, singleton and mandatory headers (RFC 3261
    /// §8.1.1, §20), From/To/Call-ID/CSeq/Contact syntax, CSeq method (RFC 3261 §8.1.1.5).
    private static func validate(_ headers: SIPHeaders, startLine: StartLine, limits: SIPParserLimits)
        throws(SIPParseError)
    {
        var viaCount = 0
        var counts = (from: 0, to: 0, callID: 0, cseq: 0, maxForwards: 0)
        let fields = headers.fields
        for i in fields.indices {
            switch fields[i].name {
            case .via:
                let f = fields[i]
                if isPlainVia(f.valueBytes) {
                    viaCount += 1
                    guard viaCount <= limits.maxViaCount else {
                        throw SIPParseError(
                            .tooManyVias, expected: "at most \(limits.maxViaCount) Via values",
                            offset: f.valueBytes.endIndex, header: "Via")
                    }
                    continue
                }
                var s = SIPScanner(f.valueBytes, header: "Via", code: .invalidVia, build: false)
                repeat {
                    _ = try SIPVia.parse(&s)
                    viaCount += 1
                    guard viaCount <= limits.maxViaCount else {
                        throw SIPParseError(
                            .tooManyVias, expected: "at most \(limits.maxViaCount) Via values",
                            offset: s.index, header: "Via")
                    }
                } while s.consumeSeparator(0x2C)
                try s.expectEnd("',' or ';' or end of the Via value")
            case .from:
                counts.from += 1
                try checkDuplicate(counts.from, fields[i])
            case .to:
                counts.to += 1
                try checkDuplicate(counts.to, fields[i])
            case .callID:
                counts.callID += 1
                try checkDuplicate(counts.callID, fields[i])
            case .cseq:
                counts.cseq += 1
                try checkDuplicate(counts.cseq, fields[i])
            case .maxForwards:
                counts.maxForwards += 1
                try checkDuplicate(counts.maxForwards, fields[i])
            default: break
            }
        }
        if viaCount == 0 { throw missing("Via") }
        if counts.from == 0 { throw missing("From") }
        if counts.to == 0 { throw missing("To") }
        if counts.callID == 0 { throw missing("Call-ID") }
        if counts.cseq == 0 { throw missing("CSeq") }
        for i in fields.indices {
            let name = fields[i].name
            guard name == .from || name == .to || name == .callID || name == .cseq || name == .contact else { continue }
            let f = fields[i]
            switch f.name {
            case .from, .to:
                if isPlainNameAddr(f.valueBytes) { continue }
                var s = SIPScanner(f.valueBytes, header: f.name.displayName, code: .invalidAddress, build: false)
                _ = try SIPAddress.parse(&s)
                try s.expectEnd("';' parameter or end of \(f.name.displayName)")
            case .callID:
                try checkCallID(f.valueBytes)
            case .cseq:
                let cseq = try SIPCSeq.parse(f.valueBytes, header: "CSeq")
                if case .request(let method, _) = startLine, cseq.method != method {
                    throw SIPParseError(
                        .cseqMethodMismatch,
                        expected:
                            "CSeq method \(method.rawValue) (the Request-Line method), found \(cseq.method.rawValue)",
                        offset: f.valueBytes.startIndex, header: "CSeq")
                }
            case .contact:
                if isPlainNameAddr(f.valueBytes) { continue }
                var s = SIPScanner(f.valueBytes, header: "Contact", code: .invalidAddress, build: false)
                _ = try SIPContact.parseList(&s)
            default: break
            }
        }
    }

    private static func checkDuplicate(_ count: Int, _ f: SIPHeaderField) throws(SIPParseError) {
        guard count <= 1 else {
            throw SIPParseError(
                .duplicateHeader, expected: "one \(f.name.displayName) header (it takes a single value)",
                offset: f.valueBytes.startIndex, header: f.name.displayName)
        }
    }

    private static func missing(_ name: String) -> SIPParseError {
        SIPParseError(.missingHeader, expected: "a \(name) header (mandatory, RFC 3261 §8.1.1)", header: name)
    }

    /// `callid = word [ "@" word ]`
    private static func checkCallID(_ v: ArraySlice<UInt8>) throws(SIPParseError) {
        // word "@" word, or word, with no second "@": the common shape, accepted in one pass.
        func isPlain(_ p: Span<UInt8>) -> Bool {
            var at = -1
            for k in p.indices {
                if p[k] == 0x40 {
                    guard at < 0, k > 0 else { return false }
                    at = k
                } else if !SIPByte.isWord(p[k]) {
                    return false
                }
            }
            return p.count > 0 && at != p.count - 1
        }
        if isPlain(v.span) { return }
        var seenAt = false
        var wordLength = 0
        for k in v.indices {
            let b = v[k]
            if b == 0x40, !seenAt, wordLength > 0 {
                seenAt = true
                wordLength = 0
            } else if SIPByte.isWord(b) {
                wordLength += 1
            } else {
                throw SIPParseError(
                    .invalidCallID, expected: "Call-ID as word [\"@\" word]", offset: k, header: "Call-ID")
            }
        }
        guard wordLength > 0 else {
            throw SIPParseError(
                .invalidCallID, expected: "Call-ID as word [\"@\" word]", offset: v.endIndex, header: "Call-ID")
        }
    }
}
