public import SIPMessages

extension SIPResponse {
    /// A 400 Bad Request for bytes that did not parse as a request, built from whatever of Via,
    /// From, To, Call-ID and CSeq survives a lenient scan; nil when no response can be formed.
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
    /// The scan looks at most at `limits.maxMessageSize` bytes and `limits.maxHeaderCount`
    /// lines; fields are copied as received (folds replaced by a space). The top Via must parse,
    /// or there is nowhere to send the response.
    public static func badRequest(salvaging bytes: [UInt8], error: SIPParseError, toTag: String,
                                  limits: SIPParserLimits = .default) -> SIPResponse? {
        let end = min(bytes.count, limits.maxMessageSize)
        // Split the header section into lines (CRLF or bare LF), stopping at the empty line.
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var i = 0
        while i < end {
            if bytes[i] == 0x0A {
                var lineEnd = i
                if lineEnd > start, bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
                let line = bytes[start..<lineEnd]
                if line.isEmpty, !lines.isEmpty { break }
                if !line.isEmpty { lines.append(line) }
                guard lines.count <= limits.maxHeaderCount + 1 else { break }
                start = i + 1
            }
            i += 1
        }
        guard let startLine = lines.first else { return nil }
        guard !startLine.starts(with: Array("SIP/".utf8)) else { return nil }  // a response
        // Unfold (RFC 3261 §7.3.1) and keep the fields a response copies.
        var kept: [(SIPHeaderName, String)] = []
        for line in lines.dropFirst() {
            guard let first = line.first else { continue }
            if first == 0x20 || first == 0x09 {
                if let last = kept.popLast() {
                    kept.append((last.0, last.1 + " " + trimmed(line)))
                }
                continue
            }
            guard let colon = line.firstIndex(of: 0x3A) else { continue }
            let name = SIPHeaderName(trimmed(line[line.startIndex..<colon]))
            guard name == .via || name == .from || name == .to || name == .callID || name == .cseq else { continue }
            kept.append((name, trimmed(line[(colon + 1)...])))
        }
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
        return SIPResponse(statusCode: 400, reasonPhrase: badRequestReason(error), headers: headers)
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
