public import SIPMessages

extension SIPResponse {
    /// A 400 Bad Request for bytes that did not parse as a request (413 or 513 for one past the
    /// parser's limits, see ``refusalStatus(for:)``), built from whatever of Via, From, To, Call-ID
    /// and CSeq survives a lenient scan; nil when no response can be formed.
    ///
    /// RFC 3261 §16.3 and §18.2: a malformed request is answered with 400 when it "has enough
    /// of the message to form a response" (Via for the route, From, To, Call-ID and CSeq to be
    /// matched by the client transaction, §8.2.6.2); otherwise it is dropped. A malformed
    /// *response* is never answered (§18.1.2 discards it), so bytes whose start line begins
    /// with `SIP/` give nil.
    ///
    /// The reason phrase names the problem: `Bad Request (via in Via)` carries the
    /// ``SIPMessages/SIPParseError/Code`` and the header, when known (RFC 3261 §21.4.1: "The
    /// reason phrase SHOULD identify the syntax problem in more detail"). A To without a tag
    /// gets `toTag` (§8.2.6.2).
    ///
    /// The scan looks at most at `limits.maxMessageSize` bytes (every line in them) and copies
    /// at most `limits.maxViaCount` Vias; fields are copied as received (folds replaced by a
    /// space). The top Via must parse, or there is nowhere to send the response.
    public static func badRequest(
        salvaging bytes: [UInt8], error: SIPParseError, toTag: String,
        limits: SIPParserLimits = .default
    ) -> SIPResponse? {
        let end = min(bytes.count, limits.maxMessageSize)
        // One pass over the header section (CRLF or bare LF lines, up to the empty line) keeping
        // only the fields a response copies. Every line is looked at, however many there are: a
        // request refused for its header or Via count names its transaction after them. At most
        // `limits.maxViaCount` Via fields are kept, so the answer to 1,000 Vias stays small (its
        // top Via routes it, §18.2.2).
        var startLine: ArraySlice<UInt8>?
        var kept: [(SIPHeaderName, String)] = []
        var keptVias = 0
        var lastKept = false
        var start = 0
        var i = 0
        while i < end {
            guard bytes[i] == 0x0A else {
                i += 1
                continue
            }
            var lineEnd = i
            if lineEnd > start, bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            let line = bytes[start..<lineEnd]
            i += 1
            start = i
            guard let first = line.first else {
                if startLine != nil { break }
                continue
            }
            guard startLine != nil else {
                startLine = line
                continue
            }
            if first == 0x20 || first == 0x09 {
                // RFC 3261 §7.3.1: the continuation of the field before, when that one is kept.
                if lastKept, let last = kept.popLast() { kept.append((last.0, last.1 + " " + trimmed(line))) }
                continue
            }
            lastKept = false
            guard let colon = line.firstIndex(of: 0x3A) else { continue }
            let name = SIPHeaderName(trimmed(line[line.startIndex..<colon]))
            if name == .via {
                guard keptVias < limits.maxViaCount else { continue }
                keptVias += 1
            } else {
                guard name == .from || name == .to || name == .callID || name == .cseq,
                    !kept.contains(where: { $0.0 == name })
                else { continue }
            }
            kept.append((name, trimmed(line[(colon + 1)...])))
            lastKept = true
        }
        guard let startLine else { return nil }
        guard !startLine.starts(with: Array("SIP/".utf8)) else { return nil }  // a response
        let viaFields = kept.filter { $0.0 == .via }
        guard let topViaField = viaFields.first,
            let topVia = try? SIPHeaders([SIPHeaderField(name: .via, value: topViaField.1)]).via.first,
            !topVia.host.isEmpty
        else { return nil }
        guard let from = kept.first(where: { $0.0 == .from }), let to = kept.first(where: { $0.0 == .to }),
            let callID = kept.first(where: { $0.0 == .callID }), let cseq = kept.first(where: { $0.0 == .cseq }),
            !callID.1.isEmpty, !cseq.1.isEmpty
        else { return nil }
        var headers = SIPHeaders()
        for via in viaFields { headers.append(.via, via.1) }
        headers.append(.from, from.1)
        let hasTag = to.1.lowercased().contains(";tag=") || to.1.lowercased().contains("; tag=")
        headers.append(.to, hasTag ? to.1 : to.1 + ";tag=" + toTag)
        headers.append(.callID, callID.1)
        headers.append(.cseq, cseq.1)
        let status = refusalStatus(for: error)
        return SIPResponse(
            statusCode: status, reasonPhrase: status == 400 ? badRequestReason(error) : refusalReason(error, status),
            headers: headers)
    }

    /// The status for a request the parser refused (RFC 3261 §21): 413 Request Entity Too Large
    /// when its Content-Length announces a body that takes it past the size limit ("the request
    /// entity-body is larger than the server is willing or able to process", §21.4.11); 513
    /// Message Too Large when its header section is past a limit — size, line length, header or
    /// Via count ("the message length exceeded its capabilities", §21.5.14): such a request is
    /// not malformed; 400 Bad Request for malformed syntax (§21.4.1).
    public static func refusalStatus(for error: SIPParseError) -> Int {
        switch error.code {
        case .messageTooLarge: return error.header?.lowercased() == "content-length" ? 413 : 513
        case .lineTooLong, .tooManyHeaders, .tooManyVias: return 513
        default: return 400
        }
    }

    /// The §21 phrase with the limit named: `Message Too Large (too-many-vias)`.
    static func refusalReason(_ error: SIPParseError, _ status: Int) -> String {
        let detail = error.code.rawValue.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }
        return standardReasonPhrase(status) + " (" + String(String.UnicodeScalarView(detail)) + ")"
    }

    /// `Bad Request (<code>[ in <header>])`, with only characters a reason phrase allows.
    static func badRequestReason(_ error: SIPParseError) -> String {
        var detail = error.code.rawValue
        if let header = error.header { detail += " in " + header }
        let safe = detail.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F }
        return "Bad Request (" + String(String.UnicodeScalarView(safe)) + ")"
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> String {
        var s = bytes.startIndex
        var e = bytes.endIndex
        while s < e, bytes[s] == 0x20 || bytes[s] == 0x09 { s += 1 }
        while e > s, bytes[e - 1] == 0x20 || bytes[e - 1] == 0x09 { e -= 1 }
        return String(decoding: bytes[s..<e], as: UTF8.self)
    }
}
